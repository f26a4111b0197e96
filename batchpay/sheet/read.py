"""Read a payout sheet (.xlsx, .xls, .ods or .csv) exactly, or refuse it with one line.

Cells keep their type: text stays text ("NA" too, leading zeros too), numbers become int
or Decimal (via the float's shortest repr, never float arithmetic). An identifier typed
as a number with more than 15 digits has already lost digits inside the spreadsheet, so
the cell is marked with an error that names it and says how to fix it. Problems with a
cell are kept per row and column (`SheetRow.errors`); problems with the file raise
InputError before anything is parsed.

A workbook is read by `workbook_reader` (behind its guard), a CSV file by `csv_reader`; the
cells are turned into values a column at a time by `cell_values`, then into rows here.
"""

from __future__ import annotations

import gc
import hashlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from batchpay.errors import InputError, UsageError
from batchpay.sheet.cell_values import AmountText, cell_text, convert_column, is_empty_cell
from batchpay.sheet.columns import COLUMNS_BY_NAME, IDENTIFIER_COLUMNS, normalize_header
from batchpay.sheet.csv_reader import read_csv
from batchpay.sheet.limits import DEFAULT_LIMITS, SheetLimits
from batchpay.sheet.workbook_reader import OLE_MAGIC, ZIP_MAGIC, read_workbook, zero_padded
from batchpay.sheet.xlsx_cells import CellIssues
from batchpay.sheet.xlsx_extent import column_letters

HIDDEN = "hidden"  # the error key of a row hidden in the sheet


@dataclass(slots=True)
class SheetRow:
    row: int  # row number in the sheet (the header is row 1)
    # aligned with Sheet.columns: str, int, Decimal or None (empty); an identifier number
    # that lost digits stays the float it is (its error says so)
    values: list[Any]
    errors: dict[str, str] = field(default_factory=dict)  # column → message (cell-level)


@dataclass(frozen=True)
class ByColumn:
    """The values of a sheet's rows by column, as the reader made them before it turned them
    into rows: the checks start from them rather than turn 100,000 rows back into columns
    and look up every cell's type again. They stand for `rows` only (`Sheet.values_by_column`)."""

    rows: list[SheetRow]
    values: list[list[Any]]  # aligned with Sheet.columns, one value a row
    texts: list[bool]  # per column: every value is a str or None


@dataclass
class Sheet:
    path: Path
    sheet_name: str
    columns: list[str]  # normalized names, input order, unknown ones included
    headers: list[str]  # the header texts as written
    rows: list[SheetRow]
    sha256: str
    sheet_names: list[str] = field(default_factory=list)
    by_column: ByColumn | None = field(default=None, repr=False, compare=False)

    def values_by_column(self) -> ByColumn | None:
        """The rows' values by column as the reader made them; None when `rows` is not the
        list it made (replaced since, as a results workbook's input part is) or has changed
        length, or when the reader made none (a blank row was left out)."""
        found = self.by_column
        if found is None or found.rows is not self.rows or not self.columns \
                or len(found.values) != len(self.columns) \
                or any(len(values) != len(self.rows) for values in found.values):
            return None
        return found

    def column_values(self, name: str) -> list[Any]:
        """One column's values in row order (None for every row when the column is absent)."""
        if name not in self.columns:
            return [None] * len(self.rows)
        index = self.columns.index(name)
        return [r.values[index] for r in self.rows]


@contextmanager
def paused_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector while millions of cells are created.

    None of these objects form cycles, yet each collection rescans all of them. Measured by
    tests/benchmarks/bench_intake.py at 50,000 rows (CPU seconds, paused vs running):
    read_sheet 0.91 vs 1.06, validate_sheet 0.43 vs 0.66, `batchpay validate` 1.6 vs 2.0.

    When the pause ends, what it made is moved straight into the oldest generation (frozen,
    then unfrozen): left in the youngest, the first collections after the pause would walk
    every cell again, twice (0.15 s of `batchpay validate` at 100,000 rows). A full
    collection still sees it. Inside a frozen heap (`engine.runner.frozen_heap`) it stays
    frozen with the rest, until that heap is unfrozen.
    """
    was_enabled = gc.isenabled()
    frozen_before = gc.get_freeze_count()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.freeze()
            if not frozen_before:
                gc.unfreeze()
            gc.enable()


def read_sheet(path: Path, *, sheet: str | None = None, limits: SheetLimits = DEFAULT_LIMITS,
               decimal_comma: bool = False, include_hidden: bool = False,
               encoding: str | None = None) -> Sheet:
    """Read the sheet at `path`; InputError (exit 2) when it cannot be read safely, or when
    it is larger than `limits` (measured before anything is parsed).

    Amounts written as text are read as numbers with a decimal point and no thousands
    separators; in a `;`- or tab-separated CSV (where Europe writes `12,50`) a comma, or a
    point before exactly three digits, is ambiguous and the cell is refused, unless
    `decimal_comma` says the file writes `1.250.000,00`.

    A row hidden in the sheet (by hand, or filtered out) carries an error unless
    `include_hidden`: an operator who filters a list to "pay these" is never paid the rest;
    a hidden sheet is never the one picked by default.

    `encoding` (--encoding) is a CSV file's text encoding; without it a CSV is read by its
    byte order mark, else as UTF-8, else GB18030, and refused when that reading is not
    faithful (`decode_csv`)."""
    with paused_gc():
        return _read_sheet(Path(path), sheet, limits, decimal_comma, include_hidden, encoding)


def _read_sheet(path: Path, sheet: str | None, limits: SheetLimits, decimal_comma: bool,
                include_hidden: bool = False, encoding: str | None = None) -> Sheet:
    if not path.exists():
        raise InputError(f"File not found: {path}", hint="Check the name and the folder.")
    if not path.is_file():
        raise InputError(f"{path} is a folder, not a spreadsheet.")
    size = path.stat().st_size
    if size > limits.max_bytes:
        raise InputError(
            f"{path.name} is {size / 2**20:,.1f} MB, over the "
            f"{limits.max_bytes / 2**20:,.0f} MB limit.",
            hint="Split the payouts into smaller sheets, or raise the max_file_mb setting.",
        )
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    delimiter = None  # a CSV's field separator
    hidden: set[int] = set()
    part: str | None = None  # the worksheet's part in an .xlsx
    if data.startswith((ZIP_MAGIC, OLE_MAGIC)):
        if encoding is not None:
            raise UsageError(f"--encoding {encoding} was given, but {path.name} is a workbook, "
                             "whose texts carry their own encoding.",
                             hint="Leave --encoding out for a workbook; it is for CSV files.")
        name, grid, issues, names, hidden, part = read_workbook(path, data, sheet, limits)
    elif path.suffix.lower() in {".csv", ".txt"}:
        if sheet is not None:
            raise InputError(f"--sheet {sheet} was given, but {path.name} is a CSV file "
                             "with no sheets.", hint="Leave --sheet out for a CSV file.")
        (grid, delimiter), issues, names = read_csv(data, path.name, limits, encoding), {}, []
        name = path.stem
    else:
        raise InputError(
            f"{path.name} is not a spreadsheet batchpay can read.",
            hint="Give a workbook (.xlsx, .xls, .ods) or a .csv file (see `batchpay template`).",
        )
    columns, headers, keep = _header(grid, name, path.name)
    amounts = AmountText(decimal_comma=decimal_comma, ambiguous=delimiter in (";", "\t"))
    rows, by_column = _rows(grid, columns, keep, issues, amounts,
                            (lambda: zero_padded(data, part, grid)) if part else None)
    if hidden and not include_hidden:
        for row in rows:
            if row.row in hidden:
                row.errors[HIDDEN] = (f"row {row.row} is hidden in the sheet (hidden, "
                                      "filtered out, or too low to see); unhide it or take "
                                      "it out, or give --include-hidden to pay hidden rows")
    return Sheet(path, name, columns, headers, rows, digest, names,
                 by_column and ByColumn(rows, *by_column))


# --- headers and rows --------------------------------------------------------------------


def _header(grid: list[list[Any]], sheet_name: str, file_name: str
            ) -> tuple[list[str], list[str], list[int]]:
    """The columns to keep: their normalized names, header texts and indexes in the grid."""
    first = [cell_text(cell) or "" for cell in grid[0]] if grid else []
    if not any(normalize_header(h) in COLUMNS_BY_NAME for h in first):
        raise InputError(_no_header_message(grid, sheet_name, file_name),
                         hint="Row 1 must be the headers (payout_ref, recipient_type, ...): "
                              "delete any title rows above them, or start from `batchpay template`.")
    width = max(map(len, grid))
    columns: list[str] = []
    headers: list[str] = []
    keep: list[int] = []
    seen: dict[str, int] = {}
    for index in range(width):
        text = first[index] if index < len(first) else ""
        name = normalize_header(text)
        if not name:
            if all(is_empty_cell(r[index]) for r in grid[1:] if index < len(r)):
                continue  # an empty column, e.g. left of the table
            name = f"column_{column_letters(index)}"
        if name in seen:
            if name in COLUMNS_BY_NAME:
                raise InputError(
                    f"Two columns are named {name} ({column_letters(seen[name])} and "
                    f"{column_letters(index)}) in sheet {sheet_name!r}.",
                    hint="Keep one of them, or rename the other.")
            suffix = 2
            while f"{name}_{suffix}" in seen:
                suffix += 1
            name = f"{name}_{suffix}"
        seen[name] = index
        columns.append(name)
        headers.append(text)
        keep.append(index)
    return columns, headers, keep


def _no_header_message(grid: list[list[Any]], sheet_name: str, file_name: str) -> str:
    where = f"Sheet {sheet_name!r} of {file_name}" if sheet_name != Path(file_name).stem else file_name
    for index, row in enumerate(grid[1:20], start=2):
        if any(normalize_header(cell_text(c) or "") in COLUMNS_BY_NAME for c in row):
            return (f"{where}: headers not found in row 1; they seem to be in row {index}, "
                    "below a title row.")
    found = next((t for t in (cell_text(c) for c in grid[0]) if t), None) if grid else None
    if found:
        return f"{where}: headers not found in row 1 (it holds {found[:60]!r}, no column name)."
    return f"{where}: headers not found: row 1 is empty."


def _rows(grid: list[list[Any]], columns: list[str], keep: list[int], issues: CellIssues,
          amounts: AmountText, padded: Callable[[], CellIssues] | None = None
          ) -> tuple[list[SheetRow], tuple[list[list[Any]], list[bool]] | None]:
    """The data rows, converted column by column (fast), blank rows left out; and, when none
    was, their values by column with which columns hold only texts (`ByColumn`).

    `padded` finds the number cells whose format shows leading zeros (`zero_padded`); it
    is called only when an identifier column holds a number."""
    body = grid[1:]
    width = max(keep) + 1 if keep else 0
    if min(map(len, body), default=width) < width:  # CSV lines may be short
        body = [r + [None] * (width - len(r)) if len(r) < width else r for r in body]
    by_column = list(zip(*body, strict=False)) if body else []
    converted: list[list[Any]] = []
    errors: dict[int, dict[str, str]] = {}
    found_padded: CellIssues | None = None
    only_texts: list[bool] = []
    for c_index, name in zip(keep, columns, strict=True):
        cells = by_column[c_index] if c_index < len(by_column) else (None,) * len(body)
        values, problems, numbers, texts = convert_column(name, cells, amounts)
        only_texts.append(texts)
        if name in COLUMNS_BY_NAME and issues:
            # a formula without a saved value, or an error value: the cell counts as unread
            for (r_index, column_index), issue in issues.items():
                if column_index == c_index and r_index >= 1:
                    problems[r_index - 1] = issue
                    values[r_index - 1] = None
        if numbers and padded is not None and name in IDENTIFIER_COLUMNS:
            if found_padded is None:
                found_padded = padded()
            for (r_index, column_index), issue in found_padded.items():
                if column_index == c_index:  # a number whose zeros only its format shows
                    problems.setdefault(r_index - 1, issue)
        letters = column_letters(c_index)
        for position, problem in problems.items():
            errors.setdefault(position, {})[name] = f"cell {letters}{position + 2} {problem}"
        converted.append(values)
    blank = (None,) * len(converted)
    lines = zip(*converted, strict=True)
    if not errors:  # the usual case, in one comprehension
        rows = [SheetRow(number, list(line), {})
                for number, line in enumerate(lines, start=2) if line != blank]
    else:
        rows = []
        for position, line in enumerate(lines):
            row_errors = errors.get(position)
            if row_errors or line != blank:
                rows.append(SheetRow(position + 2, list(line), row_errors or {}))
    return rows, ((converted, only_texts) if len(rows) == len(body) else None)
