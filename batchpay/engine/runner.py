"""`run`, `rerun` and `--dry-run`: validate, plan against the journal, pay, track, report.

    read + validate ─► plan (journal) ─► confirm (real money) ─► resolve rows in doubt
        ─► send new rows (quote, intent, payout, answer) ─► resolve new doubts
        ─► follow statuses (webhooks and list polling) ─► results workbook from the journal

A row is sent only if no payout request for its payout_ref was ever accepted or may have
been (README, "How exactly-once works").
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import platform
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

from batchpay import __version__
from batchpay.clock import new_run_id, stamp
from batchpay.controls.repeats import control_settings
from batchpay.engine.budget import estimate, shared_budget
from batchpay.engine.gate import RunDecisions, decide_rows
from batchpay.engine.notices import queue_payment_ended
from batchpay.engine.paying import Paying, Reporter
from batchpay.engine.real_money import (
    Confirmation,
    WalletNeed,
    balances_of,
    confirm_real_payouts,
    estimate_needs,
    wallet_needs,
    wallet_record,
)
from batchpay.engine.render import find_run, render_run, result_rows, sent_by_run
from batchpay.engine.run_info import RunInfo, ServiceListCheck
from batchpay.engine.sending import AuthStop, Sender
from batchpay.engine.service_ledger import ServiceLedger, read_service_ledger
from batchpay.errors import BatchpayError, Interrupted, ResultsNotWritten
from batchpay.files import fingerprint
from batchpay.journal.integrity import require_intact
from batchpay.journal.records import RunRecord, operator
from batchpay.journal.store import Journal
from batchpay.provider.client import PayoutClient, RetryBudget
from batchpay.provider.errors import AuthError, ProviderError
from batchpay.provider.pacing import Pacer
from batchpay.service import Opener, Service
from batchpay.settings.model import Settings
from batchpay.sheet.limits import SheetLimits
from batchpay.sheet.outcomes import ResultsSummary, json_row, summarize
from batchpay.sheet.read import Sheet
from batchpay.sheet.read_options import DEFAULT_READ, ReadOptions
from batchpay.sheet.validate import Validation, read_payouts, validate_sheet
from batchpay.statuses import (
    EXIT_FAILED,
    EXIT_ROWS,
    ON_ITS_WAY,
    SENT,
    HoldKind,
    Status,
    needs_nothing,
)
from batchpay.statuses import exit_code as rows_exit_code

if TYPE_CHECKING:
    from batchpay.controls.payees import PayeeChange
    from batchpay.controls.plan_file import CheckedPlan


@dataclass
class RunOptions:
    sheet: Path
    kind: str = "run"  # run | rerun
    dry_run: bool = False
    read: ReadOptions = DEFAULT_READ  # how the sheet is read (its limits: the settings')
    out: Path | None = None
    skip_invalid: bool = False
    concurrency: int = 4
    max_rps: float = 0.0
    wait: float = 60.0
    yes: bool = False
    interactive: bool = False  # a terminal is there to answer the confirmation
    allow_partial: bool = False  # a real run may start with a wallet too short for every row
    allow_repeat: frozenset[str] = frozenset()  # payout_refs released from the repeat hold
    # an approved plan (batchpay.controls.plan_file.CheckedPlan): its rows are the input, its
    # ceilings bound the debit, its id, maker and approvers go into the run's record
    approved: CheckedPlan | None = None
    # who makes the batch, when not the OS user (a console's signed-in user): their own
    # payee confirmations do not count with payee_confirmed_by_other
    maker: str = ""
    run_id: str = ""  # the run's id, from a caller that must know it before it starts (console)

    @property
    def record_kind(self) -> str:
        return "dry-run" if self.dry_run else self.kind


@dataclass
class RunOutcome:
    run_id: str
    exit_code: int
    results_path: Path
    summary: ResultsSummary
    sandbox: bool
    rows: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    dry_run: bool = False
    payee_changes: list[PayeeChange] = field(default_factory=list)
    # rows released from the repeat hold (--allow-repeat): payout_ref -> the earlier refs
    released: dict[str, list[str]] = field(default_factory=dict)
    wallet_check: list[WalletNeed] = field(default_factory=list)  # a dry run's debits

    @property
    def shortfall(self) -> dict[str, Decimal]:
        """A dry run's currencies the wallet cannot cover, with what it lacks: the exit code
        and whether a plan is written read this, never the notes' words."""
        return {w.currency: w.short for w in self.wallet_check if w.short}

    @property
    def fine_statuses(self) -> frozenset[str]:
        """Statuses that need nothing from the operator (a dry run sends nothing by design)."""
        return needs_nothing(dry_run=self.dry_run)

    @property
    def counts(self) -> dict[str, int]:
        return dict(self.summary.counts)


def default_results_path(sheet: Path, run_id: str, *, dry_run: bool = False) -> Path:
    """`<sheet>-results-<run id>.xlsx` beside the sheet; a dry run's is `-dry-run-`: it
    holds no results, and must not be taken for them."""
    stem = sheet.stem
    for marker in ("-results-", "-dry-run-"):
        if marker in stem:
            stem = stem.split(marker)[0]
    return sheet.with_name(f"{stem}-{'dry-run' if dry_run else 'results'}-{run_id}.xlsx")


def load_input(options: RunOptions, settings: Settings) -> tuple[Sheet, Validation]:
    """The rows of a run: an approved plan's (no file is read again), or its sheet's."""
    if options.approved is not None:
        sheet = options.approved.sheet()
        return sheet, validate_sheet(sheet, source_currency=options.read.source_currency)
    return read_payouts(options.sheet, replace(options.read, limits=SheetLimits.of(settings)),
                        results=options.kind == "rerun")


def run_batch(settings: Settings, options: RunOptions, reporter: Reporter,
              read: Callable[[], tuple[Sheet, Validation]], connect: Opener) -> RunOutcome:
    """Run one batch end to end. `read` returns (sheet, validation) for the input; `connect`
    opens the service (the caller's: the engine builds none), once the sheet is read and
    the journal locked and checked. With `require_approval`, only an approved plan is paid."""
    from batchpay.controls.approval import require_release  # loads signatures' code on use

    require_release(options.approved, settings, kind=options.kind, dry_run=options.dry_run)
    sheet, validation = read()
    journal = Journal(settings.journal)
    batch: _Batch | None = None
    try:
        journal.lock()
        require_intact(journal)  # the ledger it plans from is the one the chain vouches for
        with connect() as service, frozen_heap():
            batch = _Batch(settings, options, reporter, journal, service, sheet, validation)
            outcome = asyncio.run(batch.execute())
        if not journal.still_at_path():
            outcome.exit_code = max(outcome.exit_code, EXIT_ROWS)
            outcome.notes.append(
                f"The journal file {settings.journal} was deleted, moved or replaced during "
                "this run: what the run recorded is in the file it opened, not in the one "
                "there now. Keep this results workbook; the next run checks the service's "
                "own payout list and holds what was paid.")
        return outcome
    except KeyboardInterrupt:
        if batch is None:
            raise
        raise batch.interrupted() from None
    finally:
        journal.close()


@contextlib.contextmanager
def frozen_heap() -> Iterator[None]:
    """What exists before paying (the libraries, the sheet and its validation) lives to the
    end: out of the garbage collector's sight while paying. A full collection walks every
    object and stops every request in flight meanwhile (80 ms with an 800-row sheet read,
    350 ms with 100,000 rows); frozen, it walks only what paying made. bench_engine.py at
    800 rows cannot show it: no full collection falls in so short a payment. At 4,000 rows
    (16 workers, 50 ms latency) two or three do: 140-170 ms each unfrozen, 30 ms frozen."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


class _Batch:
    def __init__(self, settings: Settings, options: RunOptions, reporter: Reporter,
                 journal: Journal, service: Service, sheet: Sheet,
                 validation: Validation) -> None:
        self.settings, self.options, self.reporter = settings, options, reporter
        self.journal, self.service = journal, service
        self.sheet, self.validation = sheet, validation
        self.run_id = options.run_id or new_run_id()
        self.notes: list[str] = []
        self.stopped: AuthError | None = None
        self.sandbox = service.embedded
        self.balances: dict[str, Decimal] = {}
        self.wallets: dict[str, dict[str, str]] = {}  # wallet_before/after per currency
        self.service_check: ServiceListCheck | None = None
        self.wallet_needs: list[WalletNeed] = []  # a dry run's, once quoted

    def _client(self) -> PayoutClient:
        pacer = Pacer(max_rps=self.options.max_rps,
                      windows=None if self.service.embedded else self.settings.rate_limit,
                      shared=shared_budget(self.settings, self.service.api_key,
                                           embedded=self.service.embedded))
        return PayoutClient(
            self.service.base_url, self.service.api_key, paths=self.settings.paths,
            headers=self.settings.headers, concurrency=self.options.concurrency,
            connect_timeout=self.settings.connect_timeout, read_timeout=self.settings.read_timeout,
            pacer=pacer, retry=RetryBudget(self.settings.retry_attempts, self.settings.retry_seconds))

    async def execute(self) -> RunOutcome:
        if self.service.embedded:
            self.reporter.banner("SANDBOX: embedded sandbox, no real money moves")
        async with self._client() as client:
            if not self.service.embedded:
                # a harmless read first: the service answers (a mistyped URL must not claim
                # the journal) and says whether it is the sandbox
                self.balances = balances_of(await client.wallets())
                self.sandbox = bool(client.is_sandbox)
                self.reporter.banner(
                    f"SANDBOX at {self.service.base_url}: no real money moves" if self.sandbox
                    else f"LIVE: {self.service.base_url}, real money")
            for line in self.settings.banner_lines():
                self.reporter.note(line)
            self.journal.bind_service(self.service.identity)
            # before the plan: decide_rows copies each row's warnings into the run rows
            await self._check_bank_names(client)
            plan = self._plan()
            if plan.send and self.settings.service_check_days:
                # the journal's plan, checked against the service's own list of payouts
                plan = self._plan(await self._read_service_ledger(client))
            run = RunRecord(
                id=self.run_id, kind=self.options.record_kind, started_at=stamp(),
                sheet=self.sheet.path.name, input_sha256=self.sheet.sha256,
                input_columns=list(self.sheet.columns),
                info=self._info(plan).record())
            sender = Sender(self.journal, client, self.run_id,
                            ceilings=o.ceilings(self.journal) if (o := self.options.approved) else None)
            try:
                if plan.send and not self.options.dry_run and (
                        eta := await asyncio.to_thread(estimate, client.pacer, len(plan.send))):
                    self.reporter.note(eta)
                if plan.send or plan.resolve:
                    await self._confirm(sender, plan)
                with self.journal.transaction():  # the run and its holds, together
                    self.journal.start_run(run, plan.rows)
                    self.journal.record_decisions(self.run_id, [
                        d.event for d in plan.decisions
                        if not (self.options.dry_run and d.hold == HoldKind.RELEASED)])
                self.notes += plan.hold_notes(self.options.allow_repeat)
                if not plan.send and not plan.resolve and not plan.invalid:
                    self.notes.append("Nothing to send: every row is already in the journal "
                                      "(paid, in progress or final).")
                if plan.invalid and not self.options.skip_invalid:
                    self.notes.append(f"{plan.invalid} invalid row(s): nothing was sent. Fix them, "
                                      "or run with --skip-invalid to pay the valid rows.")
                if self.options.dry_run:
                    await self._dry_run(client, sender, plan)
                else:
                    if plan.send and not self.balances:  # the embedded sandbox: for the Run sheet
                        with contextlib.suppress(ProviderError):
                            self.balances = balances_of(await client.wallets())
                    await self._paying().pay(client, sender, plan, self.options.wait)
                    self.wallets = await wallet_record(
                        client, {job.row.source_currency for job in plan.send}, self.balances)
            except AuthStop as stop:
                self.stopped = stop.error
            except AuthError as exc:
                self.stopped = exc
        if self.journal.run(self.run_id) is None:  # refused before the run started
            assert self.stopped is not None
            raise self.stopped
        return self._finish(plan)

    def _paying(self) -> Paying:
        return Paying(self.journal, self.reporter, self.options.concurrency,
                      self.settings.sync_max_pages)

    def _plan(self, service: ServiceLedger | None = None) -> RunDecisions:
        return decide_rows(self.journal, list(self.validation.rows), list(self.sheet.columns),
                           kind=self.options.kind, settings=self.settings,
                           skip_invalid=self.options.skip_invalid,
                           allow_repeat=self.options.allow_repeat, service=service,
                           maker=o.document["maker"]["user"] if (o := self.options.approved)
                           else self.options.maker or operator())

    async def _read_service_ledger(self, client: PayoutClient) -> ServiceLedger:
        """The service's payouts of the service check's window (engine.service_ledger), with
        progress; a longer repeat window widens it, so that its account and amount match
        sees as far back as the journal's own repeat check."""
        repeat = self.settings.repeat_window_days
        days, cap = max(self.settings.service_check_days, repeat), self.settings.sync_max_pages
        by_amount = (f"; account and amount over the last {repeat} days" if repeat
                     else "; not by account and amount")
        self.reporter.note(f"Checking the service's own payout list (payout_ref over the last "
                           f"{days} days{by_amount}; pages of 100) for payments this journal "
                           "did not make.")
        bar: list[str] = []  # the state whose pages the progress bar counts

        def progress(state: str, done: int, at_most: int) -> None:
            if bar and bar[0] == state:
                self.reporter.advance()
                return
            if bar:
                self.reporter.done()
            bar[:] = [state]
            self.reporter.start(f"Service's {state} payouts (pages)", at_most)
            self.reporter.advance(done)

        try:
            ledger = await read_service_ledger(client, self.journal, days=days,
                                               repeat_days=repeat, max_pages=cap,
                                               progress=progress)
        finally:
            self.reporter.done()
        self.service_check = ServiceListCheck(
            since=f"{ledger.since:%Y-%m-%dT%H:%M:%SZ}",
            amount_since=f"{ledger.repeat_since:%Y-%m-%dT%H:%M:%SZ}" if ledger.repeat_since
            else "", pages=ledger.pages, payouts_seen=ledger.seen, complete=ledger.complete)
        if not ledger.complete:
            self.notes.append(f"The service's payout list ({' and '.join(ledger.unread)}) "
                              f"could not be read back to {ledger.since:%Y-%m-%d} within the "
                              f"page cap (sync_max_pages = {cap}, {cap * 100} payouts).")
        return ledger

    async def _check_bank_names(self, client: PayoutClient) -> None:
        """A bank name the service's directory does not list: a row warning, said before paying."""
        from batchpay.engine.banknames import add_bank_warnings

        found = await add_bank_warnings(self.validation, client,
                                        cache_dir=self.settings.local_folder,
                                        service=self.service.identity)
        for note in found.notes:
            self.reporter.note(note)
        missed = len(found.warnings)  # rows warned, each once
        if missed:
            self.reporter.note(f"{missed} row(s) name a bank the service does not list: see "
                               "their warning (the rows stay valid).")

    def _info(self, plan: RunDecisions) -> RunInfo:
        o = self.options
        return RunInfo(
            operator=operator(), host=platform.node(), tool_version=__version__,
            service=self.service.identity, base_url=self.service.base_url
            if not self.service.embedded else "embedded sandbox",
            key_fingerprint=fingerprint(self.service.api_key), sandbox=self.sandbox,
            journal=self.settings.journal_name,
            settings={"concurrency": o.concurrency, "max_rps": o.max_rps, "wait": o.wait,
                      "skip_invalid": o.skip_invalid, "allow_partial": o.allow_partial,
                      "sheet": o.read.sheet_name or "",
                      "source_currency": o.read.source_currency or "",
                      # the controls that decided which rows were held
                      **control_settings(self.settings)},
            plan=o.approved.run_info() if o.approved is not None else None,
            service_list_check=self.service_check, payee_changes=plan.payee_changes)

    async def _confirm(self, sender: Sender, plan: RunDecisions) -> None:
        """Real money: show what will go and what the wallets hold, and ask (or --yes)."""
        if self.sandbox or self.options.dry_run:
            return
        o = self.options
        needs = await estimate_needs(sender, plan.send, self.balances)
        fresh = not self.journal.has_payout_requests()
        confirm_real_payouts(
            Confirmation(yes=o.yes, interactive=o.interactive, allow_partial=o.allow_partial,
                         note=self.reporter.note,
                         ask=self.reporter.confirm),
            base_url=self.service.base_url, rows=len(plan.send), needs=needs,
            new_journal=self.settings.journal_name if fresh else None,
            in_doubt=len(plan.resolve))

    async def _dry_run(self, client: PayoutClient, sender: Sender, plan: RunDecisions) -> None:
        """Quote every row that would be sent; compare the debits with the wallets."""
        await self._paying().quote_all(sender, plan.send, self.run_id)
        if sender.stopped is not None:
            raise AuthStop(sender.stopped)
        await self._check_wallets(client)

    async def _check_wallets(self, client: PayoutClient) -> None:
        need: dict[str, Decimal] = {}
        for r in result_rows(self.journal, find_run(self.journal, self.run_id)):
            if r.total_debit is not None and r.status == Status.NOT_SENT:
                need[r.source_currency] = need.get(r.source_currency, Decimal(0)) + r.total_debit
        self.wallet_needs = wallet_needs(need, balances_of(await client.wallets()))
        self.notes += [w.note for w in self.wallet_needs]

    def interrupted(self) -> Interrupted:
        """Ctrl-C: the run ends "interrupted" and its workbook shows what happened so far."""
        run = self.journal.run(self.run_id)
        if run is None:  # stopped before the run began: nothing was sent
            return Interrupted("Interrupted before anything was sent.",
                               hint="Run the same command again when you are ready.")
        rows = list(result_rows(self.journal, run))
        counts = Counter(r.status for r in rows)
        path = self.options.out or default_results_path(self.options.sheet, self.run_id,
                                                       dry_run=self.options.dry_run)
        self.journal.finish_run(self.run_id, "interrupted", Interrupted.exit_code,
                                {"counts": dict(counts), "results": str(path.absolute())})
        go_on = ("Nothing is lost: the journal holds every request sent. Run the same command "
                 "again to go on (rows in doubt are looked up first, never resent blindly).")
        try:
            render_run(self.journal, find_run(self.journal, self.run_id), path)
        except (OSError, BatchpayError) as exc:
            return Interrupted(f"Interrupted; the results workbook could not be written "
                               f"({exc}).", hint=f"`batchpay report --run {self.run_id} --out "
                               f"FILE` writes it. {go_on}")
        sent = sum(n for status, n in counts.items() if status in SENT)
        return Interrupted(f"Interrupted: {sent} row(s) sent so far; results so far: {path}",
                           hint=go_on)

    def _finish(self, plan: RunDecisions) -> RunOutcome:
        run = find_run(self.journal, self.run_id)
        rows = list(result_rows(self.journal, run))
        counts = Counter(r.status for r in rows)
        if self.stopped is not None:
            exit_code = EXIT_FAILED
            self.notes.append(f"Stopped: {self.stopped.message} No further requests were sent.")
        elif self.options.dry_run and any(w.short for w in self.wallet_needs):
            exit_code = EXIT_ROWS
        else:
            exit_code = rows_exit_code(counts, dry_run=self.options.dry_run)
        open_rows = sum(counts.get(s, 0) for s in ON_ITS_WAY)
        if open_rows and not self.options.dry_run:
            self.notes.append(f"{open_rows} row(s) are PENDING or PROCESSING: accepted, not final "
                              "yet. Run `batchpay sync` later to bring them up to date.")
        summary = summarize(rows)
        # this run's own payouts: a row paid by an earlier run is shown, not counted again
        by_run = sent_by_run(self.journal, self.run_id)
        totals = {c: str(debit) for c, (_, debit) in sorted(by_run.items()) if c}
        sent_rows = {c: n for c, (n, _) in sorted(by_run.items()) if c}
        outcome = "stopped" if self.stopped else ("ok" if exit_code == 0 else "rows need attention")
        path = self.options.out or default_results_path(self.options.sheet, self.run_id,
                                                       dry_run=self.options.dry_run)
        self.journal.finish_run(self.run_id, outcome, exit_code,
                                {"counts": dict(counts), "totals": totals,
                                 "sent_rows": sent_rows,
                                 "results": str(path.absolute()), **self.wallets})
        if not self.options.dry_run:
            queue_payment_ended(self.journal, self.settings.notify, self.run_id,
                                plan.payee_changes)
        run = find_run(self.journal, self.run_id)
        try:
            summary = render_run(self.journal, run, path, rows)
        except (OSError, ValueError) as exc:  # a full disk, a folder gone since the start
            sent = sum(r.status in SENT for r in rows)
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise ResultsNotWritten(
                f"{sent} row(s) were sent and are in the journal, but the results workbook "
                f"{path} could not be written ({reason}).",
                hint=f"Free some space or fix the folder, then `batchpay report --run "
                f"{self.run_id} --out PATH` writes it from the journal.") from exc
        return RunOutcome(
            run_id=self.run_id, exit_code=exit_code, results_path=path, summary=summary,
            sandbox=self.sandbox, notes=self.notes, dry_run=self.options.dry_run,
            payee_changes=plan.payee_changes,
            released={d.ref: list(d.data.get("earlier", [])) for d in plan.decisions
                      if d.hold == HoldKind.RELEASED},
            wallet_check=self.wallet_needs,
            rows=[json_row(row=r.row, payout_ref=r.payout_ref,
                           status=r.status, error=r.error, reference_number=r.reference_number)
                  for r in rows])

