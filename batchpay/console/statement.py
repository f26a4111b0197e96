"""The auditor's pages: a period's statement (the figures and the workbook of `batchpay
statement`, from the same library call, the chain checked first) and History's money: the
amounts per batch and per run, a period to filter by, and History as CSV.

Who reads the statement: the auditor, who files it, the approver, who answers for what
left the wallet, and the owner, who reads everything. A maker alone does not: the one who
prepares payments is not the one who reconciles them (History, with its amounts, stays open
to every role as before). Days are those of the `time_zone` setting, as for the command.
"""

from __future__ import annotations

import csv
import io
import shutil
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import Any, TypedDict

from batchpay import clock
from batchpay.console.accounts import OWNER
from batchpay.console.batches import Batch
from batchpay.days import FALLBACK_ZONE, parse_day
from batchpay.engine import (
    CurrencyTotal,
    Statement,
    default_statement_path,
    period_statement,
    write_statement,
)
from batchpay.engine import money_by_run as totals_of_runs
from batchpay.errors import UsageError
from batchpay.money import shown_amount
from batchpay.settings.model import Settings

STATEMENT_READERS = ("auditor", "approver", OWNER)
# what a spreadsheet reads as a formula (or, after a tab or a line break, may): such text is
# written after a quote, so the cell shows the text and runs nothing
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def may_read_statement(roles: Iterable[str]) -> bool:
    return any(r in STATEMENT_READERS for r in roles)


@dataclass(frozen=True)
class Span:
    """The From and To of a page: days of the `time_zone` setting, both included; either
    may be open on History."""

    start: date | None = None
    end: date | None = None
    zone_name: str = FALLBACK_ZONE

    @property
    def query(self) -> str:
        """The period as a link's query, for the downloads of the page that shows it."""
        parts = [f"from={self.start.isoformat()}" if self.start else "",
                 f"to={self.end.isoformat()}" if self.end else ""]
        return "&".join(p for p in parts if p)

    @property
    def open(self) -> bool:
        return self.start is None and self.end is None

    def holds(self, at: str | None) -> bool:
        """Whether a journal time (ISO 8601) falls on one of the period's days."""
        if self.open:
            return True
        if not at:
            return False
        day = clock.day(at, self.zone_name)
        return (self.start is None or day >= self.start) and (self.end is None or day <= self.end)


def span_of(query: Mapping[str, str], zone_name: str) -> Span:
    """From and To as the page's fields send them (YYYY-MM-DD, empty for open)."""
    start_text, end_text = query.get("from", "").strip(), query.get("to", "").strip()
    start = parse_day(start_text, "From") if start_text else None
    end = parse_day(end_text, "To") if end_text else None
    if start and end and end < start:
        raise UsageError(f"To {end} is before From {start}.")
    return Span(start, end, zone_name)


# --------------------------------------------------------------------------- statement


class TotalLine(TypedDict):
    """One currency's line, each figure as `batchpay statement` prints it."""

    currency: str
    payouts: str
    debited: str
    refunded: str
    net_debit: str
    fees: str
    delivered: str
    in_doubt: str
    wallet_before: str
    wallet_after: str


def statement(settings: Settings, period: Span) -> Statement | None:
    """The period's statement (None: no journal yet, nothing was ever paid). A journal that
    disagrees with its chain is refused by the library (JournalTampered), as the command is."""
    if period.start is None or period.end is None:
        raise UsageError("Give both From and To (the first and last day of the period).")
    return period_statement(settings, period.start, period.end)


def total_lines(made: Statement) -> list[TotalLine]:
    return [TotalLine(currency=c, payouts=str(t.payouts), debited=shown_amount(t.debited, c),
                      refunded=shown_amount(t.refunded, c),
                      net_debit=shown_amount(t.net_debit, c), fees=shown_amount(t.fees, c),
                      delivered=_delivered(t), in_doubt=str(t.in_doubt),
                      wallet_before=shown_amount(t.wallet_before, c),
                      wallet_after=shown_amount(t.wallet_after, c))
            for c, t in made.totals.items()]


def statement_workbook(settings: Settings, period: Span) -> tuple[Path, Path]:
    """The period's statement workbook, written as `batchpay statement` writes it, in a
    folder of its own (returned too, to remove once sent)."""
    made = statement(settings, period)
    if made is None:
        raise UsageError("There is no journal yet: nothing was paid, so there is no "
                         "statement to download.")
    folder = Path(tempfile.mkdtemp(prefix="batchpay-statement-"))
    try:
        path = write_statement(made, folder / default_statement_path(made.start, made.end))
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return path, folder


def _delivered(total: CurrencyTotal) -> str:
    return ", ".join(shown_amount(v, k) for k, v in sorted(total.delivered.items()))


# --------------------------------------------------------------------------- history


class Money(TypedDict):
    """A run's (or a batch's) money in one source currency, as the statement counts it."""

    currency: str
    planned_debit: Decimal | None  # the review's quoted debit (batches only)
    payouts: int
    debited: Decimal | None  # net of refunds: what left the wallet and stays out
    refunded: Decimal | None
    fees: Decimal | None
    delivered: dict[str, Decimal]  # target currency -> amount
    in_doubt: int


def money_by_run(settings: Settings) -> dict[str, list[Money]]:
    """Every run's money per currency, read from the journal's chain."""
    found = totals_of_runs(settings)
    return {run: [_money(t) for _, t in sorted(totals.items())] for run, totals in found.items()}


def _money(t: CurrencyTotal) -> Money:
    return Money(currency=t.currency, planned_debit=None, payouts=t.payouts,
                 debited=t.net_debit, refunded=t.refunded, fees=t.fees,
                 delivered=dict(sorted(t.delivered.items())), in_doubt=t.in_doubt)


def batch_money(batch: Batch, run_id: str | None, by_run: Mapping[str, list[Money]]
                ) -> list[Money]:
    """A batch's money per currency: what its review planned to debit, and what the run
    that paid it debited (nothing yet, before it is paid)."""
    paid = {m["currency"]: m for m in by_run.get(run_id or "", [])}
    review = batch.meta.get("review")
    figures: dict[str, dict[str, Any]] = review.get("currencies", {}) if review else {}
    planned = {c: Decimal(str(f["quoted_debit"])) for c, f in figures.items()
               if f.get("quoted_debit")}
    found = []
    for currency in sorted(set(paid) | set(planned)):
        money = paid.get(currency) or Money(
            currency=currency, planned_debit=None, payouts=0, debited=None, refunded=None,
            fees=None, delivered={}, in_doubt=0)
        found.append(Money(**{**money, "planned_debit": planned.get(currency)}))
    return found


HISTORY_COLUMNS = ("record", "id", "sheet", "kind", "by", "at", "stage_or_outcome",
                   "approved_by", "paid_by", "currency", "planned_debit", "payouts", "debited",
                   "refunded", "fees", "delivered", "in_doubt")


def safe_cell(value: Any) -> str:
    """A CSV cell a spreadsheet shows as text: text that a spreadsheet would run as a
    formula gets a leading quote. Numbers are written as they are (a negative amount is a
    number, not a formula)."""
    if isinstance(value, int | Decimal):
        return str(value)
    text = "" if value is None else str(value)
    return "'" + text if text.startswith(FORMULA_STARTS) else text


class HistoryMoney(TypedDict):
    """What History adds to `work.history`'s lists: the period, and the money."""

    period: Span
    batch_money: dict[str, list[Money]]  # batch id -> its money per currency
    run_money: dict[str, list[Money]]  # run id -> its money per currency


def history_money(settings: Settings, found: dict[str, Any], period: Span
                  ) -> dict[str, Any]:
    """History's lists cut to the period (a batch by its upload, a run by its start, a
    confirmation by its time), with the money of each batch and run."""
    from batchpay.console.payment import run_of

    by_run = money_by_run(settings)
    batches = [b for b in found["batches"] if period.holds(b.meta.get("uploaded_at"))]
    money = HistoryMoney(
        period=period, run_money=by_run,
        batch_money={b.id: batch_money(b, run_of(settings, b) if b.meta.get("pay") else None,
                                       by_run) for b in batches})
    return {**found, **money, "batches": batches,
            "runs": [r for r in found["runs"] if period.holds(r["started_at"])],
            "confirmations": [c for c in found["confirmations"] if period.holds(c.get("at"))]}


def history_csv(view: Mapping[str, Any]) -> str:
    """History as CSV: a line per batch and per run in each of its currencies (one line
    without money for those that moved none), in the page's order."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(HISTORY_COLUMNS)
    for b in view["batches"]:
        meta = b.meta
        head = ["batch", b.id, meta.get("uploaded_name", ""), "", meta.get("maker", ""),
                meta.get("uploaded_at", ""), meta.get("stage", ""),
                ", ".join(a["by"] for a in meta.get("approvals", [])),
                meta.get("paid_by") or ""]
        _money_rows(writer, head, view["batch_money"].get(b.id, []))
    for r in view["runs"]:
        head = ["run", r["run_id"], r["sheet"], r["kind"], "", r["started_at"],
                r["outcome"] or "unfinished", "", ""]
        _money_rows(writer, head, view["run_money"].get(r["run_id"], []))
    return out.getvalue()


def _money_rows(writer: Any, head: list[Any], money: list[Money]) -> None:
    if not money:
        writer.writerow([safe_cell(v) for v in head] + [""] * 8)
    for m in money:
        writer.writerow([safe_cell(v) for v in head] + [
            safe_cell(m["currency"]), _number(m["planned_debit"]), m["payouts"],
            _number(m["debited"]), _number(m["refunded"]), _number(m["fees"]),
            safe_cell(", ".join(f"{v} {k}" for k, v in m["delivered"].items())),
            m["in_doubt"]])


def _number(value: Decimal | None) -> str:
    """An amount as a spreadsheet reads a number: digits and a point, no separators."""
    return "" if value is None else format(value, "f")
