"""A results workbook read back: its input columns as the payout sheet they came from (for
``rerun``, with the operator's corrections), and every row with the status it had."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from batchpay.errors import InputError
from batchpay.sheet.limits import DEFAULT_LIMITS, SheetLimits
from batchpay.sheet.outcomes import ResultRow
from batchpay.sheet.read import Sheet, SheetRow, read_sheet
from batchpay.sheet.results import (
    RESULT_COLUMNS,
    RESULTS_SHEET,
    SUMMARY_SHEET,
    input_column_name,
)


def is_results_workbook(path: Path) -> bool:
    """Whether `path` is a results workbook batchpay wrote (sheets Results and Summary, no
    Payouts sheet), so that `plan` reads it as `rerun` does. Only the workbook's sheet list
    is looked at; anything unreadable is left to the reader, which says what is wrong."""
    import zipfile

    from batchpay.sheet.xlsx_guard import sheet_parts

    if Path(path).suffix.lower() not in (".xlsx", ".xlsm"):
        return False
    try:
        with zipfile.ZipFile(path) as archive:
            info = archive.getinfo("xl/workbook.xml")
            if info.file_size > 1_000_000:  # a workbook's sheet list is a few KB
                return False
            names = set(sheet_parts(archive))
    except Exception:  # noqa: BLE001 - not ours to judge: the reader refuses it properly
        return False
    return {RESULTS_SHEET, SUMMARY_SHEET} <= names and "Payouts" not in names


def read_results_sheet(path: Path, *, sheet: str | None = None,
                       limits: SheetLimits = DEFAULT_LIMITS, include_hidden: bool = False
                       ) -> Sheet:
    """The input part of a results workbook's Results sheet, as a payout sheet, for ``rerun``.

    The sheet is read by the same reader as a payout sheet (the operator may have
    corrected cells in it). Result columns are dropped, input column names lose the
    ``_input`` a collision gave them, and every row keeps the row number of the original
    sheet (from the ``row`` column), so that messages still point at the operator's sheet.
    """
    read = read_sheet(Path(path), sheet=sheet or RESULTS_SHEET, limits=limits,
                      include_hidden=include_hidden)
    missing = [name for name in ("row", "status") if name not in read.columns]
    if missing:
        raise InputError(
            f"Sheet {read.sheet_name!r} of {Path(path).name} has no {' or '.join(missing)} "
            "column, so it is not a batchpay results workbook.",
            hint="Give the results workbook a run wrote (…-results-….xlsx), unchanged "
                 "apart from the cells you corrected.")
    row_at = read.columns.index("row")
    # the input columns come before `row` (a result column's name among them has `_input`);
    # a workbook of an older batchpay may have other result columns after it
    inputs = list(range(row_at))
    rows: list[SheetRow] = []
    for line in read.rows:
        number = line.values[row_at]
        if not isinstance(number, int) or number < 2:
            raise InputError(
                f"Row {line.row} of sheet {read.sheet_name!r} has no row number in its row "
                f"column (it holds {number!r}).",
                hint="Each row must keep the row number the run wrote; delete rows you "
                     "added by hand, or copy them into a new payout sheet instead.")
        errors = {input_column_name(name): message for name, message in line.errors.items()
                  if name not in RESULT_COLUMNS}
        rows.append(SheetRow(number, [line.values[i] for i in inputs], errors))
    return dataclasses.replace(
        read, columns=[input_column_name(read.columns[i]) for i in inputs],
        headers=[input_column_name(read.headers[i]) for i in inputs], rows=rows)


def read_results(path: Path) -> tuple[list[str], list[ResultRow]]:
    """Read a results workbook back: the input columns and every row with its inputs and the
    ``row``, ``status`` and ``reference_number`` it had; ``error`` holds what the reader finds
    wrong in the cells now (e.g. an account number retyped as a number), not the run's error.
    """
    sheet = read_results_sheet(path)
    full = read_sheet(Path(path), sheet=RESULTS_SHEET)
    at = {name: i for i, name in enumerate(full.columns)}
    rows: list[ResultRow] = []
    for line, original in zip(sheet.rows, full.rows, strict=True):
        ref = original.values[at["reference_number"]] if "reference_number" in at else None
        status = original.values[at["status"]]
        rows.append(ResultRow(
            row=line.row, inputs=line.values, status=str(status or ""),
            reference_number=str(ref or ""),
            error="; ".join(f"{name}: {message}" for name, message in line.errors.items()),
        ))
    return sheet.columns, rows
