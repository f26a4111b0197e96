"""The empty payout sheet an operator starts from (``batchpay template``).

Everything comes from the one column table (batchpay.sheet.columns): the header row, which
columns are formatted as Text (identifiers: a spreadsheet keeps only 15 digits of a
number), the dropdowns, and the "How to fill" sheet. The .xlsx is deterministic (a fixed
creation date), so the committed template can be compared with a fresh one.
"""

from __future__ import annotations

import csv
import datetime as dt
from pathlib import Path

import xlsxwriter
from xlsxwriter.worksheet import Worksheet

from batchpay.errors import UsageError
from batchpay.files import replaced_atomically
from batchpay.sheet.columns import COLUMNS, Column
from batchpay.sheet.xlsx import text_width

DATA_SHEET = "Payouts"
HELP_SHEET = "How to fill"
VALIDATED_ROWS = 10_000  # rows 2..10,001 get the dropdowns and Text formats
# A fixed date: the template's bytes then depend on batchpay's version only.
CREATED = dt.datetime(2026, 1, 1, 0, 0, 0)
_HELP_HEADERS = ("column", "required", "rule", "how to fill", "example", "default", "choices")
_MESSAGE_LIMIT = 255  # Excel's limit for a data validation's input message


def write_template(path: Path) -> Path:
    """Write the template to `path` (.xlsx or .csv by its suffix); never over an existing file."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".xlsx", ".csv"):
        raise UsageError(f"Cannot write a template as {path.name}: the name must end in "
                         ".xlsx or .csv.", hint="For example: --out payouts-november.xlsx")
    if path.exists():
        # A filled sheet is often still called payouts-template.xlsx: never overwrite it.
        raise UsageError(f"{path} already exists; batchpay does not overwrite it.",
                         hint="Give another name with --out, or delete the file first.")
    with replaced_atomically(path) as partial:
        if suffix == ".csv":
            _write_csv(partial)
        else:
            _write_xlsx(partial)
    return path


def _write_csv(path: Path) -> None:
    # utf-8-sig: the byte order mark makes Excel read Chinese text as UTF-8.
    with path.open("w", encoding="utf-8-sig", newline="") as handle:
        csv.writer(handle).writerow([column.name for column in COLUMNS])


def _write_xlsx(path: Path) -> None:
    workbook = xlsxwriter.Workbook(str(path), {
        "strings_to_formulas": False, "strings_to_numbers": False, "strings_to_urls": False})
    workbook.set_properties({"title": "batchpay payout sheet", "created": CREATED})
    header = workbook.add_format({"bold": True, "bg_color": "#D9D9D9", "bottom": 1})
    text = workbook.add_format({"num_format": "@"})
    wrap = workbook.add_format({"text_wrap": True, "valign": "top"})
    top = workbook.add_format({"valign": "top"})
    top_text = workbook.add_format({"valign": "top", "num_format": "@"})

    data = workbook.add_worksheet(DATA_SHEET)
    for col, column in enumerate(COLUMNS):
        data.write_string(0, col, column.name, header)
        width = max(len(column.name) + 3, min(text_width(column.example) + 2, 40))
        data.set_column(col, col, width, text if column.kind == "id" else None)
        _add_validation(data, col, column)
    data.freeze_panes(1, 0)

    guide = workbook.add_worksheet(HELP_SHEET)
    for col, title in enumerate(_HELP_HEADERS):
        guide.write_string(0, col, title, header)
    for row, column in enumerate(COLUMNS, start=1):
        cells = (column.name, column.required_label, column.rule.replace("`", ""), column.help,
                 column.example, column.default or "", ", ".join(column.choices))
        for col, value in enumerate(cells):
            fmt = wrap if col in (2, 3) else (top_text if col == 4 else top)
            guide.write_string(row, col, value, fmt)
    for col, width in enumerate((18, 12, 50, 70, 24, 10, 30)):
        guide.set_column(col, col, width)
    guide.freeze_panes(1, 1)
    data.activate()
    workbook.close()


def _add_validation(sheet: Worksheet, col: int, column: Column) -> None:
    """A dropdown for columns with choices, and the column's help when a cell is selected."""
    options: dict[str, object] = {
        "input_title": column.name[:32],
        "input_message": _shorten(column.help, _MESSAGE_LIMIT),
    }
    if column.choices:
        strict = column.kind == "choice"
        options.update({
            "validate": "list",
            "source": list(column.choices),
            # Currencies and countries beyond the dropdown are allowed: warn, do not stop.
            "error_type": "stop" if strict else "warning",
            "error_title": f"Not a {column.name}",
            "error_message": _shorten(
                f"{column.name} must be one of: {', '.join(column.choices)}." if strict else
                f"Not in the usual list ({', '.join(column.choices)}). Keep it only if it is "
                "a valid ISO code.", _MESSAGE_LIMIT),
        })
    else:
        options["validate"] = "any"
    sheet.data_validation(1, col, VALIDATED_ROWS, col, options)


def _shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
