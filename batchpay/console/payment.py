"""The batch's one payment, as `batchpay run` makes it, and what the page shows of it:

    pay        `batchpay run SHEET`, or `batchpay run --plan PLAN` once approved, in a
               thread of its own; the page follows it in the journal
    progress   the run's rows as the journal holds them now (`batchpay report` reads the same)
    refresh    `batchpay sync` for the run, and its results workbook written anew
    unpaid     the rows that were not paid, as a sheet to fix and upload again
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import NotRequired, TypedDict

from batchpay.config import Settings
from batchpay.connect import open_service
from batchpay.console import signing
from batchpay.console.accounts import Accounts
from batchpay.console.batches import Batch, Batches, BatchRefused, Payment
from batchpay.console.work import PageReporter
from batchpay.engine.gate import input_ref
from batchpay.engine.render import find_run, result_rows
from batchpay.engine.runner import RunOptions, load_input, run_batch
from batchpay.errors import BatchpayError
from batchpay.files import replaced_atomically
from batchpay.journal.store import Journal
from batchpay.statuses import IN_DOUBT, ON_ITS_WAY, SENT, Status, in_order

log = logging.getLogger("batchpay.console")
PROGRESS_ROWS = 500  # the progress table shows this many rows (those needing you first)


def pay(settings: Settings, batches: Batches, batch: Batch, accounts: Accounts,
        user: str) -> Batch:
    """Claim the batch's one payment and start it in a thread; the page follows the journal.
    An approved batch pays its plan (`run --plan`); otherwise, where approval is not
    required, the sheet the review priced."""
    if batch.stage == "rejected":
        raise BatchRefused("This batch was rejected: upload a corrected sheet.")
    if batch.stage not in ("reviewed", "approved", "paying", "paid"):
        raise BatchRefused("Review the batch before paying it.")
    if batch.stage == "reviewed" and settings.require_approval:
        raise BatchRefused("Approval is required: an approver approves this batch first.")
    review = batch.meta.get("review")
    if review and review.get("refused"):
        raise BatchRefused(f"The review found nothing to pay: {review['refused']}")
    release = signing.release_settings(settings, accounts)
    plan = signing.approved_plan(batch, release) if batch.stage == "approved" else None
    claimed = batches.claim_payment(batch.id, user)
    sha = plan.id if plan is not None else batch.meta["sha256"]
    with Journal(settings.journal) as journal:
        before = [r.id for r in journal.runs() if r.input_sha256 == sha]
    claimed = batches.update(batch.id, pay=Payment(sha256=sha, runs_before=before))
    options = RunOptions(
        sheet=batch.plan_files.plan if plan is not None else batch.sheet, out=batch.results,
        concurrency=settings.concurrency, max_rps=settings.max_rps, wait=settings.wait_seconds,
        yes=True, interactive=False, approved=plan, maker=batch.maker,
        **(plan.run_terms() if plan is not None else {
            "kind": "run", "allow_repeat": frozenset(batch.meta["review"].get("released", {}))}))
    thread = threading.Thread(target=_pay, args=(release, batches, claimed, options),
                              name=f"pay {batch.id}", daemon=True)
    thread.start()
    return claimed


def _pay(settings: Settings, batches: Batches, batch: Batch, options: RunOptions) -> None:
    reporter = PageReporter()
    try:
        outcome = run_batch(settings, options, reporter, lambda: load_input(options, settings),
                            lambda: open_service(settings, listen=True))
    except BatchpayError as exc:
        _paid(settings, batches, batch, error=exc.message, hint=exc.hint or "", notes=reporter.lines)
    except Exception as exc:  # noqa: BLE001 - a thread's last line: said on the page
        log.exception("paying batch %s failed", batch.id)
        _paid(settings, batches, batch, error=f"Unexpected {type(exc).__name__}: {exc}",
              hint="The journal holds every request sent: `batchpay sync` learns the rest.",
              notes=reporter.lines)
    else:
        batches.update(batch.id, stage="paid", run_id=outcome.run_id,
                       exit_code=outcome.exit_code, notes=reporter.lines + outcome.notes)


def _paid(settings: Settings, batches: Batches, batch: Batch, *, error: str, hint: str,
          notes: list[str]) -> None:
    """The run ended with an error: if it never started (a locked journal, a plan refused),
    nothing was sent and Pay is free again; else the batch is paid as far as it went."""
    current = batches.get(batch.id)
    if current is not None and run_of(settings, current) is None:
        batches.release_payment(batch.id, f"Nothing was paid: {error}", hint)
        return
    batches.update(batch.id, stage="paid", error=error, hint=hint, notes=notes)


def run_of(settings: Settings, batch: Batch) -> str | None:
    """The id of the run that pays the batch: recorded when it ended, else found in the
    journal while it goes (the newest paying run of the batch's bytes that was not there
    before; the review's dry run is not one)."""
    if batch.meta.get("run_id"):
        return str(batch.meta["run_id"])
    pay_info = batch.meta.get("pay")
    if not pay_info or not settings.journal_exists():
        return None
    with Journal(settings.journal) as journal:
        found = [r.id for r in journal.runs() if r.input_sha256 == pay_info["sha256"]
                 and r.kind in ("run", "rerun")  # a results workbook's plan pays as rerun
                 and r.id not in pay_info["runs_before"]]
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


def progress(settings: Settings, batch: Batch) -> Progress:
    """The payment as the journal holds it now: counts per status, rows, whether final."""
    run_id = run_of(settings, batch)
    state = Progress(stage=batch.stage, run_id=run_id, counts=[], rows=[], total=0,
                     finished=False, error=batch.meta.get("error", ""),
                     hint=batch.meta.get("hint", ""))
    if run_id is None:
        state["finished"] = batch.stage == "paid"
        return state
    with Journal(settings.journal) as journal:
        run = find_run(journal, run_id)
        rows = list(result_rows(journal, run))
    counts = Counter(r.status for r in rows)
    ordered = sorted(rows, key=lambda r: (r.status == Status.COMPLETED, r.row))
    state["counts"] = [(s, counts[s]) for s in in_order(counts)]
    state["rows"] = [ProgressRow(row=r.row, status=r.status, error=r.error,
                                 payout_ref=input_ref(list(r.inputs), run.input_columns),
                                 reference=r.reference_number)
                     for r in ordered[:PROGRESS_ROWS]]
    state["total"] = len(rows)
    state["finished"] = run.finished_at is not None and batch.stage == "paid"
    state["outcome"] = run.outcome or ""
    state["results"] = batch.results.is_file() and batch.stage == "paid"
    state["on_the_way"] = sum(n for s, n in counts.items() if s in ON_ITS_WAY | IN_DOUBT)
    state["synced_at"] = batch.meta.get("synced_at", "")
    state["unpaid"] = sum(n for s, n in counts.items() if s not in SENT)
    return state


def refresh(settings: Settings, batches: Batches, batch: Batch) -> Batch:
    """`batchpay sync` for the batch's run: rows still on their way are asked for again and
    the results workbook is written anew from the journal (the run's own is kept)."""
    from batchpay.engine.sync import sync_run

    run_id = run_of(settings, batch)
    if run_id is None or batch.stage != "paid":
        raise BatchRefused("Only a batch whose payment ended is refreshed.")
    sync_run(settings, run_id, batch.synced, lambda: open_service(settings))
    return batches.update(batch.id, synced_at=datetime.now(UTC).isoformat(timespec="seconds"))


def write_unpaid(settings: Settings, batch: Batch) -> Path | None:
    """The run's rows that were not paid and are not on their way (INVALID, NOT_SENT,
    QUOTE_FAILED, REJECTED, HELD) as a new sheet in the input's own columns, to fix and
    upload again; None when every row was sent. Rows in doubt (UNKNOWN) are never in it."""
    import xlsxwriter

    from batchpay.sheet.xlsx import WORKBOOK_OPTIONS, write_number, write_text

    run_id = run_of(settings, batch)
    if run_id is None:
        return None
    with Journal(settings.journal) as journal:
        run = find_run(journal, run_id)
        rows = [r for r in result_rows(journal, run) if r.status not in SENT]
    if not rows:
        return None
    path = batch.stem.with_name(batch.stem.name + "-unpaid.xlsx")
    with replaced_atomically(path) as partial:
        book = xlsxwriter.Workbook(str(partial), WORKBOOK_OPTIONS)
        sheet = book.add_worksheet("Payouts")
        for col, name in enumerate(run.input_columns):
            write_text(sheet, 0, col, name)
        for at, row in enumerate(rows, start=1):
            for col, value in enumerate(row.inputs):
                if isinstance(value, Decimal | int | float) and not isinstance(value, bool):
                    write_number(sheet, at, col, value)
                elif value is not None:
                    write_text(sheet, at, col, str(value))
        book.close()
    return path
