"""The month as the console reads it from the journal: a review's figures, a payment's
progress and end, the runs and confirmations so far, the payees held, the books of a
period; and the few writes a page makes beside a run (a payee confirmed).

Each function opens the journal for the one question it answers and closes it again, so
the fronts never hold a journal themselves nor know its tables: a second journal store
changes this module, not the pages.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

from batchpay.controls.held_payees import Payees
from batchpay.controls.held_payees import payees as held_payees
from batchpay.controls.payee_records import PayeeConfirmation
from batchpay.controls.payee_register import Register
from batchpay.controls.payees import confirm
from batchpay.days import Period
from batchpay.engine.exports import Exported, export_books
from batchpay.engine.render import RowState, RunLine, find_run, render_run, result_rows, run_list
from batchpay.engine.render import row_states as journal_row_states
from batchpay.engine.statement import CurrencyTotal, Statement, build_statement, totals_by_run
from batchpay.errors import JournalLocked
from batchpay.journal.integrity import check as check_journal
from batchpay.journal.lock import in_use as run_lock_in_use
from batchpay.journal.outbox import AdviceRecord
from batchpay.journal.records import LedgerEntry, RunRecord, RunRow
from batchpay.journal.store import Journal
from batchpay.journal.stores import reachable
from batchpay.settings.model import DatabaseURL, JournalLocation, Settings
from batchpay.sheet.outcomes import ResultRow
from batchpay.sheet.unpaid import unpaid_rows, write_unpaid
from batchpay.statuses import HoldKind, Status


@dataclass
class ReviewRun:
    """A review's dry run as its page shows it."""

    rows: list[ResultRow]
    holds: dict[str, HoldKind]  # payout_ref -> the kind of hold that held it
    columns: list[str]
    started_at: str
    sandbox: bool


def review_run(settings: Settings, run_id: str) -> ReviewRun:
    with Journal(settings.journal) as journal:
        run = find_run(journal, run_id)
        return ReviewRun(list(result_rows(journal, run)), journal.run_holds(run.id),
                         list(run.input_columns), run.started_at, bool(run.info.get("sandbox")))


@dataclass
class JournalHistory:
    """The runs (newest first), the payee confirmations (newest first) and the chain."""

    runs: list[RunLine] = field(default_factory=list)
    confirmations: list[dict[str, Any]] = field(default_factory=list)
    head: str = ""
    events: int = 0
    intact: bool = True
    problem: str = ""


def journal_history(settings: Settings) -> JournalHistory:
    """What the journal holds so far (an empty history with no journal yet)."""
    if not settings.journal_exists():
        return JournalHistory()
    with Journal(settings.journal) as journal:
        runs = list(reversed(run_list(journal)))
        confirmations = list(reversed(journal.events_of("payee.confirmed")))
        chain = check_journal(journal)
    return JournalHistory(runs, confirmations, chain.head, chain.events, chain.ok,
                          chain.problem)


def payee_list(settings: Settings) -> Payees:
    """The payee register and the payees held now (controls.held_payees)."""
    by_other = settings.payee_confirmed_by_other
    if not settings.journal_exists():
        return held_payees(None, by_other=by_other)
    with Journal(settings.journal) as journal:
        return held_payees(journal, by_other=by_other, zone_name=settings.time_zone)


def run_inputs(journal_at: JournalLocation, run_id: str) -> tuple[list[str], list[RunRow]]:
    """A run's input columns and its rows as the journal keeps them (cells as read)."""
    with Journal(journal_at) as journal:
        run = find_run(journal, run_id)
        return list(run.input_columns), list(journal.run_rows(run.id))


def held_rows(settings: Settings, payees: set[str]
              ) -> tuple[Register, dict[tuple[str, str], dict[str, str]]]:
    """For reading held payees back: the payee register, and the cells of the row that
    held each of `payees` (its latest run that held it), by (folded payee, plain account)."""
    from batchpay.controls.payee_keys import fold
    from batchpay.money import plain_account

    wanted = {fold(p) for p in payees}
    rows_by_run: dict[str, dict[int, str]] = defaultdict(dict)  # run → row → payee (folded)
    found_run: dict[str, str] = {}
    with Journal(settings.journal) as journal:
        register = Register.load(journal)
        runs = journal.runs()
        for run in reversed(runs):  # the latest run that held each payee
            for change in run.info.get("payee_changes", []):
                key = fold(change.get("payee", ""))
                if key in wanted and change.get("decision") == Status.HELD and found_run.get(
                        key, run.id) == run.id:
                    found_run[key] = run.id
                    rows_by_run[run.id][int(change["row"])] = key
        typed: dict[tuple[str, str], dict[str, str]] = {}
        for run in runs:
            if run.id not in rows_by_run:
                continue
            columns = list(run.input_columns)
            for r in journal.run_rows(run.id):
                held_key = rows_by_run[run.id].get(r.row)
                if held_key is not None:
                    cells = {name: ("" if value is None else str(value).strip())
                             for name, value in zip(columns, list(r.inputs), strict=False)}
                    typed[(held_key, plain_account(cells.get("account_number")))] = cells
    return register, typed


def record_payee_confirmation(settings: Settings, name: str, last4: str, *, method: str,
                              note: str, by: str) -> PayeeConfirmation:
    """`batchpay payees confirm`, recorded as by `by`."""
    with Journal(settings.journal) as journal:
        return confirm(journal, name, last4, method=method, note=note, by=by)


def journal_reachable(settings: Settings) -> bool:
    """Whether the journal (its database, or its file) can be reached now."""
    return reachable(settings.journal)


def journal_in_use(settings: Settings) -> bool:
    """Whether a run, rerun or sync (of this process or another) holds the journal's lock
    now (a run starting at that instant would be told to wait). A journal in a database: its
    run lock (an advisory lock of the database) asked for and let go."""
    location = settings.journal
    if isinstance(location, DatabaseURL):
        with Journal(location) as journal:
            try:
                journal.lock()
            except JournalLocked:
                return True
            journal.unlock()
        return False
    return run_lock_in_use(location)


def runs_of_input(settings: Settings, input_sha256: str) -> list[str]:
    """The paying runs (run, rerun) of a sheet's or a plan's bytes, oldest first."""
    if not settings.journal_exists():
        return []
    with Journal(settings.journal) as journal:
        return journal.run_ids_of(input_sha256, ("run", "rerun"))


def run_known(settings: Settings, run_id: str) -> bool:
    """Whether the journal holds the run (it started: it was not refused before paying)."""
    if not settings.journal_exists():
        return False
    with Journal(settings.journal) as journal:
        return journal.run(run_id) is not None


def run_rows(settings: Settings, run_id: str) -> tuple[RunRecord, list[RowState]]:
    """A run's record and its rows' states as the journal holds them now."""
    with Journal(settings.journal) as journal:
        return find_run(journal, run_id), journal_row_states(journal, run_id)


def run_row_states(settings: Settings, run_id: str) -> list[RowState]:
    with Journal(settings.journal) as journal:
        return journal_row_states(journal, run_id)


def finished_rows(settings: Settings, run_id: str, results: Path) -> list[ResultRow] | None:
    """A run that ended: its results workbook written from the journal at `results`, and
    its rows; None while it has not ended."""
    with Journal(settings.journal) as journal:
        run = find_run(journal, run_id)
        if run.finished_at is None:
            return None
        rows = list(result_rows(journal, run))
        render_run(journal, run, results, rows)
    return rows


def run_results(settings: Settings, run_id: str) -> tuple[RunRecord, list[ResultRow]]:
    """A run's record and its result rows as they stand now."""
    with Journal(settings.journal) as journal:
        run = find_run(journal, run_id)
        return run, list(result_rows(journal, run))


def run_advices(settings: Settings, run_id: str) -> list[AdviceRecord]:
    with Journal(settings.journal) as journal:
        return journal.advices(run_id)


def ledger_entries(settings: Settings, refs: Iterable[str]) -> dict[str, LedgerEntry]:
    """The ledger's entry of each payout_ref (those it holds)."""
    with Journal(settings.journal) as journal:
        return journal.entries(refs)


def period_statement(settings: Settings, start: date, end: date) -> Statement | None:
    """The period's statement (None: no journal yet, nothing was ever paid)."""
    if not settings.journal_exists():
        return None
    with Journal(settings.journal) as journal:
        return build_statement(journal, start, end, settings.time_zone)


def money_by_run(settings: Settings) -> dict[str, dict[str, CurrencyTotal]]:
    """Every run's money per currency, read from the journal's chain."""
    if not settings.journal_exists():
        return {}
    with Journal(settings.journal) as journal:
        return totals_by_run(journal)


def export_period(settings: Settings, period: Period, fmt: str, target: Path) -> Exported:
    """`batchpay export` of the period in `fmt` to `target`."""
    with Journal(settings.journal) as journal:
        return export_books(journal, period, fmt, target, settings.books)


def unpaid_sheet(settings: Settings, run_id: str, path: Path) -> Path | None:
    """The run's rows that were not paid, written at `path` as a sheet to fix and upload
    again (sheet.unpaid); None, and nothing written, when every row was sent."""
    with Journal(settings.journal) as journal:
        run = find_run(journal, run_id)
        rows = unpaid_rows(list(result_rows(journal, run)))
    if not rows:
        return None
    write_unpaid(path, run.input_columns, rows)
    return path
