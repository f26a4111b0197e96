"""Results workbooks are rendered from the journal, never the other way round.

`run`, `sync` and `report` all call `render_run`: the same journal gives the same cells.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any, NamedTuple, TypedDict

from batchpay import clock
from batchpay.engine.doubt import UNKNOWN_ERROR
from batchpay.errors import JournalError
from batchpay.journal.reads import requested_debits
from batchpay.journal.records import LedgerEntry, RunRecord, RunRow
from batchpay.journal.store import Journal
from batchpay.money import in_minor_units
from batchpay.sheet.outcomes import ResultRow, ResultsSummary
from batchpay.sheet.results import write_results
from batchpay.statuses import SENDING, SENT, Status, display_status

RUN_INFO_FIELDS = (
    ("run_id", "run id"), ("kind", "kind"), ("started_at", "started (UTC)"),
    ("finished_at", "finished (UTC)"), ("operator", "operator"), ("host", "host"),
    ("tool_version", "batchpay version"), ("sheet", "input file"),
    ("input_sha256", "input SHA-256"), ("service", "service"), ("base_url", "base URL"),
    ("key_fingerprint", "API key fingerprint"), ("journal", "journal file"),
    ("settings", "settings"), ("service_list_check", "service payout list checked"),
    ("plan_id", "approved plan"), ("plan_maker", "plan made by"),
    ("plan_approvers", "plan approved by"),
    ("outcome", "outcome"), ("totals", "totals per currency"),
)


# what a failed payout means when the service gave no text of its own (its payout record
# carries a state, never a failure reason)
STATUS_EXPLAINED: dict[str, str] = {
    Status.FAILED: "the bank refused the payout (the service gives no reason); the money comes "
                   "back (REFUNDED): check the recipient's name and account, fix them, then "
                   "`batchpay rerun` the results",
    Status.REFUNDED: "the payout failed at the bank and the money is back in the wallet; check "
                     "the recipient's name and account, fix them, then `batchpay rerun` the "
                     "results",
}


def result_row(rr: RunRow, entry: LedgerEntry | None) -> ResultRow:
    if rr.linked and entry is not None:
        status = display_status(entry.status)
        error = entry.error or (UNKNOWN_ERROR if entry.status == SENDING
                                else STATUS_EXPLAINED.get(entry.status, ""))
        return ResultRow(
            row=rr.row, inputs=rr.inputs, status=status, error=error, warning=rr.warning,
            reference_number=entry.reference_number, payout_id=entry.payout_id,
            quote_id=entry.quote_id, rate=entry.rate, fee=entry.fee,
            target_amount=entry.target_amount,
            total_debit=entry.total_debit, updated_at=entry.updated_at,
            amount=entry.amount if entry.amount is not None else rr.amount,
            source_currency=entry.source_currency or rr.source_currency,
            target_currency=entry.target_currency or rr.target_currency,
            quotes_used=entry.quotes_used, asked=rr.asked,
        )
    return ResultRow(
        row=rr.row, inputs=rr.inputs, status=rr.status, error=rr.error, warning=rr.warning,
        quote_id=rr.quote_id, rate=rr.rate, fee=rr.fee,
        target_amount=rr.target_amount, total_debit=rr.total_debit,
        updated_at=rr.updated_at, amount=rr.amount,
        source_currency=rr.source_currency, target_currency=rr.target_currency,
        quotes_used=rr.quotes_used, asked=rr.asked,
    )


class RowState(NamedTuple):
    """What a page following a payment shows of a row: `result_row`'s status and error,
    without the row's cells (reading them is most of the cost at thousands of rows)."""

    row: int
    payout_ref: str
    status: str
    error: str
    reference_number: str


def row_states(journal: Journal, run_id: str) -> list[RowState]:
    """The run's rows as `result_rows` gives their status, error and reference."""
    states = []
    for r in journal.run_row_states(run_id):
        if r["linked"] and r["ledger_status"] is not None:
            ledger = r["ledger_status"]
            error = r["ledger_error"] or (UNKNOWN_ERROR if ledger == SENDING
                                          else STATUS_EXPLAINED.get(ledger, ""))
            states.append(RowState(r["row"], r["payout_ref"], display_status(ledger), error,
                                   r["reference_number"] or ""))
        else:
            states.append(RowState(r["row"], r["payout_ref"], r["status"], r["error"] or "", ""))
    return states


def result_rows(journal: Journal, run: RunRecord) -> Iterator[ResultRow]:
    rows = list(journal.run_rows(run.id))
    ledger = journal.entries(r.payout_ref for r in rows if r.linked)
    for rr in rows:
        yield result_row(rr, ledger.get(rr.payout_ref))


def run_info(journal: Journal, run: RunRecord) -> list[tuple[str, str]]:
    values: dict[str, Any] = {
        "run_id": run.id, "kind": run.kind, "started_at": run.started_at,
        "finished_at": run.finished_at or "", "sheet": run.sheet,
        "input_sha256": run.input_sha256, "outcome": run.outcome or "", **run.info,
    }
    pairs = []
    for key, label in RUN_INFO_FIELDS:
        value = values.get(key, "")
        if (key.startswith("plan_") or key == "service_list_check") and not value:
            continue  # a run without an approved plan, or one that read no payout list
        if key == "settings" and isinstance(value, dict):
            pairs += [(f"setting: {k}", _setting(v)) for k, v in value.items()]
        elif key == "totals" and isinstance(value, dict):
            # this run's own payouts: rows paid by earlier runs are shown, never counted again
            if "sent_rows" in run.info:
                pairs.append(("payouts sent by this run",
                              str(sum(run.info["sent_rows"].values()))))
            pairs += [(f"total debit {c}", _money_text(v, c)) for c, v in value.items()]
            if not value and run.kind != "dry-run":
                pairs.append(("total debit", "0: this run sent nothing (its rows were paid, "
                              "or are on their way, from earlier runs)"))
            for when in ("before", "after"):
                pairs += [(f"wallet {c} {when}", _money_text(v, c))
                          for c, v in sorted(run.info.get(f"wallet_{when}", {}).items())]
        elif isinstance(value, dict):
            pairs.append((label, ", ".join(f"{k}={v}" for k, v in value.items())))
        else:
            pairs.append((label, str(value)))
        if key in ("started_at", "finished_at") and value:
            pairs.append((label.replace("(UTC)", "(local)"), _local(str(value))))
    for change in run.info.get("payee_changes", []):
        if change.get("confirmed_by") and change.get("decision") != Status.HELD:
            pairs.append(("payee confirmation relied on",
                          f"{change['payee']} (row {change['row']}), {change['confirmed_by']}"))
    pairs.append(("journal chain head", journal.head()))
    return pairs


def _setting(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value) if value not in ("", None) else "(not set)"


def _money_text(value: Any, currency: str) -> str:
    amount = Decimal(str(value))
    return f"{in_minor_units(amount, currency):,}"


def _local(utc: str) -> str:
    """An ISO 8601 UTC time in this machine's time zone, with its offset."""
    try:
        moment = clock.local(utc, clock.machine_zone())
    except ValueError:
        return utc
    offset = moment.strftime("%z")  # +0100
    return f"{moment:%Y-%m-%d %H:%M:%S} (UTC{offset[:3]}:{offset[3:]})"


def find_run(journal: Journal, run_id: str | None) -> RunRecord:
    run = journal.run(run_id)
    if run is None:
        what = f"run {run_id}" if run_id else "any run"
        raise JournalError(f"The journal {journal.where} holds no {what}.",
                           hint="`batchpay runs` lists the runs it holds.")
    return run


def render_run(journal: Journal, run: RunRecord, path: Path,
               rows: Iterable[ResultRow] | None = None,
               plan_lines: Sequence[tuple[str, str]] = ()) -> ResultsSummary:
    """Write the run's workbook; `rows` when the caller already rendered them; `plan_lines`
    when the dry run is a plan for approval."""
    return write_results(path, input_columns=run.input_columns,
                         rows=result_rows(journal, run) if rows is None else rows,
                         run_info=run_info(journal, run),
                         payee_changes=run.info.get("payee_changes", []),
                         plan_lines=plan_lines, banner=banner(run),
                         approval=bool(run.info.get("settings", {}).get("require_approval")))


def banner(run: RunRecord) -> str:
    """What a workbook says first when no real money moved (a sandbox, a dry run)."""
    said = ["DRY RUN: nothing was paid"] if run.kind == "dry-run" else []
    if run.info.get("sandbox"):
        said.append("SANDBOX: no real money moved")
    return "; ".join(said)


def run_counts(journal: Journal, run: RunRecord) -> dict[str, int]:
    """Rows per status of a run as they stand in the journal now (after `sync`, a webhook
    or a later run), not as they were when it finished."""
    return dict(Counter(r.status for r in result_rows(journal, run)))


def sent_by_run(journal: Journal, run_id: str) -> dict[str, tuple[int, Decimal]]:
    """Per source currency, the payouts this run requested (the ledger's latest request of
    each payout_ref made by it, whose money went or may have) and their total debit."""
    found: dict[str, tuple[int, Decimal]] = {}
    for currency, total_debit in requested_debits(journal, run_id, SENT | {SENDING}):
        rows, debit = found.get(currency, (0, Decimal(0)))
        found[currency] = (rows + 1, debit + Decimal(total_debit or 0))
    return found


class RunLine(TypedDict):
    """A run as `batchpay runs` lists it (and prints it with --json)."""

    run_id: str
    kind: str
    started_at: str
    finished_at: str | None
    sheet: str
    outcome: str | None
    exit_code: int | None
    counts: dict[str, int]  # rows per status as they stand now
    sent: int  # payouts the run itself sent


def run_list(journal: Journal) -> list[RunLine]:
    """Every run of the journal, oldest first, as `batchpay runs` shows it (and prints it
    with --json): id, kind, times, sheet, outcome, exit code, rows per status as they
    stand now, and how many payouts the run itself sent."""
    return [RunLine(run_id=r.id, kind=r.kind, started_at=r.started_at,
                    finished_at=r.finished_at, sheet=r.sheet, outcome=r.outcome,
                    exit_code=r.exit_code, counts=run_counts(journal, r),
                    sent=sum(n for n, _ in sent_by_run(journal, r.id).values()))
            for r in journal.runs()]
