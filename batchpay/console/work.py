"""The console's calls into the library, one per thing a page does, each as the command
that does it on a terminal would make it:

    check      `batchpay validate SHEET --report NAME-checked.xlsx`
    review     `batchpay plan SHEET` (through `signing`)
    approve    `batchpay approve PLAN` with the approver's key (or a signature uploaded)
    history    `batchpay runs`, the batches, approvals, payee confirmations, the chain head
    payees     `batchpay payees`, `payees show` and `payees confirm`

Paying, and what the page shows of a payment, is `payment`'s. What comes back is plain data
for the templates; the rules stay in the library.

The two-person rule on the page, besides the library's by principal: only a batch's maker
reviews it (again), so the plan's maker of record is who chose what it pays; nobody who
made or changed what a plan pays (its actors: the reviewer, who released a repeat, who
confirmed a payee a row is paid on) approves it. Approve, Reject and Pay act on the plan
the page showed (`Shown`): a form whose plan is no longer the batch's is refused (409),
Approve asks for the plan's short code as `batchpay approve` does, and Pay for a second
yes to the totals it shows.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any, TypedDict

from batchpay import clock
from batchpay.connect import open_service
from batchpay.console import notices, signing
from batchpay.console.accounts import Accounts
from batchpay.console.batches import (
    Approval,
    Batch,
    Batches,
    BatchRefused,
    Message,
    NotYours,
    Rejection,
    Review,
    SavedCheck,
)
from batchpay.engine import (
    ReviewRun,
    RunLine,
    RunOptions,
    input_ref,
    journal_history,
    rates_of,
    record_payee_confirmation,
    review_run,
    summarize,
)
from batchpay.errors import BatchpayError
from batchpay.money import shown_amount
from batchpay.settings.model import JournalLocation, Settings
from batchpay.statuses import Status

if TYPE_CHECKING:
    from batchpay.engine import PayeeChange, PayeeConfirmation

log = logging.getLogger("batchpay.console")
SHOWN_MESSAGES = 1000  # the check shows this many errors (and warnings); the workbook all


class PageReporter:
    """The engine's reporter for a page: keeps what a terminal would print, asks nothing
    (the button pressed is the confirmation)."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.total = self.done_rows = 0

    def banner(self, text: str) -> None:
        self.lines.append(text)

    def note(self, text: str) -> None:
        self.lines.append(text)

    def start(self, label: str, total: int) -> None:
        self.total, self.done_rows = total, 0

    def advance(self, n: int = 1) -> None:
        self.done_rows += n

    def done(self) -> None:
        pass

    def confirm(self, text: str) -> bool:
        return False


@dataclass
class CheckView:
    rows: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    errors: list[Message] = field(default_factory=list)
    warnings: list[Message] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    payee_changes: list[PayeeChange] = field(default_factory=list)
    failure: str = ""  # the sheet could not be read at all
    hint: str = ""
    more_errors: int = 0  # beyond the SHOWN_MESSAGES on the page (all are in the workbook)
    more_warnings: int = 0

    @property
    def ok(self) -> bool:
        return not self.failure and not self.errors and self.rows > 0


def _message(row: int, text: str) -> Message:
    """A row's message as the page shows it: "column: text" apart, else the row's own."""
    column, _, message = text.partition(": ")
    return Message(row=row, column=column, text=message) if message else Message(
        row=row, column="", text=text)


def check(settings: Settings, batches: Batches, batch: Batch) -> CheckView:
    """Validate the batch's sheet as `batchpay validate --report` does."""
    from batchpay.engine import check_sheet_file

    view = CheckView()
    try:
        checked = check_sheet_file(batch.sheet, settings, lambda: open_service(settings),
                                   report=batch.checked, overwrite=True)
    except BatchpayError as exc:
        view.failure, view.hint = exc.message, exc.hint or ""
        batches.update(batch.id, stage="checked", check={"failure": exc.message,
                                                         "hint": view.hint})
        return view
    for r in checked.outcome.validation.rows:
        view.errors += [_message(r.row, text) for text in r.errors]
        view.warnings += [_message(r.row, text) for text in r.warnings]
    view.rows = len(checked.outcome.validation.rows)
    view.counts = checked.outcome.validation.counts
    view.notes = list(checked.bank_notes)
    view.payee_changes = checked.payee_changes
    view.more_errors = max(0, len(view.errors) - SHOWN_MESSAGES)
    view.more_warnings = max(0, len(view.warnings) - SHOWN_MESSAGES)
    view.errors, view.warnings = view.errors[:SHOWN_MESSAGES], view.warnings[:SHOWN_MESSAGES]
    batches.update(batch.id, stage="checked", check=SavedCheck(
        rows=view.rows, counts=view.counts, ok=view.ok, errors=view.errors,
        warnings=view.warnings, more_errors=view.more_errors, more_warnings=view.more_warnings,
        notes=view.notes, payee_changes=view.payee_changes))
    return view


def saved_check(batch: Batch) -> CheckView:
    """The check as it was made (the page shows it again without reading the sheet)."""
    data = batch.meta.get("check") or SavedCheck()
    return CheckView(rows=data.get("rows", 0), counts=data.get("counts", {}),
                     errors=data.get("errors", []), warnings=data.get("warnings", []),
                     notes=data.get("notes", []), payee_changes=data.get("payee_changes", []),
                     failure=data.get("failure", ""), hint=data.get("hint", ""),
                     more_errors=data.get("more_errors", 0),
                     more_warnings=data.get("more_warnings", 0))


def require_maker(batch: Batch, user: str, does: str) -> None:
    """Only the batch's maker chooses what it pays, so only they review it again, continue
    without its invalid rows or discard it (403 for anyone else)."""
    if user != batch.maker:
        raise NotYours(f"{batch.maker} made this batch: only they {does}.",
                       hint="Upload the sheet as a batch of your own instead.")


def skip_invalid(batches: Batches, batch: Batch, user: str) -> Batch:
    """Continue without the invalid rows (`--skip-invalid`): the review lists them, the plan
    leaves them out, and the payment never sends them. The batch's maker's choice only: it
    changes what the batch pays."""
    require_maker(batch, user, "choose to continue without its invalid rows")
    check = batch.meta.get("check") or SavedCheck()
    if batch.stage not in ("checked", "rejected") or check.get("failure"):
        raise BatchRefused(f"This batch is {batch.stage}: only a checked sheet continues "
                           "without its invalid rows.")
    if not check.get("counts", {}).get(Status.VALID):
        raise BatchRefused("No row of this sheet passed the check: there is nothing to pay. "
                           "Fix the rows and upload the sheet again.")
    return batches.update(batch.id, skip_invalid=True)


def reviewable(batch: Batch) -> bool:
    """Every row passed the check, or the maker chose to continue without the invalid ones."""
    check = batch.meta.get("check") or SavedCheck()
    return bool(check.get("ok") or (batch.meta.get("skip_invalid") and not check.get(
        "failure") and check.get("counts", {}).get(Status.VALID)))


# how long a Review press waits for the review: a small sheet's is shown when it is done;
# a large sheet's page shows at once how many rows are quoted, and refreshes itself
REVIEW_WAIT = (15.0, 1.0)
SMALL_SHEET = 200  # rows


def review(settings: Settings, batches: Batches, batch: Batch, accounts: Accounts, user: str,
           *, wait: float | None = None, release: frozenset[str] = frozenset()) -> Batch:
    """Start the dry run and plan of a checked batch (quotes, fees, wallets, payees, held
    rows) in a thread, and wait for it up to `wait` seconds: a large sheet's review goes on
    while its page says how far it got (stage `reviewing`). `release`: payout_refs the maker
    pays although they repeat a recent payment (`plan --allow-repeat`); the plan lists them.
    Only the batch's maker (`user`) reviews it: a review changes what the batch pays."""
    if user != batch.maker:
        raise NotYours(f"{batch.maker} made this batch: only they review it (again) and "
                       "release its held rows, so that the plan's maker is who chose what "
                       "it pays.", hint="Upload the sheet as a batch of your own instead.")
    if not reviewable(batch):
        raise BatchRefused("Only a sheet whose every row passed the check is reviewed: fix "
                           "the rows and upload it again, or press Continue without the "
                           "invalid rows.")
    started = batches.start_review(batch.id)
    thread = threading.Thread(target=_review, args=(settings, batches, started, accounts,
                                                    release),
                              name=f"review {batch.id}", daemon=True)
    thread.start()
    small = (batch.meta.get("check") or SavedCheck()).get("rows", 0) <= SMALL_SHEET
    thread.join(wait if wait is not None else REVIEW_WAIT[0 if small else 1])
    return batches.get(batch.id) or started


_REVIEWS: dict[str, PageReporter] = {}  # batch id → its review under way, for its page


def review_progress(batch_id: str) -> tuple[int, int] | None:
    """(rows quoted, rows to quote) of the batch's review under way, if any."""
    reporter = _REVIEWS.get(batch_id)
    return (reporter.done_rows, reporter.total) if reporter and reporter.total else None


def _review(settings: Settings, batches: Batches, batch: Batch, accounts: Accounts,
            release: frozenset[str]) -> None:
    options = RunOptions(sheet=batch.sheet, dry_run=True, out=batch.plan_files.workbook,
                         concurrency=settings.concurrency, max_rps=settings.max_rps,
                         allow_repeat=release, skip_invalid=bool(batch.meta.get("skip_invalid")))
    reporter = _REVIEWS[batch.id] = PageReporter()
    try:
        _reviewed(settings, batches, batch, accounts, options, reporter)
    finally:
        _REVIEWS.pop(batch.id, None)


def _reviewed(settings: Settings, batches: Batches, batch: Batch, accounts: Accounts,
              options: RunOptions, reporter: PageReporter) -> None:
    try:
        made = signing.make_review(settings, options, reporter,
                                   lambda: open_service(settings, listen=True), batch, accounts)
    except BatchpayError as exc:
        batches.update(batch.id, stage=batch.meta.get("before_review", "checked"),
                       review_error=exc.message, review_hint=exc.hint or "")
        return
    except Exception as exc:  # noqa: BLE001 - a thread's last line: said on the page
        log.exception("reviewing batch %s failed", batch.id)
        batches.update(batch.id, stage=batch.meta.get("before_review", "checked"),
                       review_error=f"Unexpected {type(exc).__name__}: {exc}", review_hint="")
        return
    done = batches.update(batch.id, stage="reviewed", approvals=[], rejected=None,
                          review_error="", review=made)
    notices.batch_waiting(settings, done)


@dataclass
class CurrencyLine:
    currency: str
    rows: int
    amount: Decimal
    fee: Decimal
    debit: Decimal
    target: str
    rates: str
    ceiling: str


class HeldRow(TypedDict):
    row: int
    error: str
    ref: str  # its payout_ref
    releasable: bool  # a repeat the maker may release (a held payee is confirmed instead)


class OtherRow(TypedDict):
    row: int
    status: str
    error: str


class ReviewView(Review):
    """The review as its page shows it: the saved review and the dry run's figures."""

    lines: list[CurrencyLine]
    quoted_at: str
    age_minutes: int
    sandbox: bool
    held: list[HeldRow]
    other: list[OtherRow]  # neither quoted nor held (QUOTE_FAILED, INVALID...)
    summary: list[str]
    actors: dict[str, list[str]]  # who changed what the plan pays, and how


def review_view(settings: Settings, batch: Batch) -> ReviewView | None:
    """The review's figures, read from the dry run in the journal."""
    data: Review | None = batch.meta.get("review")
    if not data:
        return None
    run = _review_run(settings, data["run_id"])
    rows, holds, columns = run.rows, run.holds, run.columns
    started, sandbox = run.started_at, run.sandbox
    summary = summarize(rows)
    lines = []
    for currency, totals in sorted(summary.currencies.items()):
        quoted = totals.by_status.get(Status.NOT_SENT)
        if quoted is None or not currency:
            continue
        lines.append(CurrencyLine(
            currency, quoted.rows, quoted.amount, quoted.fee, quoted.total_debit,
            ", ".join(shown_amount(v, c) for c, v in sorted(quoted.target.items())),
            "; ".join(rates_of(rows, currency)),
            shown_amount(data.get("currencies", {}).get(currency, {}).get("ceiling", ""),
                         currency)))
    age = int((clock.now() - clock.parse(started)).total_seconds() // 60)
    # a repeat of a recent payment, or one the service holds and the journal does not, is
    # the maker's to release (`plan --allow-repeat`); a held payee is confirmed instead
    held = [HeldRow(row=r.row, error=r.error, ref=(ref := input_ref(list(r.inputs), columns)),
                    releasable=holds.get(ref, "") in ("hold.repeat", "hold.service"))
            for r in rows if r.status == Status.HELD]
    failed = [OtherRow(row=r.row, status=r.status, error=r.error) for r in rows
              if r.status not in (Status.NOT_SENT, Status.HELD)]
    return ReviewView(lines=lines, quoted_at=started, age_minutes=age,
                      sandbox=sandbox, held=held, other=failed,
                      summary=signing.plan_summary(batch, settings.time_zone),
                      actors=signing.actions_of(batch),
                      **data)


_DRY_RUNS: dict[tuple[JournalLocation, str], ReviewRun] = {}  # the last few, in order read


def _review_run(settings: Settings, run_id: str) -> ReviewRun:
    """A review's dry run as its page shows it, read once while the console runs: a dry run
    never changes, and reading 2,000 rows at every view made each page of its rows slow."""
    key = (settings.journal, run_id)
    found = _DRY_RUNS.get(key)
    if found is None:
        found = _DRY_RUNS[key] = review_run(settings, run_id)
        while len(_DRY_RUNS) > 16:
            _DRY_RUNS.pop(next(iter(_DRY_RUNS)), None)
    return found


@dataclass(frozen=True)
class Shown:
    """What the page a form came from showed and asked: the plan's id, the short code the
    approver typed (Approve), the second yes to the totals (Pay)."""

    plan_id: str
    code: str = ""
    confirmed: bool = False


CHANGED = "The batch changed since you opened it: review the new plan."


def current_plan(batch: Batch) -> str:
    """The id of the plan the batch would be approved on and paid by now: its review's,
    and the plan file's bytes must still be that plan (else "": none)."""
    from batchpay.engine import plan_id

    review = batch.meta.get("review")
    try:
        on_disk = plan_id(batch.plan_files.plan.read_bytes())
    except OSError:
        return ""
    return on_disk if review is not None and on_disk == review["plan_id"] else ""


def require_shown(batch: Batch, shown: Shown) -> str:
    """The batch's plan id, when it is the plan the form's page showed (409 otherwise)."""
    import hmac

    current = current_plan(batch)
    if not current or not hmac.compare_digest(shown.plan_id, current):
        raise BatchRefused(CHANGED, hint="Open the batch again: read the new review and "
                           "its short code, then decide.")
    return current


def approve(settings: Settings, batches: Batches, batch: Batch, accounts: Accounts,
            user: str, shown: Shown) -> Batch:
    """The approver signs the batch's plan with their key: the plan the page showed, once
    they typed its short code; never one its maker or any of its actors approves."""
    from batchpay.engine import same_code

    _require_approvable(batch, user)
    expected = require_shown(batch, shown)
    if not same_code(shown.code, expected):
        raise BatchRefused("The short code you typed is not this plan's: read it again from "
                           "the review (four groups of four, e.g. 7KQ2-M9XD-4G1B-PW0E-RTA5).")
    fingerprint = signing.approve(batch, accounts, user, settings, expected)
    return _approved(batches, batch, user, fingerprint, "key held by the console")


def approve_with_signature(settings: Settings, batches: Batches, batch: Batch,
                           accounts: Accounts, user: str, armored: str) -> Batch:
    _require_approvable(batch, user)
    fingerprint = signing.add_signature(batch, armored, accounts, user, settings)
    return _approved(batches, batch, user, fingerprint, "signature uploaded")


def _require_approvable(batch: Batch, user: str) -> None:
    if batch.maker == user:
        raise NotYours(f"You made this batch: it is approved by someone else ({user} "
                           "cannot approve their own batch).")
    if batch.stage not in ("reviewed", "approved") or not batch.plan_files.plan.is_file():
        raise BatchRefused(f"This batch is {batch.stage}: only a reviewed batch is approved.")
    did = signing.actions_of(batch).get(user)
    if did:
        raise NotYours(f"You changed what this batch pays ({user} {', '.join(did)}): it is "
                       "approved by someone who neither made nor changed it.")
    if any(a["by"] == user for a in batch.meta.get("approvals", [])):
        raise BatchRefused("You approved this batch already.")


def _approved(batches: Batches, batch: Batch, user: str, fingerprint: str, how: str) -> Batch:
    approvals = [*batch.meta.get("approvals", []), Approval(
        by=user, key=fingerprint, how=how, at=clock.stamp())]
    return batches.update(batch.id, stage="approved", approvals=approvals)


def reject(batches: Batches, batch: Batch, user: str, reason: str, shown_plan: str) -> Batch:
    """Reject the plan the page showed (409 when the batch has another one now)."""
    if batch.stage not in ("reviewed", "approved"):
        raise BatchRefused(f"This batch is {batch.stage}: only a reviewed batch is rejected.")
    if not reason.strip():
        raise BatchRefused("Say why the batch is rejected: the maker reads it.")
    if batch.maker == user:
        raise NotYours("You made this batch: an approver rejects it.")
    require_shown(batch, Shown(shown_plan))
    return batches.update(batch.id, stage="rejected", rejected=Rejection(
        by=user, reason=reason.strip()[:500], at=clock.stamp()))


# --------------------------------------------------------------------------- reading


class History(TypedDict):
    """The history page: runs and batches newest first, payee confirmations, the chain."""

    runs: list[RunLine]
    confirmations: list[dict[str, Any]]  # the payee.confirmed events' data
    head: str  # the journal's chain head ("" with no journal yet)
    events: int
    intact: bool
    problem: str
    batches: list[Batch]


def history(settings: Settings, batches: Batches) -> History:
    """Runs, batches with their approvals, payee confirmations, the chain head."""
    found = journal_history(settings)
    return History(runs=found.runs, confirmations=found.confirmations, head=found.head,
                   events=found.events, intact=found.intact, problem=found.problem,
                   batches=batches.all())


def confirm_payee(settings: Settings, name: str, last4: str, user: str, method: str,
                  note: str) -> PayeeConfirmation:
    """`batchpay payees confirm`, recorded as by the signed-in user: the name a batch's plan
    records as its maker, so that with payee_confirmed_by_other a batch's maker confirming
    a payee alone leaves its rows held."""
    return record_payee_confirmation(settings, name, last4.strip(), method=method, note=note,
                                     by=user)
