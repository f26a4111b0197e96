"""xlsxwriter primitives every workbook batchpay writes shares (results, template, plan).

No cell is ever a formula: text is written with ``write_string`` (never ``write``, which
would turn ``=HYPERLINK(...)`` into a live formula), and ``WORKBOOK_OPTIONS`` switch
xlsxwriter's own conversions off as a second guard. Numbers are written in their shortest
form, and a streamed worksheet writes plain rows in one go.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

from xlsxwriter.format import Format
from xlsxwriter.utility import xl_col_to_name
from xlsxwriter.worksheet import Worksheet

WORKBOOK_OPTIONS = {
    "constant_memory": True,
    "strings_to_formulas": False,
    "strings_to_numbers": False,
    "strings_to_urls": False,
}


class ShortNumber(float):
    """A float that xlsxwriter writes in its shortest form.

    xlsxwriter writes numbers with ``{:.16G}``, which turns 9.95 into 9.949999999999999;
    ``repr`` gives the shortest text that reads back as the same float, so an amount
    typed as 9.95 is 9.95 in the file too.
    """

    __slots__ = ()

    def __format__(self, spec: str) -> str:
        value = float(self)
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value))  # "2", not "2.0": readers take "2.0" for a float
        return repr(value)


class StreamingWorksheet(Worksheet):  # type: ignore[misc]  # xlsxwriter ships no types
    """A constant_memory worksheet that serialises plain rows in one go, about twice as fast.

    xlsxwriter spends most of a 100,000-row write building each cell's XML through several
    calls. This writes a row whose cells are plain text and numbers as one string, exactly
    as xlsxwriter would (a test compares the XML byte for byte with the stock class); any
    cell it does not cover (text to escape, rich text, a column format, row formatting)
    goes through xlsxwriter's own ``_write_cell``.
    """

    _COLUMN_NAMES = tuple(xl_col_to_name(col) for col in range(256))
    # Text that xlsxwriter would escape or mark as whitespace-preserving.
    _NOT_PLAIN = re.compile(r"[&<>\x00-\x08\x0b-\x1f\ufffe\uffff]|_x[0-9a-fA-F]{4}_|^\s|\s$")

    def _write_single_row(self, current_row_num: int = 0) -> None:
        row_num: int = self.previous_row  # type: ignore[has-type]
        cells = self.table.get(row_num)
        if (not cells or row_num in self.row_info or row_num in self.comments
                or self.excel_version != 2007):
            super()._write_single_row(current_row_num)
            return
        self.previous_row = current_row_num
        names, not_plain, column_info = self._COLUMN_NAMES, self._NOT_PLAIN, self.col_info
        ref_row = str(row_num + 1)
        parts = [f'<row r="{ref_row}">']
        for col_num in sorted(cells):
            cell = cells[col_num]
            kind = cell.__class__.__name__
            style = "" if cell.format is None else f' s="{cell.format._get_xf_index()}"'
            if col_num < len(names) and (cell.format is not None or col_num not in column_info):
                if kind == "String" and not not_plain.search(cell.string):
                    parts.append(f'<c r="{names[col_num]}{ref_row}"{style} t="inlineStr">'
                                 f"<is><t>{cell.string}</t></is></c>")
                    continue
                if kind == "Number":
                    parts.append(f'<c r="{names[col_num]}{ref_row}"{style}>'
                                 f"<v>{cell.number:.16G}</v></c>")
                    continue
            self.fh.write("".join(parts))
            parts.clear()
            self._write_cell(row_num, col_num, cell)
        parts.append("</row>")
        self.fh.write("".join(parts))
        self.table.clear()


def decimals_of(value: Decimal | float | int) -> int:
    if isinstance(value, Decimal):
        exp = value.as_tuple().exponent
        return -exp if isinstance(exp, int) and exp < 0 else 0
    return 0


def amount_format(decimals: int) -> str:
    return "#,##0" + ("." + "0" * decimals if decimals else "")


def text_width(text: str) -> int:
    """Columns a text takes in a spreadsheet, roughly."""
    # CJK characters take two columns in Excel's default font.
    return sum(2 if ord(ch) >= 0x2E80 else 1 for ch in text)


def write_text(sheet: Worksheet, row: int, col: int, text: str,
               cell_format: Format | None = None) -> None:
    """Write `text` as a literal text cell, whatever it looks like.

    In constant_memory mode xlsxwriter copies a string that starts with ``<r>`` and ends
    with ``</r>`` into the XML unescaped (it takes it for its own rich text); such a text
    is written as three plain runs instead, which reads back as the same text.
    """
    if text.startswith("<r>") and text.endswith("</r>"):
        if cell_format is None:
            sheet.write_rich_string(row, col, text[:1], text[1:3], text[3:])
        else:
            sheet.write_rich_string(row, col, text[:1], text[1:3], text[3:], cell_format)
    else:
        sheet.write_string(row, col, text, cell_format)


def write_number(sheet: Worksheet, row: int, col: int, value: Decimal | float | int,
                 cell_format: Format | None = None) -> None:
    """Write a number (Decimal money is converted only here, at the last byte)."""
    if isinstance(value, Decimal) and not value.is_finite():
        sheet.write_string(row, col, str(value), cell_format)
        return
    sheet.write_number(row, col, ShortNumber(value), cell_format)


class Lines:
    """Writes a sheet top to bottom, one line of cells at a time (constant_memory needs
    rows in order): text as literal text, numbers as numbers, a cell as (value, format)."""

    def __init__(self, sheet: Worksheet) -> None:
        self.sheet = sheet
        self.row = 0

    def write(self, *cells: tuple[Any, Format | None] | Any) -> None:
        for col, cell in enumerate(cells):
            value, fmt = cell if isinstance(cell, tuple) else (cell, None)
            if value is None or value == "":
                continue
            if isinstance(value, str):
                write_text(self.sheet, self.row, col, value, fmt)
            else:
                write_number(self.sheet, self.row, col, value, fmt)
        self.row += 1
