"""The reconciliation workbook (`batchpay reconcile`): what an auditor ticks off.

Sheets: ``Outside batchpay`` (in the wallet, not in the journal: money moved by someone
else), ``Not in wallet`` (in the journal, not in the wallet), ``Amounts differ``,
``Matched``, ``Gap`` (per currency: the statement's movement minus net debit, line by line)
and ``About``. The unmatched come first: they are what needs an answer. Text cells are
text (never a formula), amounts numbers with their currency's decimals.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import xlsxwriter

from batchpay.engine.reconcile_lines import Line, Reconciliation
from batchpay.engine.statement_book import SheetWriter
from batchpay.files import replaced_atomically
from batchpay.sheet.xlsx import WORKBOOK_OPTIONS

LINE_COLUMNS = ("kind", "at_utc", "currency", "amount", "payout_ref", "reference_number",
                "payout_id", "quote_id", "state", "description")
PAIR_COLUMNS = ("kind", "currency", "wallet_amount", "journal_amount", "wallet_at_utc",
                "journal_at_utc", "payout_ref", "reference_number", "payout_id",
                "wallet_state", "journal_status")
GAP_COLUMNS = ("currency", "line", "amount")
WIDTHS = (8, 22, 8, 16, 18, 18, 38, 38, 12, 60)


def write_reconciliation(done: Reconciliation, path: Path) -> Path:
    with replaced_atomically(Path(path)) as partial:
        workbook = xlsxwriter.Workbook(str(partial), WORKBOOK_OPTIONS)
        _lines(workbook, "Outside batchpay", done.outside)
        _lines(workbook, "Not in wallet", done.missing)
        _pairs(workbook, "Amounts differ", done)
        _pairs(workbook, "Matched", done)
        _gaps(workbook, done)
        _about(workbook, done)
        workbook.close()
    return path


def _lines(workbook: xlsxwriter.Workbook, name: str, lines: list[Line]) -> None:
    out = SheetWriter(workbook, name, LINE_COLUMNS, WIDTHS)
    for x in sorted(lines, key=lambda x: x.at):
        out.line(x.kind, x.at, x.currency, out.money(x.amount, x.currency), x.payout_ref,
                 x.reference, x.payout_id, x.quote_id, x.state, x.description)
    out.sheet.autofilter(0, 0, max(out.row - 1, 1), len(LINE_COLUMNS) - 1)


def _pairs(workbook: xlsxwriter.Workbook, name: str, done: Reconciliation) -> None:
    pairs = done.matched if name == "Matched" else done.differ
    out = SheetWriter(workbook, name, PAIR_COLUMNS, (8, 8, 16, 16, 22, 22, 18, 18, 38, 12, 12),
                      streamed=True)
    for p in sorted(pairs, key=lambda p: p.journal.at):
        w, j = p.wallet, p.journal
        out.line(j.kind, j.currency, out.money(w.amount, w.currency),
                 out.money(j.amount, j.currency), w.at, j.at, j.payout_ref or w.payout_ref,
                 w.reference or j.reference, w.payout_id or j.payout_id, w.state, j.state)
    out.sheet.autofilter(0, 0, max(out.row - 1, 1), len(PAIR_COLUMNS) - 1)


def _gaps(workbook: xlsxwriter.Workbook, done: Reconciliation) -> None:
    out = SheetWriter(workbook, "Gap", GAP_COLUMNS, (8, 90, 18))
    for gap in done.gaps:
        c = gap.currency
        out.line(c, "wallet movement (before the period's first run - after its last)",
                 out.money(gap.movement, c))
        out.line(c, "net debit (journal: debited - refunded)", out.money(gap.net_debit, c))
        out.line(c, "movement minus net debit", out.money(gap.gap, c))
        for x in gap.lines:
            out.line(c, x.what, out.money(x.amount, c))
        out.line(c, "not explained by the lines above", out.money(gap.unexplained, c))
        out.line()


def _about(workbook: xlsxwriter.Workbook, done: Reconciliation) -> None:
    out = SheetWriter(workbook, "About", ("field", "value"), (28, 90))
    out.line("period", done.period.label)
    out.line("wallet movements from", done.source)
    out.line("service requests", str(done.requests))
    out.line("list read to its end", "yes" if done.complete else "no: cut short by the "
             "page cap (sync_max_pages)")
    out.line("journal chain head", done.chain_head)
    out.line("matched", str(len(done.matched)))
    out.line("in the wallet only", str(len(done.outside)))
    out.line("in the journal only", str(len(done.missing)))
    out.line("amounts differ", str(len(done.differ)))
    unexplained = sum((abs(g.unexplained) for g in done.gaps), Decimal(0))
    out.line("gap not explained", f"{unexplained}")
    out.line("how to read it", "A movement is a payout's debit, its fee, or a refund, signed "
             "as the wallet sees it (negative: out). A pair is matched by the service's payout "
             "id, the quote id or the reference number, and the kind of movement. 'Outside "
             "batchpay' is money the wallet moved that this journal never asked for: a payment "
             "made in the provider's dashboard, from another journal, or a deposit.")
