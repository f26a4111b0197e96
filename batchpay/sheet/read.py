"""Read a payout sheet (.xlsx, .xls, .ods or .csv) exactly, or refuse it with one line.

Cells keep their type: text stays text ("NA" too, leading zeros too), numbers become int
or Decimal (via the float's shortest repr, never float arithmetic). An identifier typed
as a number with more than 15 digits has already lost digits inside the spreadsheet, so
the cell is marked with an error that names it and says how to fix it. Problems with a
cell are kept per row and column (`SheetRow.errors`); problems with the file raise
InputError before anything is parsed.
"""

from __future__ import annotations

import codecs
import csv
import datetime as dt
import gc
import hashlib
import io
import re
import zipfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from decimal import Decimal
from itertools import repeat
from pathlib import Path
from typing import Any

from batchpay.errors import InputError, UsageError
from batchpay.sheet.columns import (
    COLUMNS_BY_NAME,
    IDENTIFIER_COLUMNS,
    ONE_OF,
    normalize_header,
)
from batchpay.sheet.limits import DEFAULT_LIMITS, SheetLimits
from batchpay.sheet.ods_guard import SheetFindings, inspect_ods
from batchpay.sheet.xls_guard import inspect_xls
from batchpay.sheet.xlsx_cells import CellIssues, formula_problems, zero_padded_cells
from batchpay.sheet.xlsx_extent import column_letters
from batchpay.sheet.xlsx_guard import Inspection, inspect_xlsx

HIDDEN = "hidden"  # the error key of a row hidden in the sheet
DEFAULT_SHEET = "Payouts"
MAX_EXACT_DIGITS = 15  # a spreadsheet number keeps 15 significant digits, no more
_ZIP_MAGIC = b"PK\x03\x04"
_OLE_MAGIC = b"\xd0\xcf\x11\xe0"  # .xls, and a password-protected .xlsx


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
    if data.startswith((_ZIP_MAGIC, _OLE_MAGIC)):
        if encoding is not None:
            raise UsageError(f"--encoding {encoding} was given, but {path.name} is a workbook, "
                             "whose texts carry their own encoding.",
                             hint="Leave --encoding out for a workbook; it is for CSV files.")
        name, grid, issues, names, hidden, part = _read_workbook(path, data, sheet, limits)
    elif path.suffix.lower() in {".csv", ".txt"}:
        if sheet is not None:
            raise InputError(f"--sheet {sheet} was given, but {path.name} is a CSV file "
                             "with no sheets.", hint="Leave --sheet out for a CSV file.")
        (grid, delimiter), issues, names = _read_csv(data, path.name, limits, encoding), {}, []
        name = path.stem
    else:
        raise InputError(
            f"{path.name} is not a spreadsheet batchpay can read.",
            hint="Give a workbook (.xlsx, .xls, .ods) or a .csv file (see `batchpay template`).",
        )
    columns, headers, keep = _header(grid, name, path.name)
    amounts = AmountText(decimal_comma=decimal_comma, ambiguous=delimiter in (";", "\t"))
    rows, by_column = _rows(grid, columns, keep, issues, amounts,
                            (lambda: _zero_padded(data, part, grid)) if part else None)
    if hidden and not include_hidden:
        for row in rows:
            if row.row in hidden:
                row.errors[HIDDEN] = (f"row {row.row} is hidden in the sheet (hidden, or "
                                      "filtered out); unhide it or take it out, or give "
                                      "--include-hidden to pay hidden rows")
    return Sheet(path, name, columns, headers, rows, digest, names,
                 by_column and ByColumn(rows, *by_column))


# --- xlsx --------------------------------------------------------------------------------


def _read_workbook(path: Path, data: bytes, wanted: str | None, limits: SheetLimits
                   ) -> tuple[str, list[list[Any]], CellIssues, list[str], set[int], str | None]:
    """An .xlsx, .ods or .xls: looked into by its guard (refused when hostile or larger than
    `limits`, before calamine allocates anything), then read by calamine. Returns the sheet's
    name, grid, cell issues, the workbook's sheet names, hidden rows and (.xlsx) its part."""
    from python_calamine import CalamineError, CalamineWorkbook, SheetVisibleEnum

    kind = _workbook_kind(data)
    found: Inspection | None = None
    if kind == "xlsx":
        found = inspect_xlsx(io.BytesIO(data), path.name, limits)
    elif kind == "ods":
        by_sheet = inspect_ods(io.BytesIO(data), path.name, limits)
    else:
        by_sheet = inspect_xls(data, path.name, limits)
    try:
        workbook = CalamineWorkbook.from_filelike(io.BytesIO(data))
    except CalamineError as exc:
        raise InputError(f"{path.name} cannot be read as a workbook ({exc}).",
                         hint="Open it in Excel or LibreOffice, save it as a new .xlsx, and "
                              "try again.") from None
    names = list(workbook.sheet_names)
    visible = [m.name for m in workbook.sheets_metadata
               if m.visible == SheetVisibleEnum.Visible]
    name = _pick_sheet(names, wanted, path.name, visible)
    try:
        grid = workbook.get_sheet_by_name(name).to_python(skip_empty_area=False)
    except CalamineError as exc:
        raise InputError(f"Sheet {name!r} of {path.name} cannot be read ({exc}).") from None
    finally:
        workbook.close()
    if found is None:
        findings = by_sheet.get(name, SheetFindings())
        return name, grid, findings.issues, names, findings.hidden, None
    part = found.parts.get(name)
    issues = formula_problems(io.BytesIO(data), part) if part in found.flagged else {}
    return name, grid, issues, names, found.hidden.get(part or "", set()), part


def _workbook_kind(data: bytes) -> str:
    """xls (an OLE compound file), ods (a zip with content.xml and no xl/workbook.xml) or
    xlsx; the guard of the kind found says what is wrong with a file that is none of them."""
    if data.startswith(_OLE_MAGIC):
        return "xls"
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            entries = set(archive.namelist())
    except (zipfile.BadZipFile, OSError):
        return "xlsx"
    return "ods" if "content.xml" in entries and "xl/workbook.xml" not in entries else "xlsx"


def _zero_padded(data: bytes, part: str, grid: list[list[Any]]) -> CellIssues:
    """Cells holding a number that its format shows with leading zeros: the zeros are not in
    the cell. Searched only when an identifier column holds a number (`_rows`), and applied
    to those columns only."""
    issues: CellIssues = {}
    for (r_index, c_index), digits in zero_padded_cells(io.BytesIO(data), part).items():
        if r_index >= 1 and r_index < len(grid) and c_index < len(grid[r_index]):
            value = _other(grid[r_index][c_index])
            issues[(r_index, c_index)] = (
                f"is the number {value}, shown as {str(value).zfill(digits)} by the cell's "
                "format: the leading zeros are not in the cell; format the column as Text and "
                "type the number again")
    return issues


def _pick_sheet(names: list[str], wanted: str | None, file_name: str,
                visible: list[str] | None = None) -> str:
    if not names:
        raise InputError(f"{file_name} has no sheets.")
    if wanted is None:  # never a hidden sheet, unless --sheet names it
        shown = [n for n in names if visible is None or n in visible]
        if not shown:
            raise InputError(f"{file_name} has only hidden sheets.",
                             hint="Unhide the sheet to pay, or name it with --sheet.")
        for name in shown:
            if name.strip().lower() == DEFAULT_SHEET.lower():
                return name
        return shown[0]
    if wanted in names:
        return wanted
    for name in names:
        if name.strip().lower() == wanted.strip().lower():
            return name
    raise InputError(
        f"{file_name} has no sheet named {wanted!r}.",
        hint="Its sheets are: " + ", ".join(repr(n) for n in names) + ".",
    )


# --- csv ---------------------------------------------------------------------------------


def _read_csv(data: bytes, file_name: str, limits: SheetLimits = DEFAULT_LIMITS,
              encoding: str | None = None) -> tuple[list[list[Any]], str]:
    """The cells as text, and the field separator found in the header line.

    Lines and separators are counted in the bytes before anything is decoded or parsed (an
    upper bound: a quoted separator counts too), so a file of millions of tiny fields is
    refused in a fraction of a second; the parsed rows are then measured exactly."""
    text = decode_csv(data, file_name, encoding)
    newline = text.find("\n")
    header = text[:newline if newline != -1 else len(text)]
    delimiter = max(",;\t", key=header.count)
    lines = text.count("\n") + (not text.endswith("\n"))
    limits.check(file_name, rows=lines, columns=0, cells=text.count(delimiter) + lines)
    # one long cell is one INVALID row (too long for its column), not a refused file
    csv.field_size_limit(max(csv.field_size_limit(), limits.max_bytes))
    try:
        grid = [list(record) for record in csv.reader(io.StringIO(text, newline=""),
                                                      delimiter=delimiter)]
    except csv.Error as exc:
        raise InputError(f"{file_name} is not a valid CSV file ({exc}).") from None
    limits.check(file_name, rows=len(grid), columns=max(map(len, grid), default=0))
    return grid, delimiter


ENCODING_HINT = ("Give the file's encoding with --encoding (e.g. --encoding big5 for "
                 "Traditional Chinese, --encoding utf-16 for Excel's 'Unicode Text'), or save it "
                 "from Excel as 'CSV UTF-8 (Comma delimited)'.")
_BOMS = ((codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF32_LE, "utf-32"),
         (codecs.BOM_UTF32_BE, "utf-32"), (codecs.BOM_UTF16_LE, "utf-16"),
         (codecs.BOM_UTF16_BE, "utf-16"))
# private use: no name, bank or city is written with one; they are what another encoding's
# bytes become when read as GB18030 (Big5's 朝代 as 朝\ue610ゅ)
_PRIVATE_USE = re.compile("[\ue000-\uf8ff\U000f0000-\U000ffffd\U00100000-\U0010fffd]")


# Big5's most common characters (lead bytes A4-A7) are kana, Greek or Cyrillic in GB18030:
# 黃志強 becomes 独в眏. No Chinese name or bank writes one next to a Chinese character.
_FOREIGN = "\u0370-\u03ff\u0400-\u04ff\u3040-\u30ff"
_MIXED_SCRIPTS = re.compile(f"[\u4e00-\u9fff][{_FOREIGN}]|[{_FOREIGN}][\u4e00-\u9fff]")


def decode_csv(data: bytes, file_name: str, encoding: str | None = None) -> str:
    """The text of a CSV file: in `encoding` when given (--encoding), else by its byte order
    mark, else UTF-8, else GB18030 (what Excel on a Chinese Windows saves as "CSV").

    Whatever the encoding, the text must hold no private-use character and encode back to
    the very bytes read: a file in another encoding that merely decodes without an error
    (Big5 read as GB18030) is refused, never paid with garbled names."""
    if encoding is not None:
        try:
            name = codecs.lookup(encoding).name
        except LookupError:
            raise UsageError(f"--encoding {encoding} is not an encoding Python knows.",
                             hint="Use e.g. utf-8, gb18030, big5 or utf-16.") from None
        candidates = [name]
    else:
        bom = next((codec for mark, codec in _BOMS if data.startswith(mark)), None)
        if bom is None and data[:65536].count(b"\x00") > 64:  # not text, or UTF-16 unmarked
            raise InputError(f"{file_name} is not a text (CSV) file.",
                             hint="Give an .xlsx workbook or a .csv file (see `batchpay "
                                  "template`). " + ENCODING_HINT)
        candidates = [bom] if bom else ["utf-8", "gb18030"]
    for name in candidates:
        try:
            text = data.decode(name)
        except UnicodeDecodeError:
            continue
        _require_faithful(text, data, name, file_name, round_trip=encoding is None)
        return text
    if encoding is not None:
        raise InputError(f"{file_name} is not {encoding} text.", hint=ENCODING_HINT)
    raise InputError(f"{file_name} is neither UTF-8 nor GB18030 text.", hint=ENCODING_HINT)


def _require_faithful(text: str, data: bytes, encoding: str, file_name: str,
                      round_trip: bool) -> None:
    """Refuse text that holds a private-use character or (`round_trip`: the encoding was
    guessed) does not encode back to `data`."""
    shown = "UTF-8" if encoding in ("utf-8", "utf-8-sig") else encoding.upper()
    odd = None if text.isascii() else _PRIVATE_USE.search(text)
    if odd:
        line = text.count("\n", 0, odd.start()) + 1
        raise InputError(
            f"{file_name} does not read as {shown} text: line {line} holds U+{ord(odd.group()):04X}, "
            "a private-use character, so the file is in another encoding.", hint=ENCODING_HINT)
    if encoding == "gb18030" and round_trip and (mixed := _MIXED_SCRIPTS.search(text)):
        line = text.count("\n", 0, mixed.start()) + 1
        raise InputError(
            f"{file_name} does not read as GB18030 text: line {line} mixes Chinese with other "
            f"scripts ({mixed.group()!r}), as Big5 bytes read as GB18030 do.", hint=ENCODING_HINT)
    if round_trip and encoding not in ("utf-8", "utf-8-sig", "utf-16", "utf-32") \
            and text.encode(encoding, errors="replace") != data:
        raise InputError(f"{file_name} does not read as {shown} text: its bytes do not survive "
                         "being read and written back.", hint=ENCODING_HINT)


# --- headers and rows --------------------------------------------------------------------


def _header(grid: list[list[Any]], sheet_name: str, file_name: str
            ) -> tuple[list[str], list[str], list[int]]:
    """The columns to keep: their normalized names, header texts and indexes in the grid."""
    first = [_as_text(cell) or "" for cell in grid[0]] if grid else []
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
            if all(_is_empty(r[index]) for r in grid[1:] if index < len(r)):
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
        if any(normalize_header(_as_text(c) or "") in COLUMNS_BY_NAME for c in row):
            return (f"{where}: headers not found in row 1; they seem to be in row {index}, "
                    "below a title row.")
    found = next((t for t in (_as_text(c) for c in grid[0]) if t), None) if grid else None
    if found:
        return f"{where}: headers not found in row 1 (it holds {found[:60]!r}, no column name)."
    return f"{where}: headers not found: row 1 is empty."


def _rows(grid: list[list[Any]], columns: list[str], keep: list[int], issues: CellIssues,
          amounts: AmountText, padded: Callable[[], CellIssues] | None = None
          ) -> tuple[list[SheetRow], tuple[list[list[Any]], list[bool]] | None]:
    """The data rows, converted column by column (fast), blank rows left out; and, when none
    was, their values by column with which columns hold only texts (`ByColumn`).

    `padded` finds the number cells whose format shows leading zeros (`_zero_padded`); it
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
        values, problems, numbers, texts = _convert_column(name, cells, amounts)
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


_TEXT_OR_NONE = {str, type(None)}
# Every Unicode white space (non-breaking and ideographic spaces too) and zero-width marks.
_STRIP = (" \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f\x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004"
          "\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
          "\u200b\u200c\u200d\u2060\ufeff")


def _convert_column(name: str, cells: Sequence[Any], amounts: AmountText
                    ) -> tuple[list[Any], dict[int, str], bool, bool]:
    """Values of one column as read, problems by position (0 = first data row), whether a
    cell holds a number, and whether every value is a str or None (known without a look)."""
    problems: dict[int, str] = {}
    if not any(cells) and set(map(type, cells)) <= _TEXT_OR_NONE:
        # an empty column (calamine reads "" for empty)
        return [None] * len(cells), problems, False, True
    if name not in ONE_OF:
        # all text (the usual case): stripped, "" as None. str.strip refuses any other cell,
        # so the cells' types are not looked up first, in a pass of their own
        try:
            texts = list(map(str.strip, cells, repeat(_STRIP)))
        except TypeError:
            pass
        else:
            return ([text or None for text in texts] if "" in texts else texts), problems, False, True
    kinds = set(map(type, cells))
    numbers = bool(kinds & {int, float})
    if name in IDENTIFIER_COLUMNS:
        def other(position: int, cell: Any) -> Any:
            value, problem = _identifier(cell)
            if problem:
                problems[position] = problem
            return value
    elif name in ONE_OF:  # amounts: numbers, and text that is a number, become Decimal
        if kinds == {float}:  # every cell a number: converted in C, as `amount` does
            return list(map(Decimal, map(repr, cells))), problems, True, False

        def amount(position: int, cell: Any) -> Any:
            if type(cell) is float:
                return Decimal(repr(cell))
            if type(cell) is not str:
                return _other(cell)
            value, problem = amounts.read(cell.strip(_STRIP))
            if problem:
                problems[position] = problem
            return value
        return ([amount(position, cell) for position, cell in enumerate(cells)], problems,
                numbers, False)
    else:
        def other(position: int, cell: Any) -> Any:
            return _other(cell)
    values = [(cell.strip(_STRIP) or None) if type(cell) is str else other(position, cell)
              for position, cell in enumerate(cells)]
    return values, problems, numbers, False


_PLAIN_AMOUNT = re.compile(r"\d+(?:\.\d+)?")
_POINT_THOUSANDS = re.compile(r"\d+\.\d{3}")  # 50.000: fifty, or fifty thousand?
_COMMA_DECIMAL = re.compile(r"\d{1,3}(?:\.\d{3})+(?:,\d+)?|\d+(?:,\d+)?")
AMBIGUOUS = ("is ambiguous in a file separated by semicolons or tabs: use a point for "
             "decimals and no thousands separators, e.g. 12500.00 (or run with "
             "--decimal-comma if the file writes 1.250.000,00)")


@dataclass(frozen=True)
class AmountText:
    """How an amount written as text is read: never by guessing its decimal separator."""

    decimal_comma: bool = False  # --decimal-comma: "1.250.000,00" and "12,5"
    ambiguous: bool = False  # a ;- or tab-separated CSV: "12,500" and "50.000" are refused

    def read(self, text: str) -> tuple[Any, str | None]:
        """(value, problem): a Decimal for a number, else the text for the schema to judge."""
        if not text:
            return None, None
        if self.decimal_comma:
            if _COMMA_DECIMAL.fullmatch(text):
                return Decimal(text.replace(".", "").replace(",", ".")), None
            if _PLAIN_AMOUNT.fullmatch(text):  # "12.5" with --decimal-comma: a point?
                return text, (f"{text!r} has a point, but --decimal-comma reads a comma as "
                              "the decimal separator and points as thousands (1.250.000,00)")
            return text, None
        if self.ambiguous and ("," in text or _POINT_THOUSANDS.fullmatch(text)):
            return text, f"{text!r} {AMBIGUOUS}"
        if _PLAIN_AMOUNT.fullmatch(text):
            return Decimal(text), None
        return text, None


def _identifier(cell: Any) -> tuple[Any, str | None]:
    if type(cell) is not float:
        return _other(cell), None
    value = _number(cell)
    digits = len(str(abs(value))) if isinstance(value, int) else len(value.as_tuple().digits)
    if digits > MAX_EXACT_DIGITS:
        # kept as the float it is, so that no report shows it as 19 plausible digits
        return cell, (
            f"is a number with {digits} digits, but a spreadsheet keeps only "
            f"{MAX_EXACT_DIGITS}, so the last digits are already lost (it shows {cell:.6G}); "
            "format the column as Text and type the number again"
        )
    return value, None


def _number(value: float) -> int | Decimal:
    if value.is_integer() and abs(value) < 2**63:
        return int(value)
    return Decimal(repr(value))


def _other(cell: Any) -> Any:
    if cell is None:
        return None
    if isinstance(cell, str):
        return cell.strip(_STRIP) or None
    if isinstance(cell, bool):
        return "TRUE" if cell else "FALSE"
    if isinstance(cell, int):
        return cell
    if isinstance(cell, float):
        return _number(cell)
    if isinstance(cell, dt.datetime | dt.date | dt.time):
        return cell.isoformat()
    return str(cell).strip(_STRIP) or None


def _is_empty(cell: Any) -> bool:
    return cell is None or (isinstance(cell, str) and not cell.strip())


def _as_text(cell: Any) -> str | None:
    value = _other(cell)
    return None if value is None else str(value)
