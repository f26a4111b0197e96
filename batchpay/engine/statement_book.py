"""The statement workbook (`batchpay statement --out FILE.xlsx`): what an auditor files.

Sheets: ``Statement`` (one line per payout_ref), ``Refunds``, ``Totals`` (per source
currency, with the wallet before and after) and ``About`` (period, journal, chain head).
Like every workbook batchpay writes: no formula cell (text through ``write_text``, the
workbook's conversions off), amounts as numbers with their currency's decimals, account
numbers masked, ids as text.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any

import xlsxwriter
from xlsxwriter.format import Format
from xlsxwriter.worksheet import Worksheet

from batchpay.engine.statement import Statement
from batchpay.files import replaced_atomically
from batchpay.money import currency_exponent
from batchpay.sheet.xlsx import WORKBOOK_OPTIONS, Lines, StreamingWorksheet, amount_format

STATEMENT_COLUMNS = (
    "payout_ref", "status", "reference_number", "recipient_name", "account",
    "source_currency", "source_paid", "fee", "total_debit", "target_currency", "delivered",
    "requests", "runs", "plan", "approved_by", "payee_confirmations", "first_sent",
    "updated_at")
REFUND_COLUMNS = ("payout_ref", "reference_number", "run", "sent", "refunded_at",
                  "source_currency", "source_amount", "fee", "total_debit")
TOTAL_COLUMNS = ("source_currency", "payouts", "requests", "debited", "refunded",
                 "net_debit", "source_paid", "fees", "delivered", "in_doubt",
                 "in_doubt_debit", "wallet_before", "wallet_after", "wallet_movement",
                 "movement_minus_net_debit")


class SheetWriter:
    """Writes one sheet top to bottom (the workbook streams its rows)."""

    def __init__(self, workbook: xlsxwriter.Workbook, name: str, header: Sequence[str],
                 widths: Sequence[int], *, streamed: bool = False) -> None:
        self.workbook = workbook
        # a long sheet: rows serialised in one go; its text cells carry a (plain) format,
        # without which a column that has a width sends each cell the slow way
        self.sheet: Worksheet = workbook.add_worksheet(
            name, worksheet_class=StreamingWorksheet if streamed else None)
        self._plain: Format | None = workbook.add_format({}) if streamed else None
        self.bold = workbook.add_format({"bold": True, "bg_color": "#D9D9D9", "bottom": 1})
        self._money: dict[int, Format] = {}
        self.lines = Lines(self.sheet)
        for col, width in enumerate(widths):
            self.sheet.set_column(col, col, width)
        if header:
            self.line(*((h, self.bold) for h in header))
            self.sheet.freeze_panes(1, 0)
        self.sheet.set_landscape()
        self.sheet.set_paper(9)
        self.sheet.fit_to_pages(1, 0)
        self.sheet.repeat_rows(0)

    def money(self, value: Decimal | None, currency: str) -> tuple[Decimal | None, Format]:
        decimals = currency_exponent(currency) if currency else 2
        fmt = self._money.get(decimals)
        if fmt is None:
            fmt = self._money[decimals] = self.workbook.add_format(
                {"num_format": amount_format(decimals)})
        return value, fmt

    def line(self, *cells: Any) -> None:
        if self._plain is not None:
            cells = tuple((c, self._plain) if isinstance(c, str) else c for c in cells)
        self.lines.write(*cells)

    @property
    def row(self) -> int:
        return self.lines.row


def write_statement(statement: Statement, path: Path) -> Path:
    """Write the statement workbook to `path`, atomically (a crash leaves no half file)."""
    with replaced_atomically(Path(path)) as partial:
        workbook = xlsxwriter.Workbook(str(partial), WORKBOOK_OPTIONS)
        _lines(workbook, statement)
        _refunds(workbook, statement)
        _totals(workbook, statement)
        _about(workbook, statement)
        workbook.close()
    return path


def _lines(workbook: xlsxwriter.Workbook, statement: Statement) -> None:
    out = SheetWriter(workbook, "Statement", STATEMENT_COLUMNS,
                 (18, 11, 18, 24, 12, 8, 16, 10, 16, 8, 14, 8, 24, 20, 28, 28, 22, 22))
    for line in statement.lines:
        source, target = line.source_currency, line.target_currency
        out.line(line.payout_ref, line.status, line.reference_number, line.recipient_name,
                 line.account, source, out.money(line.amount, source),
                 out.money(line.fee, source), out.money(line.total_debit, source), target,
                 out.money(line.delivered, target), line.requests, ", ".join(line.runs),
                 ", ".join(p[:16] for p in line.plans), "; ".join(line.approvers),
                 "; ".join(line.confirmations), line.first_sent, line.updated)
    out.sheet.autofilter(0, 0, max(out.row - 1, 1), len(STATEMENT_COLUMNS) - 1)


def _refunds(workbook: xlsxwriter.Workbook, statement: Statement) -> None:
    out = SheetWriter(workbook, "Refunds", REFUND_COLUMNS, (18, 18, 22, 22, 22, 8, 16, 10, 16))
    for r in statement.refunds:
        c = r.source_currency
        out.line(r.payout_ref, r.reference_number, r.run_id, r.sent_at, r.status_at, c,
                 out.money(r.amount, c), out.money(r.fee, c), out.money(r.total_debit, c))


def _totals(workbook: xlsxwriter.Workbook, statement: Statement) -> None:
    out = SheetWriter(workbook, "Totals", TOTAL_COLUMNS, (8, 8, 8, *([16] * 5), 22, 8, *([18] * 5)))
    for c, t in statement.totals.items():
        movement = t.wallet_movement
        out.line(c, t.payouts, t.requests, out.money(t.debited, c), out.money(t.refunded, c),
                 out.money(t.net_debit, c), out.money(t.amount, c), out.money(t.fees, c),
                 ", ".join(f"{v:,} {k}" for k, v in sorted(t.delivered.items())),
                 t.in_doubt, out.money(t.in_doubt_debit, c), out.money(t.wallet_before, c),
                 out.money(t.wallet_after, c), out.money(movement, c),
                 out.money(None if movement is None else movement - t.net_debit, c))
    # the delivered amounts again, one number per cell, for a spreadsheet to add up
    out.line()
    out.line(("source_currency", out.bold), ("target_currency", out.bold),
             ("delivered", out.bold))
    for c, t in statement.totals.items():
        for target, value in sorted(t.delivered.items()):
            out.line(c, target, out.money(value, target))


def _about(workbook: xlsxwriter.Workbook, statement: Statement) -> None:
    out = SheetWriter(workbook, "About", ("field", "value"), (28, 90))
    out.line("period", statement.period)
    out.line("made at (UTC)", statement.made_at)
    out.line("journal file", statement.journal)
    out.line("journal events", str(statement.events))
    out.line("journal chain head", statement.chain_head)
    out.line("payout_refs", str(len(statement.lines)))
    out.line("refunds", str(len(statement.refunds)))
    for run in statement.runs:
        info = run.info
        said = f"{run.kind}, {run.started_at}, {run.sheet}, {run.outcome or 'unfinished'}"
        if info.get("plan_id"):
            said += f"; plan {str(info['plan_id'])[:16]}, approved by {info.get('plan_approvers')}"
        out.line(f"run {run.id}", said)
    out.line("how to read it", "A payout request belongs to the period of the moment it was "
             "made, in the days of the period's time zone (the time_zone setting); the times "
             "shown are UTC. source_paid, fee and total_debit count the requests whose money is "
             "out (PENDING, PROCESSING, COMPLETED, FAILED until refunded); refunded requests "
             "are on the Refunds sheet; net_debit = debited - refunded; a request in doubt "
             "(UNKNOWN) is counted apart. wallet_movement = wallet_before (the period's first "
             "run) - wallet_after (its last run); it equals net_debit when nothing else moved "
             "the wallet and every refund had arrived by the last run.")
