"""The console's calls into the library, one per thing a page does, each as the command
that does it on a terminal would make it:

    check      `batchpay validate SHEET --report NAME-checked.xlsx`
    review     `batchpay plan SHEET` (through `signing`)
    pay        `batchpay run SHEET`, or `batchpay run --plan PLAN` once approved, in a
               thread of its own; the page follows it in the journal
    progress   the run's rows as the journal holds them now (`batchpay report` reads the same)
    history    `batchpay runs`, the batches, approvals, payee confirmations, the chain head
    payees     `batchpay payees`, `payees show` and `payees confirm`

What comes back is plain data for the templates; the rules stay in the library.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

from batchpay.config import Settings
from batchpay.connect import open_service
from batchpay.console import signing
from batchpay.console.accounts import Accounts
from batchpay.console.batches import Batch, Batches, BatchRefused, NotYours
from batchpay.engine.gate import input_ref
from batchpay.engine.render import find_run, result_rows, run_list
from batchpay.engine.runner import RunOptions, load_input, run_batch
from batchpay.errors import BatchpayError
from batchpay.files import replaced_atomically
from batchpay.journal.store import Journal
from batchpay.sheet.outcomes import summarize
from batchpay.statuses import IN_DOUBT, ON_ITS_WAY, SENT, Status, in_order

log = logging.getLogger("batchpay.console")
PROGRESS_ROWS = 500  # the progress table shows this many rows (those needing you first)
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
class Message:
    row: int
    column: str
    text: str


@dataclass
class CheckView:
    rows: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    errors: list[Message] = field(default_factory=list)
    warnings: list[Message] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    payee_changes: list[dict[str, Any]] = field(default_factory=list)
    failure: str = ""  # the sheet could not be read at all
    hint: str = ""
    more_errors: int = 0  # beyond the SHOWN_MESSAGES on the page (all are in the workbook)
    more_warnings: int = 0

    @property
    def ok(self) -> bool:
        return not self.failure and not self.errors and self.rows > 0


def _split(text: str) -> Message:
    column, _, message = text.partition(": ")
    return Message(0, column, message) if message else Message(0, "", text)


def check(settings: Settings, batches: Batches, batch: Batch) -> CheckView:
    """Validate the batch's sheet as `batchpay validate --report` does."""
    from batchpay.engine.validate_sheet import check_sheet_file

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
        view.errors += [Message(r.row, m.column, m.text) for m in map(_split, r.errors)]
        view.warnings += [Message(r.row, m.column, m.text) for m in map(_split, r.warnings)]
    view.rows = len(checked.outcome.validation.rows)
    view.counts = checked.outcome.validation.counts
    view.notes = list(checked.bank_notes)
    view.payee_changes = checked.payee_changes
    view.more_errors = max(0, len(view.errors) - SHOWN_MESSAGES)
    view.more_warnings = max(0, len(view.warnings) - SHOWN_MESSAGES)
    view.errors, view.warnings = view.errors[:SHOWN_MESSAGES], view.warnings[:SHOWN_MESSAGES]
    batches.update(batch.id, stage="checked", check={
        "rows": view.rows, "counts": view.counts, "ok": view.ok,
        "errors": [vars(m) for m in view.errors], "warnings": [vars(m) for m in view.warnings],
        "more_errors": view.more_errors, "more_warnings": view.more_warnings,
        "notes": view.notes, "payee_changes": view.payee_changes})
    return view


def saved_check(batch: Batch) -> CheckView:
    """The check as it was made (the page shows it again without reading the sheet)."""
    data = batch.meta.get("check") or {}
    return CheckView(rows=data.get("rows", 0), counts=data.get("counts", {}),
                     errors=[Message(**m) for m in data.get("errors", [])],
                     warnings=[Message(**m) for m in data.get("warnings", [])],
                     notes=data.get("notes", []), payee_changes=data.get("payee_changes", []),
                     failure=data.get("failure", ""), hint=data.get("hint", ""),
                     more_errors=data.get("more_errors", 0),
                     more_warnings=data.get("more_warnings", 0))


def review(settings: Settings, batches: Batches, batch: Batch, accounts: Accounts, *,
           wait: float = 15.0, release: frozenset[str] = frozenset()) -> Batch:
    """Start the dry run and plan of a checked batch (quotes, fees, wallets, payees, held
    rows) in a thread, and wait for it up to `wait` seconds: a large sheet's review goes on
    while its page says so (stage `reviewing`). `release`: payout_refs the maker pays
    although they repeat a recent payment (`plan --allow-repeat`); the plan lists them."""
    if not (batch.meta.get("check") or {}).get("ok"):
        raise BatchRefused("Only a sheet whose every row passed the check is reviewed: fix "
                           "the rows and upload it again.")
    started = batches.start_review(batch.id)
    thread = threading.Thread(target=_review, args=(settings, batches, started, accounts,
                                                    release),
                              name=f"review {batch.id}", daemon=True)
    thread.start()
    thread.join(wait)
    return batches.get(batch.id) or started


_REVIEWS: dict[str, PageReporter] = {}  # batch id → its review under way, for its page


def review_progress(batch_id: str) -> tuple[int, int] | None:
    """(rows quoted, rows to quote) of the batch's review under way, if any."""
    reporter = _REVIEWS.get(batch_id)
    return (reporter.done_rows, reporter.total) if reporter and reporter.total else None


def _review(settings: Settings, batches: Batches, batch: Batch, accounts: Accounts,
            release: frozenset[str]) -> None:
    options = RunOptions(sheet=batch.sheet, dry_run=True, out=batch.plan_workbook,
                         concurrency=settings.concurrency, max_rps=settings.max_rps,
                         allow_repeat=release)
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
    batches.update(batch.id, stage="reviewed", approvals=[], rejected=None, review_error="",
                   review={
                       "run_id": made.run_id, "plan_id": made.plan_id,
                       "short_code": made.short_code, "refused": made.refused,
                       "notes": made.notes, "currencies": made.currencies,
                       "expires_at": made.expires_at, "payee_changes": made.payee_changes,
                       "released": made.released,
                       "at": datetime.now(UTC).isoformat(timespec="seconds")})


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


def review_view(settings: Settings, batch: Batch) -> dict[str, Any]:
    """The review's figures, read from the dry run in the journal."""
    data = batch.meta.get("review") or {}
    if not data:
        return {}
    with Journal(settings.journal) as journal:
        run = find_run(journal, data["run_id"])
        rows = list(result_rows(journal, run))
        holds, columns = journal.run_holds(run.id), list(run.input_columns)
        started, sandbox = run.started_at, bool(run.info.get("sandbox"))
    summary = summarize(rows)
    lines = []
    for currency, totals in sorted(summary.currencies.items()):
        quoted = totals.by_status.get(Status.NOT_SENT)
        if quoted is None or not currency:
            continue
        rates = sorted({r.rate for r in rows if r.source_currency == currency
                        and r.rate is not None})
        shown_rates = (f"{rates[0]}" if len(rates) == 1 else
                       f"{rates[0]} – {rates[-1]}" if rates else "")
        lines.append(CurrencyLine(
            currency, quoted.rows, quoted.amount, quoted.fee, quoted.total_debit,
            ", ".join(f"{v:,} {c}" for c, v in sorted(quoted.target.items())), shown_rates,
            _grouped(data.get("currencies", {}).get(currency, {}).get("ceiling", ""))))
    at = datetime.fromisoformat(started.replace("Z", "+00:00"))
    age = int((datetime.now(UTC) - at).total_seconds() // 60)
    # a repeat of a recent payment, or one the service holds and the journal does not, is
    # the maker's to release (`plan --allow-repeat`); a held payee is confirmed instead
    held = [{"row": r.row, "error": r.error, "ref": (ref := input_ref(list(r.inputs), columns)),
             "releasable": holds.get(ref, "") in ("hold.repeat", "hold.service")}
            for r in rows if r.status == Status.HELD]
    failed = [{"row": r.row, "status": r.status, "error": r.error} for r in rows
              if r.status not in (Status.NOT_SENT, Status.HELD)]
    return {"lines": lines, "quoted_at": started[:19].replace("T", " "), "age_minutes": age,
            "sandbox": sandbox,
            "held": held, "other": failed, "summary": signing.plan_summary(batch), **data}


def _grouped(text: str) -> str:
    return f"{Decimal(text):,}" if text else ""


def approve(settings: Settings, batches: Batches, batch: Batch, accounts: Accounts,
            user: str) -> Batch:
    """The approver signs the batch's plan with their key; never the batch's maker."""
    _require_approvable(batch, user)
    fingerprint = signing.approve(batch, accounts, user, settings)
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
    if batch.stage not in ("reviewed", "approved") or not batch.plan.is_file():
        raise BatchRefused(f"This batch is {batch.stage}: only a reviewed batch is approved.")
    if any(a["by"] == user for a in batch.meta.get("approvals", [])):
        raise BatchRefused("You approved this batch already.")


def _approved(batches: Batches, batch: Batch, user: str, fingerprint: str, how: str) -> Batch:
    approvals = [*batch.meta.get("approvals", []), {
        "by": user, "key": fingerprint, "how": how,
        "at": datetime.now(UTC).isoformat(timespec="seconds")}]
    return batches.update(batch.id, stage="approved", approvals=approvals)


def reject(batches: Batches, batch: Batch, user: str, reason: str) -> Batch:
    if batch.stage not in ("reviewed", "approved"):
        raise BatchRefused(f"This batch is {batch.stage}: only a reviewed batch is rejected.")
    if not reason.strip():
        raise BatchRefused("Say why the batch is rejected: the maker reads it.")
    if batch.maker == user:
        raise NotYours("You made this batch: an approver rejects it.")
    return batches.update(batch.id, stage="rejected", rejected={
        "by": user, "reason": reason.strip()[:500],
        "at": datetime.now(UTC).isoformat(timespec="seconds")})


# --------------------------------------------------------------------------- paying


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
    if (batch.meta.get("review") or {}).get("refused"):
        raise BatchRefused(f"The review found nothing to pay: {batch.meta['review']['refused']}")
    release = signing.release_settings(settings, accounts)
    plan = signing.approved_plan(batch, release) if batch.stage == "approved" else None
    claimed = batches.claim_payment(batch.id, user)
    sha = plan.id if plan is not None else batch.meta["sha256"]
    with Journal(settings.journal) as journal:
        before = [r.id for r in journal.runs() if r.input_sha256 == sha]
    claimed = batches.update(batch.id, pay={"sha256": sha, "runs_before": before})
    options = RunOptions(
        sheet=batch.plan if plan is not None else batch.sheet, out=batch.results,
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
    journal while it goes (the newest run of the batch's bytes that was not there before)."""
    if batch.meta.get("run_id"):
        return str(batch.meta["run_id"])
    pay_info = batch.meta.get("pay")
    if not pay_info or not settings.journal.is_file():
        return None
    with Journal(settings.journal) as journal:
        found = [r.id for r in journal.runs() if r.input_sha256 == pay_info["sha256"]
                 and r.kind == "run" and r.id not in pay_info["runs_before"]]
    return found[-1] if found else None


def progress(settings: Settings, batch: Batch) -> dict[str, Any]:
    """The payment as the journal holds it now: counts per status, rows, whether final."""
    run_id = run_of(settings, batch)
    state: dict[str, Any] = {"stage": batch.stage, "run_id": run_id, "counts": [],
                             "rows": [], "total": 0, "finished": False,
                             "error": batch.meta.get("error", ""),
                             "hint": batch.meta.get("hint", "")}
    if run_id is None:
        state["finished"] = batch.stage == "paid"
        return state
    with Journal(settings.journal) as journal:
        run = find_run(journal, run_id)
        rows = list(result_rows(journal, run))
    counts = Counter(r.status for r in rows)
    ordered = sorted(rows, key=lambda r: (r.status == Status.COMPLETED, r.row))
    state.update(
        counts=[[s, counts[s]] for s in in_order(counts)], total=len(rows),
        finished=run.finished_at is not None and batch.stage == "paid",
        outcome=run.outcome or "",
        rows=[{"row": r.row, "payout_ref": input_ref(list(r.inputs), run.input_columns),
               "status": r.status, "error": r.error, "reference": r.reference_number}
              for r in ordered[:PROGRESS_ROWS]],
        results=batch.results.is_file() and batch.stage == "paid",
        on_the_way=sum(n for s, n in counts.items() if s in ON_ITS_WAY | IN_DOUBT),
        synced_at=batch.meta.get("synced_at", ""),
        unpaid=sum(n for s, n in counts.items() if s not in SENT))
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


# --------------------------------------------------------------------------- reading


def history(settings: Settings, batches: Batches) -> dict[str, Any]:
    """Runs, batches with their approvals, payee confirmations, the chain head."""
    from batchpay.journal.integrity import check as check_journal

    found: dict[str, Any] = {"runs": [], "confirmations": [], "head": "", "events": 0,
                             "intact": True, "problem": "",
                             "batches": batches.all()}
    if not settings.journal.is_file():
        return found
    with Journal(settings.journal) as journal:
        found["runs"] = list(reversed(run_list(journal)))
        found["confirmations"] = list(reversed(journal.events_of("payee.confirmed")))
        chain = check_journal(journal)
    found.update(head=chain.head, events=chain.events, intact=chain.ok, problem=chain.problem)
    return found


def payees(settings: Settings) -> dict[str, Any]:
    """The register and the payees held now, each with its held details (accounts masked)
    and who confirmed those details already: with payee_confirmed_by_other, a batch its
    confirmer uploaded holds them until another user confirms them too."""
    from batchpay.controls.payees import CONFIRMED, Register, held_details, register_lines
    from batchpay.money import masked

    by_other = settings.payee_confirmed_by_other
    if not settings.journal.is_file():
        return {"lines": [], "held": [], "by_other": by_other}
    with Journal(settings.journal) as journal:
        lines = register_lines(Register.load(journal))
        confirmations = journal.events_of(CONFIRMED)
        names = sorted({c["payee"] for run in journal.runs()
                        for c in run.info.get("payee_changes", [])
                        if c.get("decision") == Status.HELD})
        held = []
        for name in names:
            for details in held_details(journal, name):
                if any(line["payee"] == name and line["confirmed"] for line in lines):
                    continue
                held.append({"payee": name, "account": masked(details["account_number"]),
                             "bank": details.get("bank_name", ""),
                             "name": details.get("recipient_name", ""),
                             "confirmed": [f"{c.get('by', '?')} {str(c.get('at', ''))[:16]}"
                                           .replace("T", " ") for c in confirmations
                                           if c.get("payee") == name
                                           and c.get("details") == details]})
    return {"lines": lines, "held": held, "by_other": by_other}


def confirm_payee(settings: Settings, name: str, last4: str, user: str, method: str,
                  note: str) -> dict[str, Any]:
    """`batchpay payees confirm`, recorded as by the signed-in user: the name a batch's plan
    records as its maker, so that with payee_confirmed_by_other a batch's maker confirming
    a payee alone leaves its rows held."""
    from batchpay.controls.payees import confirm

    with Journal(settings.journal) as journal:
        return confirm(journal, name, last4.strip(), method=method, note=note, by=user)
