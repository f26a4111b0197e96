"""A batch: one uploaded sheet and what the month did with it, in a folder of its own.

    console/batches/ID/
        meta.json               who uploaded it and when, its SHA-256, its stage, who
                                approved or rejected it, who paid it and the run's id
        NAME.xlsx               the sheet as uploaded (read by check, review and pay)
        NAME-checked.xlsx       the sheet with every row's messages ("your sheet + messages")
        NAME.plan.json/.xlsx    the review: the plan an approver signs, and its workbook
        NAME.plan.json.sig      the approvals
        pay.claim               made once, with O_EXCL, by the one Pay that goes ahead
        NAME-results.xlsx       the results workbook (and -results-synced.xlsx, refreshed)

The stages, in order: uploaded → checked → (reviewing →) reviewed → approved (or rejected)
→ paying → paid; any stage before paying may end discarded (kept, never paid).
The claim file is what makes Pay once: a second press, a second tab or a second server on
the same folder finds it there and is refused, whatever the page showed (with the journal
in PostgreSQL the batches, their files and the claim are in its database:
batches_postgres.TeamBatches, the claim a row). A payment whose
process died keeps its claim: Resume payment (`payment.resume`) goes on with it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import socket
import threading
from contextlib import AbstractContextManager
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any, NotRequired, TypedDict, Unpack

from batchpay.clock import new_batch_id, stamp
from batchpay.engine import PayeeChange, PlanFiles
from batchpay.errors import UsageError
from batchpay.files import private_dir, replaced_atomically


class Stage(StrEnum):
    """Where a batch is, in order: meta.json keeps the value, a page compares the member."""

    UPLOADED = "uploaded"
    CHECKED = "checked"
    REVIEWING = "reviewing"
    REVIEWED = "reviewed"
    APPROVED = "approved"
    REJECTED = "rejected"
    PAYING = "paying"
    PAID = "paid"
    DISCARDED = "discarded"


DISCARDABLE = (Stage.UPLOADED, Stage.CHECKED, Stage.REVIEWED, Stage.APPROVED, Stage.REJECTED)
SHEET_SUFFIXES = (".xlsx", ".xls", ".ods", ".csv")  # what `read_payouts` reads
_ID = re.compile(r"^[0-9]{8}-[0-9]{6}-[0-9a-f]{6}$")


class BatchRefused(UsageError):
    """What the page may not do to a batch now (shown on the page, nothing changed)."""

    status_code = 409


class NotYours(BatchRefused):
    """What this user may never do to this batch (their own batch's approval)."""

    status_code = 403


class Message(TypedDict):
    """One message of the check: its row, its column ("" for the row) and what it says."""

    row: int
    column: str
    text: str


class SavedCheck(TypedDict, total=False):
    """The check as it was made; `failure` and `hint` alone when the sheet could not be read."""

    rows: int
    counts: dict[str, int]  # rows per status
    ok: bool  # every row passed: the batch may be reviewed
    errors: list[Message]  # the first SHOWN_MESSAGES
    warnings: list[Message]
    more_errors: int  # beyond those shown (all are in the checked workbook)
    more_warnings: int
    notes: list[str]
    payee_changes: list[PayeeChange]  # the payee register's findings
    failure: str
    hint: str


class Review(TypedDict):
    """What the review shows of a plan: its id, short code, totals, expiry, and the dry run."""

    run_id: str
    plan_id: str
    short_code: str
    refused: str  # why no plan was written ("": one was)
    notes: list[str]
    short: NotRequired[list[str]]  # the notes that say a wallet cannot cover the batch
    currencies: dict[str, dict[str, Any]]  # the plan's totals and ceiling per currency
    expires_at: str
    payee_changes: list[PayeeChange]
    released: dict[str, list[str]]  # repeats the maker released: payout_ref → earlier refs
    at: str  # when the review was made (UTC)


class Approval(TypedDict):
    by: str  # the approver, a console user
    key: str  # the signing key's fingerprint
    how: str  # "key held by the console" or "signature uploaded"
    at: str


class Rejection(TypedDict):
    by: str
    reason: str
    at: str


class Payment(TypedDict):
    """What finds the batch's run in the journal while it goes."""

    sha256: str  # the bytes the run reads: the plan's id, or the sheet's SHA-256
    runs_before: list[str]  # the runs of those bytes before this payment
    run_id: NotRequired[str]  # the id this console gave its run, recorded before it starts


class PayProcess(TypedDict):
    """The process running a batch's payment: on its host, whether it is still alive."""

    host: str
    pid: int


def this_process() -> PayProcess:
    return PayProcess(host=socket.gethostname(), pid=os.getpid())


class BatchMeta(TypedDict, total=False):
    """meta.json: the batch's record, written anew at every change (`Batches.update` takes
    any of its keys). The upload writes id, file, uploaded_name, sha256, size, maker,
    uploaded_at, stage and approvals; the stages after it, the rest."""

    id: str
    file: str  # the sheet's name in the batch's folder
    uploaded_name: str
    sha256: str  # the uploaded bytes'
    size: int
    maker: str
    uploaded_at: str
    stage: Stage
    check: SavedCheck
    before_review: Stage  # the stage a review under way goes back to if it fails
    review: Review
    review_error: str
    review_hint: str
    approvals: list[Approval]
    rejected: Rejection | None
    paid_by: str | None
    paid_at: str | None
    before_paying: Stage  # the stage Pay goes back to if the run never started
    pay: Payment | None
    pay_process: PayProcess | None  # the process paying it (a dead one: the payment stopped)
    resumed: list[str]  # "who when" of each Resume payment
    skip_invalid: bool  # Continue without the invalid rows: the review and the run skip them
    discarded: Rejection | None  # who discarded the batch (reason: "")
    run_id: str
    exit_code: int
    synced_at: str  # the last refresh (`batchpay sync`)
    followed: bool  # every sent row is final: the follower leaves the batch alone
    notes: list[str]
    error: str  # why the payment failed, or never started
    hint: str


@dataclass
class Batch:
    folder: Path
    meta: BatchMeta

    @property
    def id(self) -> str:
        return str(self.meta["id"])

    @property
    def stage(self) -> Stage:
        return Stage(self.meta["stage"])

    @property
    def maker(self) -> str:
        return str(self.meta["maker"])

    @property
    def sheet(self) -> Path:
        return self.folder / str(self.meta["file"])

    @property
    def stem(self) -> Path:
        return self.folder / Path(self.meta["file"]).stem

    @property
    def checked(self) -> Path:
        return self.stem.with_name(self.stem.name + "-checked.xlsx")

    @property
    def plan_files(self) -> PlanFiles:
        """The review's plan and its workbook, named as `batchpay plan SHEET` names them."""
        return PlanFiles.named(self.sheet)

    @property
    def results(self) -> Path:
        return self.stem.with_name(self.stem.name + "-results.xlsx")

    @property
    def synced(self) -> Path:
        """The results workbook as the latest refresh (`batchpay sync`) wrote it."""
        return self.stem.with_name(self.stem.name + "-results-synced.xlsx")

    @property
    def latest_results(self) -> Path:
        return self.synced if self.synced.is_file() else self.results

    @property
    def claim(self) -> Path:
        return self.folder / "pay.claim"

    def download_name(self, path: Path) -> str:
        """One of the batch's files under the name the maker uploaded, Chinese and all:
        `十一月.xlsx`, `十一月-checked.xlsx`, `十一月-results.xlsx` (the folder keeps a name
        safe on any disk, `safe_name`)."""
        uploaded = Path(str(self.meta.get("uploaded_name", "")).replace("\\", "/")).name
        stem, kept = Path(uploaded).stem.strip() or self.stem.name, self.stem.name
        return stem + path.name[len(kept):] if path.name.startswith(kept) else path.name


def safe_name(filename: str) -> str:
    """The uploaded file's own name, reduced to what is safe on any disk; its type kept."""
    base = Path(filename.replace("\\", "/")).name
    stem, suffix = os.path.splitext(base)
    if suffix.lower() not in SHEET_SUFFIXES:
        raise BatchRefused(f"{base or 'The file'} is not a payout sheet: upload an .xlsx, "
                           ".xls, .ods or .csv file.")
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", stem).strip("-.")[:80] or "sheet"
    return stem + suffix.lower()


class Batches:
    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        # a file's read-change-write, one at a time (the team store's: a transaction)
        self._lock: AbstractContextManager[Any] = threading.Lock()

    def create(self, filename: str, data: bytes, maker: str) -> Batch:
        name = safe_name(filename)
        batch_id = new_batch_id()
        folder = private_dir(self.folder / batch_id)
        fd = os.open(folder / name, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        meta = BatchMeta(id=batch_id, file=name, uploaded_name=filename[:200],
                         sha256=hashlib.sha256(data).hexdigest(), size=len(data), maker=maker,
                         uploaded_at=stamp(), stage=Stage.UPLOADED,
                         approvals=[])
        batch = Batch(folder, meta)
        self.save(batch)
        return batch

    def save(self, batch: Batch) -> None:
        with replaced_atomically(batch.folder / "meta.json") as partial:
            fd = os.open(partial, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(batch.meta, handle, indent=2, sort_keys=True, ensure_ascii=False)

    def get(self, batch_id: str) -> Batch | None:
        if not _ID.match(batch_id):
            return None
        path = self.folder / batch_id / "meta.json"
        if not path.is_file():
            return None
        return Batch(path.parent, json.loads(path.read_text(encoding="utf-8")))

    def all(self) -> list[Batch]:
        """Every batch, newest first."""
        if not self.folder.is_dir():
            return []
        found = (self.get(p.name) for p in self.folder.iterdir() if p.is_dir())
        return sorted((b for b in found if b is not None), key=lambda b: b.id, reverse=True)

    def follows_here(self) -> bool:
        """Whether this console's follower refreshes the paid batches (one console per
        folder; the team's consoles on a database take turns: batches_postgres)."""
        return True

    def stop_following(self) -> None:
        """This console's follower stops: another console may follow."""

    def same_file(self, batch: Batch) -> list[Batch]:
        """Earlier batches of the same bytes: "this file was already uploaded (paid) by ..."."""
        return [b for b in self.all() if b.id != batch.id and b.meta["sha256"] == batch.meta[
            "sha256"]]

    def update(self, batch_id: str, **changes: Unpack[BatchMeta]) -> Batch:
        with self._lock:
            batch = self.get(batch_id)
            if batch is None:
                raise BatchRefused("No such batch.")
            batch.meta.update(changes)
            self.save(batch)
            return batch

    def start_review(self, batch_id: str) -> Batch:
        """The batch's one review under way (a second press waits for the first)."""
        with self._lock:
            batch = self.get(batch_id)
            if batch is None:
                raise BatchRefused("No such batch.")
            if batch.stage not in (Stage.CHECKED, Stage.REVIEWED, Stage.REJECTED):
                raise BatchRefused(f"This batch is {batch.stage}: its review cannot change now.")
            batch.meta.update({"stage": Stage.REVIEWING, "before_review": batch.stage,
                               "review_error": ""})
            self.save(batch)
            return batch

    def claim_payment(self, batch_id: str, user: str) -> Batch:
        """The one Pay of a batch: later ones (any tab, any server on this folder) refused."""
        with self._lock:
            batch = self.get(batch_id)
            if batch is None:
                raise BatchRefused("No such batch.")
            if batch.stage == Stage.DISCARDED:
                raise BatchRefused("This batch was discarded: it is never paid.")
            try:
                fd = os.open(batch.claim, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
            except FileExistsError:
                raise BatchRefused(
                    "This batch is already being paid or was paid: a batch is paid once.",
                    hint="Its progress and results are on its page.") from None
            now = stamp()
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(f"{user} {now}\n")
            batch.meta.update({"stage": Stage.PAYING, "paid_by": user, "paid_at": now,
                               "before_paying": batch.stage, "pay_process": this_process()})
            self.save(batch)
            return batch

    def release_payment(self, batch_id: str, error: str, hint: str) -> Batch:
        """Undo a claim whose run never started (nothing was sent): Pay can be pressed again."""
        with self._lock:
            batch = self.get(batch_id)
            if batch is None:
                raise BatchRefused("No such batch.")
            batch.meta.update({"stage": Stage(batch.meta.get("before_paying", Stage.REVIEWED)),
                               "paid_by": None, "paid_at": None, "pay": None, "error": error,
                               "hint": hint})
            self.save(batch)
            batch.claim.unlink(missing_ok=True)
            return batch

    def resume_payment(self, batch_id: str, seen: PayProcess | None, user: str) -> Batch:
        """Take over a stopped payment: only if the process the page found stopped is still
        the one recorded (a second press, or a second tab, finds this process instead)."""
        with self._lock:
            batch = self.get(batch_id)
            if batch is None:
                raise BatchRefused("No such batch.")
            if batch.stage != Stage.PAYING or batch.meta.get("pay_process") != seen:
                raise BatchRefused("This payment goes on already, or has ended: its page "
                                   "shows it.")
            now = stamp()
            batch.meta.update({"pay_process": this_process(), "error": "", "hint": "",
                               "resumed": [*batch.meta.get("resumed", []), f"{user} {now}"]})
            self.save(batch)
            return batch

    def discard(self, batch_id: str, user: str) -> Batch:
        """Set a batch aside for good before it is paid: it stays in History, never paid."""
        with self._lock:
            batch = self.get(batch_id)
            if batch is None:
                raise BatchRefused("No such batch.")
            set_aside(batch, user, claimed=batch.claim.exists())
            self.save(batch)
            return batch


def set_aside(batch: Batch, user: str, *, claimed: bool) -> None:
    """Mark `batch` discarded by `user` (refused once it is claimed for payment or past the
    stages a batch is discarded at); the caller saves it, under its store's lock."""
    if batch.stage not in DISCARDABLE or claimed:
        raise BatchRefused(f"This batch is {batch.stage}: only a batch not yet paid "
                           "is discarded.")
    batch.meta.update({"stage": Stage.DISCARDED,
                       "discarded": Rejection(by=user, reason="", at=stamp())})
