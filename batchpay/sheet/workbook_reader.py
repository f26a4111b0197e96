"""A workbook payout file (.xlsx, .ods, .xls): looked into by its guard, then read by calamine."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path
from typing import Any

from batchpay.errors import InputError
from batchpay.sheet.cell_values import plain_value
from batchpay.sheet.limits import SheetLimits
from batchpay.sheet.ods_guard import SheetFindings, inspect_ods
from batchpay.sheet.xls_guard import inspect_xls
from batchpay.sheet.xlsx_cells import CellIssues, formula_problems, zero_padded_cells
from batchpay.sheet.xlsx_guard import Inspection, inspect_xlsx

DEFAULT_SHEET = "Payouts"
ZIP_MAGIC = b"PK\x03\x04"
OLE_MAGIC = b"\xd0\xcf\x11\xe0"  # .xls, and a password-protected .xlsx


def read_workbook(path: Path, data: bytes, wanted: str | None, limits: SheetLimits
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
    name = pick_sheet(names, wanted, path.name, visible)
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
    if data.startswith(OLE_MAGIC):
        return "xls"
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            entries = set(archive.namelist())
    except (zipfile.BadZipFile, OSError):
        return "xlsx"
    return "ods" if "content.xml" in entries and "xl/workbook.xml" not in entries else "xlsx"


def zero_padded(data: bytes, part: str, grid: list[list[Any]]) -> CellIssues:
    """Cells holding a number that its format shows with leading zeros: the zeros are not in
    the cell. Searched only when an identifier column holds a number (`_rows`), and applied
    to those columns only."""
    issues: CellIssues = {}
    for (r_index, c_index), digits in zero_padded_cells(io.BytesIO(data), part).items():
        if r_index >= 1 and r_index < len(grid) and c_index < len(grid[r_index]):
            value = plain_value(grid[r_index][c_index])
            issues[(r_index, c_index)] = (
                f"is the number {value}, shown as {str(value).zfill(digits)} by the cell's "
                "format: the leading zeros are not in the cell; format the column as Text and "
                "type the number again")
    return issues


def pick_sheet(names: list[str], wanted: str | None, file_name: str,
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
