"""The results workbook: every input row beside what happened to it, and totals that reconcile.

Sheets (README, "A month with batchpay", opens one as the operator does):

- ``Results``: the input columns as read (a name that collides with a result column becomes
  ``<name>_input``), then the result columns. Header frozen, filters on, status cells
  coloured, identifiers as text, amounts as numbers with their currency's decimals.
- ``Summary``: rows per status, money per source currency with the control totals
  (valid = sent + not sent) and one line saying whether they reconcile.
- ``Run`` (when run information is given): field / value.

No cell is ever a formula: every text is written with ``write_string`` (never ``write``,
which would turn ``=HYPERLINK(...)`` in a recipient's name into a live formula), and the
workbook options switch xlsxwriter's own conversions off as a second guard. The Results
sheet is streamed (xlsxwriter ``constant_memory``), so 100,000 rows need little memory.
The cell writers are in ``sheet.xlsx``; ``sheet.results_input`` reads a workbook back.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import xlsxwriter
from xlsxwriter.exceptions import FileCreateError
from xlsxwriter.format import Format
from xlsxwriter.utility import xl_col_to_name
from xlsxwriter.worksheet import Worksheet

from batchpay import clock
from batchpay.files import replaced_atomically
from batchpay.money import currency_exponent
from batchpay.sheet.columns import (
    AMOUNT_COLUMN,
    IDENTIFIER_COLUMNS,
    TARGET_AMOUNT_COLUMN,
    normalize_header,
)
from batchpay.sheet.outcomes import (
    CONTROL_TOTALS,
    ResultRow,
    ResultsSummary,
    Tally,
)
from batchpay.sheet.xlsx import (
    WORKBOOK_OPTIONS,
    Lines,
    ShortNumber,
    StreamingWorksheet,
    amount_format,
    decimals_of,
    text_width,
    write_text,
)
from batchpay.statuses import FINE_OR_VALID, Status, coloured

RESULT_COLUMNS = ("row", "status", "error", "next_step", "warning", "reference_number",
                  "payout_id",
                  "quote_id", "rate", "fee", "delivered_amount", "total_debit", "quotes_used",
                  "updated_at")
# a result column's value is the ResultRow field of the same name, except:
_RESULT_FIELDS = {"delivered_amount": "target_amount"}
VALIDATE_COLUMNS = ("row", "status", "error", "warning")

RESULTS_SHEET, SUMMARY_SHEET, RUN_SHEET = "Results", "Summary", "Run"
PAYEE_CHANGES_SHEET = "Payee changes"
PLAN_SHEET = "Plan"
_EXCEL_EPOCH = datetime(1899, 12, 30)  # day 0 of Excel's 1900 date system
PAYEE_CHANGES_COLUMNS = ("payee", "row", "payout_ref", "reason", "field", "before", "after",
                         "last paid", "decision")
INPUT_SUFFIX = "_input"

# (fill, font) of each status's tone (statuses.TONES)
_STATUS_COLOURS = coloured({"done": ("#C6EFCE", "#006100"), "not paid": ("#FFC7CE", "#9C0006"),
                            "look again": ("#FFEB9C", "#9C5700"),
                            "under way": ("#DDEBF7", "#1F4E78")})
_RATE_FORMAT = "0.00########"
_WIDTH_SAMPLE_ROWS = 1000  # widths come from the header and the first rows: cheap, and enough
_MIN_WIDTH, _MAX_WIDTH = 8, 60
_DATETIME_WIDTH = 19  # "2026-11-23 06:02:16"
# column widths (characters) one landscape A4 page holds at about 7-point text
_PRINT_WIDTH = 220


# --------------------------------------------------------------------------- writing


def result_headers(input_columns: Sequence[str]) -> list[str]:
    """Input column names as written: one colliding with a result column gets ``_input``.

    A name that already ends in ``_input`` over a result column's name gets one more, so
    that ``input_column_name`` can always undo it.
    """
    return [name + INPUT_SUFFIX if _is_result_name(name) else name for name in input_columns]


def input_column_name(header: str) -> str:
    """The input column's own name, from its header in the Results sheet."""
    if header.endswith(INPUT_SUFFIX) and _is_result_name(header[: -len(INPUT_SUFFIX)]):
        return header[: -len(INPUT_SUFFIX)]
    return header


def _is_result_name(name: str) -> bool:
    base = normalize_header(name)
    while base.endswith(INPUT_SUFFIX):
        base = base[: -len(INPUT_SUFFIX)]
    return base in RESULT_COLUMNS


def _id_text(value: Any) -> str:
    """An identifier read as a number, written as text that shows what was read.

    A float with more than 15 digits is shown in exponent form on purpose: its last
    digits are already lost, and 19 plausible digits would hide that.
    """
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    if isinstance(value, Decimal) and value == value.to_integral_value():
        return str(value.quantize(Decimal(1)))
    return str(value)


class _Formats:
    """The workbook's cell formats, made once each (xlsxwriter allows ~64,000)."""

    def __init__(self, workbook: xlsxwriter.Workbook) -> None:
        self._workbook = workbook
        self.header = workbook.add_format({"bold": True, "bg_color": "#D9D9D9",
                                           "bottom": 1, "text_wrap": False})
        self.bold = workbook.add_format({"bold": True})
        self.rate = workbook.add_format({"num_format": _RATE_FORMAT})
        self.count = workbook.add_format({"num_format": "#,##0"})
        # identifiers stay text when a fix is typed over them in a spreadsheet
        self.text = workbook.add_format({"num_format": "@"})
        self.datetime = workbook.add_format({"num_format": "yyyy-mm-dd hh:mm:ss"})
        self.attention = workbook.add_format({"bg_color": "#FFF2CC"})  # a row to act on
        self.wrap = workbook.add_format({"text_wrap": True, "valign": "top"})
        self.status: dict[str, Format] = {
            status: workbook.add_format({"bg_color": fill, "font_color": font})
            for status, (fill, font) in _STATUS_COLOURS.items()
        }
        self.good = self.status[Status.COMPLETED]
        self.bad = self.status[Status.FAILED]
        self._amounts: dict[int, Format] = {}
        self._money: dict[tuple[str, int | str], Format] = {}  # (currency, exponent) → format

    def amount(self, decimals: int) -> Format:
        fmt = self._amounts.get(decimals)
        if fmt is None:
            fmt = self._amounts[decimals] = self._workbook.add_format(
                {"num_format": amount_format(decimals)})
        return fmt

    def money(self, value: Decimal | float | int, currency: str) -> Format:
        """The format of an amount: its currency's decimals, more if the value has more."""
        key = (currency, value.as_tuple().exponent if isinstance(value, Decimal) else 0)
        fmt = self._money.get(key)
        if fmt is None:
            decimals = min(max(currency_exponent(currency), decimals_of(value)), 10)
            fmt = self._money[key] = self.amount(decimals)
        return fmt


# Kinds of column, decided once per column rather than per cell.
(_TEXT, _ID, _INPUT_AMOUNT, _NUMBER, _STATUS, _RATE, _SOURCE_MONEY, _TARGET_MONEY,
 _DATETIME) = range(9)
_RESULT_KINDS = {
    "row": _NUMBER, "status": _STATUS, "rate": _RATE, "fee": _SOURCE_MONEY,
    "total_debit": _SOURCE_MONEY, "delivered_amount": _TARGET_MONEY, "quotes_used": _NUMBER,
    "updated_at": _DATETIME,
}


def _input_kind(name: str) -> int:
    canonical = normalize_header(name)
    if canonical in IDENTIFIER_COLUMNS:
        return _ID
    if canonical == AMOUNT_COLUMN:
        return _INPUT_AMOUNT
    if canonical == TARGET_AMOUNT_COLUMN:
        return _TARGET_MONEY
    return _TEXT


def write_results(path: Path, *, input_columns: Sequence[str], rows: Iterable[ResultRow],
                  result_columns: Sequence[str] = RESULT_COLUMNS,
                  run_info: Sequence[tuple[str, str]] | None = None,
                  payee_changes: Sequence[Mapping[str, Any]] = (),
                  plan_lines: Sequence[tuple[str, str]] = (),
                  banner: str = "", approval: bool = False) -> ResultsSummary:
    """Write the results workbook to `path` (atomically) and return its Summary figures.

    `payee_changes` are the payee register's findings (other than plainly known payees) as
    the run recorded them; they fill the Payee changes sheet when there are any.

    `rows` is consumed once, in order, and may be a generator: the Results sheet is
    streamed to disk, so memory does not grow with the number of rows. `approval`: runs pay
    only approved plans, and next_step says to plan, never to rerun.
    """
    unknown = [c for c in result_columns if c not in RESULT_COLUMNS]
    if unknown:
        raise ValueError(f"unknown result columns: {unknown}")
    try:
        with replaced_atomically(Path(path)) as partial:
            workbook = xlsxwriter.Workbook(str(partial), WORKBOOK_OPTIONS)
            formats = _Formats(workbook)
            results = workbook.add_worksheet(RESULTS_SHEET, worksheet_class=StreamingWorksheet)
            summary_sheet = workbook.add_worksheet(SUMMARY_SHEET)
            summary = _write_results_sheet(results, formats, input_columns, rows, result_columns,
                                           approval)
            results.set_header("&L" + (banner or "batchpay results").replace("&", "&&")
                               + "&R&P / &N")
            _write_summary_sheet(summary_sheet, formats, summary, banner)
            if run_info is not None:
                _write_run_sheet(workbook.add_worksheet(RUN_SHEET), formats, run_info)
            if payee_changes:
                _write_payee_changes(workbook.add_worksheet(PAYEE_CHANGES_SHEET), formats,
                                     payee_changes)
            if plan_lines:  # a dry run written as a plan for approval: what to approve
                _write_run_sheet(workbook.add_worksheet(PLAN_SHEET), formats, plan_lines)
            results.activate()
            workbook.close()
    except FileCreateError as exc:
        # xlsxwriter wraps the OSError: give the CLI the original (it names path and cause).
        cause = exc.args[0] if exc.args and isinstance(exc.args[0], OSError) else exc
        raise cause from exc
    return summary


def _write_results_sheet(sheet: Worksheet, formats: _Formats, input_columns: Sequence[str],
                         rows: Iterable[ResultRow],
                         result_columns: Sequence[str], approval: bool = False) -> ResultsSummary:
    headers = result_headers(input_columns) + list(result_columns)
    kinds = [_input_kind(name) for name in input_columns]
    kinds += [_RESULT_KINDS.get(name, _TEXT) for name in result_columns]
    n_inputs = len(input_columns)
    fields = [_RESULT_FIELDS.get(name, name) for name in result_columns]
    if approval:
        fields = ["approval_next_step" if f == "next_step" else f for f in fields]
    widths = [text_width(h) + 2 for h in headers]  # room for the filter button
    for col, header in enumerate(headers):
        write_text(sheet, 0, col, header, formats.header)

    summary = ResultsSummary()
    # Bound once: this loop runs for every cell of up to 100,000 rows.
    write_string, write_num = sheet._write_string, sheet._write_number
    status_formats, money, rate_format = formats.status, formats.money, formats.rate
    text_format, date_format = formats.text, formats.datetime
    r = 0
    for r, result in enumerate(rows, start=1):
        summary.add(result)
        if len(result.inputs) != n_inputs:
            raise ValueError(f"row {result.row}: {len(result.inputs)} input values for "
                             f"{n_inputs} input columns")
        values = list(result.inputs)
        values += [getattr(result, field) for field in fields]
        for col, value in enumerate(values):
            if value is None or value == "":
                continue
            kind = kinds[col]
            if kind == _DATETIME and isinstance(value, str):  # UTC ISO 8601, as a date-time
                try:  # Excel's serial day number, computed here: write_datetime is slow
                    serial = (clock.parse(value).replace(tzinfo=None)
                              - _EXCEL_EPOCH).total_seconds() / 86400
                except ValueError:
                    write_text(sheet, r, col, value)
                else:
                    write_num(r, col, serial, date_format)
                continue
            if isinstance(value, str):
                fmt = status_formats.get(value) if kind == _STATUS else (
                    text_format if kind == _ID else None)
                if value[:3] == "<r>":
                    write_text(sheet, r, col, value, fmt)
                else:
                    write_string(r, col, value, fmt)
            elif kind == _ID or isinstance(value, bool) \
                    or not isinstance(value, Decimal | int | float):
                write_text(sheet, r, col, _id_text(value), text_format if kind == _ID else None)
            elif kind in (_INPUT_AMOUNT, _SOURCE_MONEY):
                write_num(r, col, ShortNumber(value), money(value, result.source_currency))
            elif kind == _TARGET_MONEY:
                write_num(r, col, ShortNumber(value), money(value, result.target_currency))
            elif kind == _RATE:
                write_num(r, col, ShortNumber(value), rate_format)
            else:
                write_num(r, col, ShortNumber(value))
            if r <= _WIDTH_SAMPLE_ROWS:
                width = text_width(value) if isinstance(value, str) else len(str(value)) + 3
                if width > widths[col]:
                    widths[col] = width
    last_row = r

    for col, width in enumerate(widths):
        if kinds[col] == _DATETIME:  # its cells are numbers shown as dates: wide enough, or ###
            width = max(width, _DATETIME_WIDTH)
        widths[col] = min(max(width + 1, _MIN_WIDTH), _MAX_WIDTH)
        sheet.set_column(col, col, widths[col], text_format if kinds[col] == _ID else None)
    # the header, and the payout_ref when it is the first column, stay in sight
    sheet.freeze_panes(1, 1 if input_columns and
                       normalize_header(input_columns[0]) == "payout_ref" else 0)
    sheet.autofilter(0, 0, last_row, len(headers) - 1)
    if "status" in result_columns and last_row:
        _highlight_attention(sheet, formats, n_inputs + list(result_columns).index("status"),
                             last_row, len(headers) - 1)
    _print_setup(sheet, widths, keep_first=bool(input_columns) and
                 normalize_header(input_columns[0]) == "payout_ref")
    return summary


def _highlight_attention(sheet: Worksheet, formats: _Formats, status_col: int, last_row: int,
                         last_col: int) -> None:
    """Rows whose status needs the operator get a light fill (the status cell keeps its
    colour): a conditional format, so a status typed over stays right."""
    from xlsxwriter.utility import xl_range

    cell = f"${xl_col_to_name(status_col)}2"
    fine = ",".join(f'{cell}<>"{s}"' for s in ("", *sorted(FINE_OR_VALID)))  # same text each time
    ranges = [xl_range(1, 0, last_row, status_col - 1)] if status_col else []
    if status_col < last_col:
        ranges.append(xl_range(1, status_col + 1, last_row, last_col))
    if not ranges:
        return
    sheet.conditional_format(ranges[0], {"type": "formula", "criteria": f"=AND({fine})",
                                         "format": formats.attention,
                                         "multi_range": " ".join(ranges)})


def _print_setup(sheet: Worksheet, widths: Sequence[float] = (),
                 keep_first: bool = False) -> None:
    """Printed for the auditor: A4 landscape, the header on every page, and text no smaller
    than about 7 points: as many pages wide as that takes (a results sheet has some 30
    columns; squeezed onto one page they print at 4 points), each page starting with the
    payout_ref column so that every printed line can be told."""
    sheet.set_landscape()
    sheet.set_paper(9)  # A4
    pages = max(1, math.ceil(sum(widths) / _PRINT_WIDTH))
    sheet.fit_to_pages(pages, 0)
    sheet.repeat_rows(0)
    if pages > 1 and keep_first:
        sheet.repeat_columns(0)


def _write_summary_sheet(sheet: Worksheet, formats: _Formats, summary: ResultsSummary,
                         banner: str = "") -> None:
    lines = Lines(sheet)
    if banner:  # a sandbox or a dry run: said before any figure
        lines.write((banner, formats.bad))
        lines.write()
    problems = summary.problems
    verdict = "reconcile" if not problems else "DO NOT reconcile: " + "; ".join(problems)
    lines.write(("Control totals", formats.bold),
                (verdict, formats.good if not problems else formats.bad))
    lines.write(CONTROL_TOTALS)
    lines.write()

    lines.write(("Rows by status", formats.bold))
    lines.write(("status", formats.header), ("rows", formats.header))
    for status, count in summary.ordered_counts():
        lines.write((status, formats.status.get(status)), (count, formats.count))
    lines.write(("total", formats.bold), (summary.rows, formats.count))
    lines.write()

    lines.write(("Money by source currency", formats.bold))
    lines.write(*((h, formats.header) for h in
                  ("source_currency", "rows of", "rows", "amount", "fee", "total_debit")))
    for currency in sorted(summary.currencies):
        totals = summary.currencies[currency]
        money = formats.amount(currency_exponent(currency))
        groups: list[tuple[str, Tally]] = [
            (status, totals.by_status[status])
            for status in (*Status, *sorted(set(totals.by_status) - set(Status)))
            if status in totals.by_status
        ]
        valid, sent, not_sent = totals.valid, totals.sent, totals.not_sent
        groups += [("valid", valid), ("sent", sent), ("not sent", not_sent)]
        for label, tally in groups:
            lines.write(currency or "(none)", label, (tally.rows, formats.count),
                        (tally.amount, _wide(formats, money, tally.amount, currency)),
                        (tally.fee, _wide(formats, money, tally.fee, currency)),
                        (tally.total_debit, _wide(formats, money, tally.total_debit, currency)))
        rows_diff = valid.rows - sent.rows - not_sent.rows
        amount_diff = valid.amount - sent.amount - not_sent.amount
        lines.write(currency or "(none)", "valid - sent - not sent",
                    (rows_diff, formats.count),
                    (amount_diff, _wide(formats, money, amount_diff, currency)))
    lines.write()

    lines.write(("Target amounts", formats.bold))
    lines.write(*((h, formats.header) for h in
                  ("source_currency", "target_currency", "rows of", "target_amount")))
    for currency in sorted(summary.currencies):
        totals = summary.currencies[currency]
        for label, tally in (("sent", totals.sent),
                             (Status.COMPLETED, totals._combined([Status.COMPLETED]))):
            for target in sorted(tally.target):
                value = tally.target[target]
                lines.write(currency or "(none)", target, label,
                            (value, formats.money(value, target)))
        asked = totals.valid.asked  # invoice rows: what they ask, sent or not (validate too)
        for target in sorted(asked):
            lines.write(currency or "(none)", target, "asked by invoice rows",
                        (asked[target], formats.money(asked[target], target)))

    _write_invoices(lines, formats, summary)
    sheet.set_column(0, 0, 18)
    sheet.set_column(1, 1, 24)
    sheet.set_column(2, 7, 18)


def _write_invoices(lines: Lines, formats: _Formats, summary: ResultsSummary) -> None:
    """Invoice rows (target_amount): asked, delivered and overpaid in the target currency."""
    if not any(t.valid.invoices for t in summary.currencies.values()):
        return
    lines.write()
    lines.write(("Invoices (target_amount rows)", formats.bold))
    lines.write(*((h, formats.header) for h in
                  ("source_currency", "target_currency", "rows of", "invoices", "asked",
                   "delivered", "overpaid", "debit incl. fees")))
    for currency in sorted(summary.currencies):
        totals = summary.currencies[currency]
        for label, tally in (("sent", totals.sent), ("not sent", totals.not_sent)):
            for target in sorted(tally.asked):
                debit = tally.invoice_debit
                lines.write(currency, target, label, (tally.invoices, formats.count),
                            *((v, formats.money(v, target)) for v in (
                                tally.asked[target], tally.delivered.get(target, Decimal(0)),
                                tally.overpaid.get(target, Decimal(0)))),
                            (debit, formats.money(debit, currency)))


def _wide(formats: _Formats, money: Format, value: Decimal, currency: str) -> Format:
    # An INVALID row's amount may carry more decimals than its currency: show them all.
    return money if decimals_of(value) <= currency_exponent(currency) \
        else formats.money(value, currency)


def _write_run_sheet(sheet: Worksheet, formats: _Formats,
                     run_info: Sequence[tuple[str, str]]) -> None:
    lines = Lines(sheet)
    lines.write(("field", formats.header), ("value", formats.header))
    for name, value in run_info:
        lines.write(str(name), (str(value), formats.wrap))
    sheet.set_column(0, 0, 28)
    sheet.set_column(1, 1, 80, formats.wrap)
    # a field and its value on the same page: both columns on one page wide, wrapped text
    sheet.set_paper(9)
    sheet.fit_to_pages(1, 0)
    sheet.repeat_rows(0)


def _write_payee_changes(sheet: Worksheet, formats: _Formats,
                         changes: Sequence[Mapping[str, Any]]) -> None:
    """One line per changed field (one per row when no field changed), in sheet order."""
    lines = Lines(sheet)
    lines.write(*((name, formats.header) for name in PAYEE_CHANGES_COLUMNS))
    for change in changes:
        fields = change.get("fields") or [["", "", ""]]
        for name, before, after in fields:
            lines.write(str(change["payee"]), int(change["row"]), str(change["payout_ref"]),
                        str(change["reason"]), name, before, after, str(change.get("last_paid") or ""),
                        " - ".join(filter(None, (str(change["decision"]),
                                                 change.get("confirmed_by")))))
    sheet.freeze_panes(1, 0)
    for col, width in enumerate((16, 6, 16, 18, 16, 24, 24, 40, 9)):
        sheet.set_column(col, col, width)
