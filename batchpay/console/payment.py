"""The batch's one payment, as `batchpay run` makes it, and what the page shows of it:

    pay        `batchpay run SHEET`, or `batchpay run --plan PLAN` once approved, in a
               thread of its own; the page follows it in the journal
    progress   the run's rows as the journal holds them now (`batchpay report` reads the same)
    refresh    `batchpay sync` for the run, and its results workbook written anew
    unpaid     the rows that were not paid, as a sheet to fix and upload again
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import tempfile
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import NotRequired, TypedDict

from batchpay import clock
from batchpay.connect import open_service
from batchpay.console import signing
from batchpay.console.accounts import Accounts
from batchpay.console.batches import Batch, Batches, BatchRefused, Payment, this_process
from batchpay.console.wording import for_page
from batchpay.console.work import CHANGED, PageReporter, Shown, require_shown
from batchpay.engine import (
    AdviceRecord,
    RunOptions,
    advise_after_run,
    finished_rows,
    journal_in_use,
    ledger_entries,
    load_input,
    run_advices,
    run_batch,
    run_known,
    run_row_states,
    run_rows,
    runs_of_input,
    unpaid_sheet,
)
from batchpay.errors import BatchpayError
from batchpay.mail import SmtpMailer
from batchpay.settings.model import DatabaseURL, Settings
from batchpay.statuses import (
    IN_DOUBT,
    ON_ITS_WAY,
    SENT,
    Status,
    exit_code,
    in_order,
)

log = logging.getLogger("batchpay.console")
PROGRESS_ROWS = 500  # the progress table shows this many rows (those needing you first)


def pay(settings: Settings, batches: Batches, batch: Batch, accounts: Accounts,
        user: str, shown: Shown) -> Batch:
    """Claim the batch's one payment and start it in a thread; the page follows the journal.
    An approved batch pays its plan (`run --plan`); otherwise, where approval is not
    required, the sheet the review priced. Only the plan the page showed is paid, once the
    payer said yes to its totals a second time (`shown`)."""
    if batch.stage == "rejected":
        raise BatchRefused("This batch was rejected: upload a corrected sheet.")
    if batch.stage == "discarded":
        raise BatchRefused("This batch was discarded: it is never paid.")
    if batch.stage not in ("reviewed", "approved", "paying", "paid"):
        raise BatchRefused("Review the batch before paying it.")
    if batch.stage == "reviewed" and settings.require_approval:
        raise BatchRefused("Approval is required: an approver approves this batch first.")
    review = batch.meta.get("review")
    if review and review.get("refused"):
        raise BatchRefused(f"The review found nothing to pay: {review['refused']}")
    expected = require_shown(batch, shown)
    if not shown.confirmed:
        raise BatchRefused("Say yes to the totals once more (the box beside Pay): nothing "
                           "was paid.")
    release, options = _run_terms(settings, batch, accounts, approved=batch.stage == "approved")
    if options.approved is not None and options.approved.id != expected:
        raise BatchRefused(CHANGED)  # replaced since the check above
    with _reserved(batch.id):
        batches.claim_payment(batch.id, user)
        claimed = batches.update(batch.id, pay=_payment(settings, batch, options))
        _start(release, batches, claimed, options)
    return claimed


def _payment(settings: Settings, batch: Batch, options: RunOptions) -> Payment:
    """What finds the payment's runs in the journal: the bytes it pays, and their runs so far."""
    sha = options.approved.id if options.approved is not None else batch.meta["sha256"]
    return Payment(sha256=sha, runs_before=runs_of_input(settings, sha))


def _run_terms(settings: Settings, batch: Batch, accounts: Accounts, *, approved: bool
               ) -> tuple[Settings, RunOptions]:
    """The settings and options of the batch's run: its plan's (`run --plan`, the plan's
    signatures checked now) once approved, else its sheet's as the review priced it."""
    release = signing.release_settings(settings, accounts)
    plan = signing.approved_plan(batch, release) if approved else None
    review = batch.meta.get("review")
    released = review["released"] if review else {}
    options = RunOptions(
        sheet=batch.plan_files.plan if plan is not None else batch.sheet, out=batch.results,
        concurrency=settings.concurrency, max_rps=settings.max_rps, wait=settings.wait_seconds,
        yes=True, interactive=False, approved=plan, maker=batch.maker,
        **(plan.run_terms() if plan is not None else {
            "kind": "run", "allow_repeat": frozenset(released),
            "skip_invalid": bool(batch.meta.get("skip_invalid"))}))
    return release, options


_PAYING: set[str] = set()  # the batches this process is paying now
_PAYING_LOCK = threading.Lock()
# held by the follower while it refreshes a batch (a sync holds the journal's lock): a
# payment starting meanwhile waits for it rather than being refused the journal
FOLLOWING = threading.Lock()


def paying_here() -> bool:
    """Whether this process pays a batch now (the follower then leaves the journal alone)."""
    return bool(_PAYING)


@contextlib.contextmanager
def _reserved(batch_id: str) -> Iterator[None]:
    """The batch marked as paid by this process from before its claim (a page read in
    between must not find it stopped) until its thread ends; let go if it never starts."""
    with _PAYING_LOCK:
        if batch_id in _PAYING:
            raise BatchRefused("This batch is being paid now: its page shows the payment.")
        _PAYING.add(batch_id)
    try:
        yield
    except BaseException:
        with _PAYING_LOCK:
            _PAYING.discard(batch_id)
        raise


def _start(settings: Settings, batches: Batches, batch: Batch, options: RunOptions) -> None:
    """The payment's thread, for a batch `_reserved` for it."""
    threading.Thread(target=_pay, args=(settings, batches, batch, options),
                     name=f"pay {batch.id}", daemon=True).start()


def _pay(settings: Settings, batches: Batches, batch: Batch, options: RunOptions) -> None:
    try:
        _paying(settings, batches, batch, options)
    finally:
        with _PAYING_LOCK:
            _PAYING.discard(batch.id)


def _paying(settings: Settings, batches: Batches, batch: Batch, options: RunOptions) -> None:
    reporter = PageReporter()
    before = run_of(settings, batch)  # a resumed payment's stopped run; None on a first Pay
    # the run's id, recorded before it starts: the page follows this run, not a search
    run_id = clock.new_run_id()
    paying = batch.meta.get("pay")
    if paying is not None:
        batches.update(batch.id, pay=Payment(sha256=paying["sha256"], run_id=run_id,
                                             runs_before=paying["runs_before"]))
    options = dataclasses.replace(options, run_id=run_id)
    with FOLLOWING:
        pass  # a refresh of the follower's under way ends first
    try:
        repaid = failed_refs_refreshed(settings, options)
        outcome = run_batch(settings, options, reporter, lambda: load_input(options, settings),
                            lambda: open_service(settings, listen=True))
    except BatchpayError as exc:
        _paid(settings, batches, batch, before, error=exc.message, hint=exc.hint or "",
              notes=reporter.lines)
    except Exception as exc:  # noqa: BLE001 - a thread's last line: said on the page
        log.exception("paying batch %s failed", batch.id)
        _paid(settings, batches, batch, before, error=f"Unexpected {type(exc).__name__}: {exc}",
              hint="Every request sent is in the journal: Resume payment or Refresh statuses "
              "on this page learns the rest.", notes=reporter.lines)
    else:
        batches.update(batch.id, stage="paid", run_id=outcome.run_id,
                       exit_code=outcome.exit_code,
                       notes=reporter.lines + repaid + outcome.notes)
        # the payees' advices once the batch is paid: lines on the page, never its outcome
        advised = advise_after_run(settings, outcome.run_id, SmtpMailer)
        if advised:
            batches.update(batch.id, notes=reporter.lines + repaid + outcome.notes + advised)


def _paid(settings: Settings, batches: Batches, batch: Batch, before: str | None, *,
          error: str, hint: str, notes: list[str]) -> None:
    """The run ended with an error: if it never started (a locked journal, a plan refused),
    nothing was sent and Pay is free again, or a resumed payment stays stopped (Resume
    payment again); else the batch is paid as far as it went."""
    current = batches.get(batch.id)
    if current is not None and run_of(settings, current) == before:
        if before is None:
            batches.release_payment(batch.id, f"Nothing was paid: {error}", hint)
        else:
            batches.update(batch.id, error=f"The payment did not resume: {error}", hint=hint)
        return
    batches.update(batch.id, stage="paid", error=error, hint=hint, notes=notes)


def failed_refs_refreshed(settings: Settings, options: RunOptions) -> list[str]:
    """Before a results workbook's plan pays a FAILED row again: that row's failed request
    asked for once more (`batchpay sync` of its run), so that its refund is in the journal
    before a new request takes the payout_ref's place; a refund reported later would be
    about an earlier request, and the month's statement would count its money as out."""
    from batchpay.engine import sync_run

    if options.kind != "rerun" or options.approved is None:
        return []
    refs = [str(r["payout_ref"]) for r in options.approved.document.get("rows", [])]
    failed = [e for e in ledger_entries(settings, refs).values() if e.status == Status.FAILED]
    notes = []
    for run_id in sorted({e.run_id for e in failed}):
        with tempfile.TemporaryDirectory(prefix="batchpay-refresh-") as folder:
            try:
                sync_run(settings, run_id, Path(folder) / "synced.xlsx",
                         lambda: open_service(settings))
            except BatchpayError as exc:
                notes.append(f"The failed payouts of run {run_id} could not be asked for "
                             f"again before paying them anew: {exc.message}")
    if failed:
        now = ledger_entries(settings, (e.payout_ref for e in failed))
        notes += [f"{ref}: its failed payout is {entry.status} at the service; paid anew."
                  for ref, entry in sorted(now.items())]
    return notes


# --------------------------------------------------------------------------- a stopped payment


def going_on(settings: Settings, batch: Batch) -> str:
    """Who pays a batch whose stage is paying: "here" (this process), "elsewhere" (another
    console process on this folder, or a command holding the journal), "" when nobody does
    (its process died: the payment stopped, or ended by a command)."""
    if batch.id in _PAYING:
        return "here"
    owner = batch.meta.get("pay_process")
    mine = this_process()
    if owner and owner["host"] == mine["host"] and owner["pid"] != mine["pid"] and (
            _alive(owner["pid"])):
        return "elsewhere"
    if owner and owner["host"] != mine["host"]:
        # another machine's process is not ours to judge, but with a journal in a database
        # its run lock is: held while a run goes on on any host, dropped if the host is lost
        if not isinstance(settings.journal, DatabaseURL):
            return "elsewhere"
        from batchpay.console.batches_postgres import claimed_lately

        if claimed_lately(batch):
            return "elsewhere"
    return "elsewhere" if journal_in_use(settings) else ""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def settle(settings: Settings, batches: Batches, batch: Batch) -> Batch:
    """A paying batch whose process died: if a later run of its plan or sheet ended (a
    Resume payment in another console, or `batchpay run --plan` on a terminal), the batch
    is paid by that run and its results workbook is written from the journal; else it
    stays paying and its page offers Resume payment."""
    if batch.stage != "paying" or going_on(settings, batch):
        return batch
    run_id = run_of(settings, batch)
    if run_id is None:
        return batch
    rows = finished_rows(settings, run_id, batch.results)
    if rows is None:
        return batch
    return batches.update(batch.id, stage="paid", run_id=run_id,
                          exit_code=exit_code(r.status for r in rows),
                          notes=[f"The payment was finished by run {run_id}."])


def stopped(settings: Settings, batches: Batches) -> list[Batch]:
    """The batches whose payment stopped before it ended and that nobody pays now."""
    found = []
    for batch in batches.all():
        if batch.stage == "paying":
            batch = settle(settings, batches, batch)
            if batch.stage == "paying" and not going_on(settings, batch):
                found.append(batch)
    return found


def resume(settings: Settings, batches: Batches, batch: Batch, accounts: Accounts,
           user: str, shown: Shown) -> Batch:
    """Resume payment: the stopped payment's run made again (`batchpay run --plan`, or the
    sheet's run): rows the journal shows sent are not sent again, rows in doubt are looked
    up first, and the rest are paid once. Like Pay, it acts on the plan its page showed, and
    only on the plan the payment was started with (409 otherwise)."""
    batch = settle(settings, batches, batch)
    if batch.stage != "paying" or going_on(settings, batch):
        raise BatchRefused("Only a payment that stopped is resumed: this one "
                           + ("goes on." if batch.stage == "paying" else f"is {batch.stage}."),
                           hint="Its page shows the payment.")
    expected = require_shown(batch, shown)
    approved = batch.meta.get("before_paying") == "approved"
    release, options = _run_terms(settings, batch, accounts, approved=approved)
    recorded = batch.meta.get("pay")
    started = recorded["sha256"] if recorded else ""
    if options.approved is not None and (options.approved.id != expected or (
            started and started != expected)):
        raise BatchRefused(CHANGED)  # not the plan this payment was started with
    with _reserved(batch.id):
        taken = batches.resume_payment(batch.id, batch.meta.get("pay_process"), user)
        if not taken.meta.get("pay"):  # the process died before it recorded its payment
            taken = batches.update(batch.id, pay=_payment(settings, taken, options))
        _start(release, batches, taken, options)
    return taken


def run_of(settings: Settings, batch: Batch) -> str | None:
    """The id of the run that pays the batch: recorded when it ended; while it goes, the id
    this console gave its run once the journal holds it, else the newest paying run of the
    batch's bytes that was not there before (the review's dry run is not one)."""
    if batch.meta.get("run_id"):
        return str(batch.meta["run_id"])
    pay_info = batch.meta.get("pay")
    if not pay_info:
        return None
    own = pay_info.get("run_id")
    if own and run_known(settings, own):
        return own
    # a run this console did not start (`run --plan` on a terminal finishing a stopped
    # payment), or its own refused before it started: the newest of its bytes' paying runs
    # that were not there before. A results workbook's plan pays as rerun; the review's dry
    # run is no payment
    found = [run_id for run_id in runs_of_input(settings, pay_info["sha256"])
             if run_id not in pay_info["runs_before"]]
    return found[-1] if found else None


class ProgressRow(TypedDict):
    row: int
    payout_ref: str
    status: str
    error: str
    reference: str


class Progress(TypedDict):
    """The payment as the page shows it, and as /progress and /events send it (JSON)."""

    stage: str
    run_id: str | None
    counts: list[tuple[str, int]]  # (status, rows), in the statuses' order
    rows: list[ProgressRow]  # the first PROGRESS_ROWS, those needing the operator first
    total: int
    finished: bool
    error: str
    hint: str
    # once the run is in the journal:
    outcome: NotRequired[str]
    results: NotRequired[bool]  # the results workbook is there to download
    on_the_way: NotRequired[int]  # accepted and not settled, or in doubt
    synced_at: NotRequired[str]
    unpaid: NotRequired[int]
    stopped: NotRequired[bool]  # nobody pays it now and it has not ended: Resume payment
    elsewhere: NotRequired[bool]  # another process pays it (another console, a command)
    sent: NotRequired[int]  # rows a request was sent for (or may have been)
    not_final: NotRequired[int]  # sent rows not yet COMPLETED or REFUNDED: Refresh statuses


def progress(settings: Settings, batch: Batch) -> Progress:
    """The payment as the journal holds it now: counts per status, rows, whether final."""
    run_id = run_of(settings, batch)
    state = Progress(stage=batch.stage, run_id=run_id, counts=[], rows=[], total=0,
                     finished=False, error=for_page(batch.meta.get("error", "")),
                     hint=for_page(batch.meta.get("hint", "")))
    if batch.stage == "paying":
        who = going_on(settings, batch)
        state["stopped"], state["elsewhere"] = not who, who == "elsewhere"
    if run_id is None:
        state["finished"] = batch.stage == "paid"
        return state
    run, rows = run_rows(settings, run_id)
    counts = Counter(r.status for r in rows)
    ordered = sorted(rows, key=lambda r: (r.status == Status.COMPLETED, r.row))
    state["counts"] = [(s, counts[s]) for s in in_order(counts)]
    state["rows"] = [ProgressRow(row=r.row, status=r.status, error=for_page(r.error),
                                 payout_ref=r.payout_ref, reference=r.reference_number)
                     for r in ordered[:PROGRESS_ROWS]]
    state["total"] = len(rows)
    state["finished"] = run.finished_at is not None and batch.stage == "paid"
    state["outcome"] = run.outcome or ""
    state["results"] = batch.results.is_file() and batch.stage == "paid"
    state["on_the_way"] = sum(n for s, n in counts.items() if s in ON_ITS_WAY | IN_DOUBT)
    state["synced_at"] = batch.meta.get("synced_at", "")
    state["unpaid"] = sum(n for s, n in counts.items() if s not in SENT)
    state["sent"] = sum(n for s, n in counts.items() if s in SENT)
    state["not_final"] = sum(n for s, n in counts.items() if s in SENT and s not in (
        Status.COMPLETED, Status.REFUNDED))
    return state


def not_final(settings: Settings, batch: Batch) -> int:
    """The batch's rows a request was sent for that are not COMPLETED or REFUNDED yet (on
    their way, in doubt, or FAILED with the refund to come): what Refresh statuses asks for."""
    run_id = run_of(settings, batch)
    if run_id is None:
        return 0
    return sum(r.status in SENT and r.status not in (Status.COMPLETED, Status.REFUNDED)
               for r in run_row_states(settings, run_id))


def advices_of(settings: Settings, batch: Batch) -> list[AdviceRecord]:
    """The remittance advices of the batch's run, for the maker to see which went out (read
    only: `batchpay advise RUN_ID` sends them)."""
    run_id = run_of(settings, batch)
    if run_id is None or batch.stage != "paid":
        return []
    return run_advices(settings, run_id)


def refresh(settings: Settings, batches: Batches, batch: Batch) -> Batch:
    """`batchpay sync` for the batch's run: rows still on their way are asked for again and
    the results workbook is written anew from the journal (the run's own is kept)."""
    from batchpay.engine import sync_run

    run_id = run_of(settings, batch)
    if run_id is None or batch.stage != "paid":
        raise BatchRefused("Only a batch whose payment ended is refreshed.")
    sync_run(settings, run_id, batch.synced, lambda: open_service(settings))
    return batches.update(batch.id, synced_at=clock.stamp())


def write_unpaid(settings: Settings, batch: Batch) -> Path | None:
    """The run's rows that were not paid and are not on their way (INVALID, NOT_SENT,
    QUOTE_FAILED, REJECTED, HELD) as a new sheet in the input's own columns, to fix and
    upload again; None when every row was sent. Rows in doubt (UNKNOWN) are never in it."""
    run_id = run_of(settings, batch)
    if run_id is None:
        return None
    return unpaid_sheet(settings, run_id, batch.stem.with_name(batch.stem.name + "-unpaid.xlsx"))
