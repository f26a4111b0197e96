"""Look inside an .xls (Excel 97-2003: a BIFF stream in an OLE compound file) before calamine
parses it: the same refusals and the same bounds as for an .xlsx (`xlsx_guard`).

Accounting systems in China still export .xls. A parser builds the rectangle from the cells'
own row and column numbers (16 bits each: one cell at row 65,536, column 65,536 asks for 4
billion), so the Workbook stream's records are walked once, before calamine: every cell
record's position, each sheet's declared DIMENSIONS, the ROW records' hidden flag, and the
FORMULA/BOOLERR records that hold an error value. The OLE container is read by olefile,
which checks its sector chains; the file's size is already bounded (`max_file_mb`).
"""

from __future__ import annotations

import io
import struct

from batchpay.errors import InputError
from batchpay.sheet.limits import DEFAULT_LIMITS, SheetLimits
from batchpay.sheet.ods_guard import SheetFindings
from batchpay.sheet.xlsx_guard import REBUILD_HINT

PROTECTED = "is a password-protected workbook."
PROTECTED_HINT = "Remove the password (File > Info > Protect Workbook), save, and try again."
_BOF, _EOF, _BOUNDSHEET, _FILEPASS = 0x0809, 0x000A, 0x0085, 0x002F
_DIMENSIONS, _ROW, _FORMULA, _BOOLERR = 0x0200, 0x0208, 0x0006, 0x0205
_MULRK, _MULBLANK, _SST = 0x00BD, 0x00BE, 0x00FC
# records of one cell: (row, column) are their first four bytes
_CELLS = {0x0203, 0x027E, 0x00FD, 0x0204, 0x00D6, _FORMULA, _BOOLERR}
_ERRORS = {0x00: "#NULL!", 0x07: "#DIV/0!", 0x0F: "#VALUE!", 0x17: "#REF!", 0x1D: "#NAME?",
           0x24: "#NUM!", 0x2A: "#N/A"}


def inspect_xls(data: bytes, name: str, limits: SheetLimits = DEFAULT_LIMITS
                ) -> dict[str, SheetFindings]:
    """Refuse a hostile, broken, protected or too large .xls; each sheet's findings."""
    import olefile

    try:
        ole = olefile.OleFileIO(io.BytesIO(data))
    except (OSError, ValueError, struct.error, IndexError) as exc:
        raise InputError(f"{name} is damaged ({exc}).", hint=REBUILD_HINT) from None
    with ole:
        if ole.exists("EncryptionInfo") or ole.exists("EncryptedPackage"):
            raise InputError(f"{name} {PROTECTED}", hint=PROTECTED_HINT)
        stream = next((s for s in ("Workbook", "Book") if ole.exists(s)), None)
        if stream is None:
            raise InputError(f"{name} is an OLE file without a workbook in it (a Word or "
                             "other Office document?).", hint="Give the payout sheet: .xlsx, "
                             ".xls, .ods or .csv.")
        try:
            workbook = ole.openstream(stream).read()
        except (OSError, ValueError, struct.error, IndexError) as exc:
            raise InputError(f"{name} is damaged ({exc}).", hint=REBUILD_HINT) from None
    return _walk(memoryview(workbook), name, limits, biff8=stream == "Workbook")


def _walk(stream: memoryview, name: str, limits: SheetLimits, biff8: bool
          ) -> dict[str, SheetFindings]:
    names: dict[int, str] = {}  # BOF offset → sheet name, from the BOUNDSHEET records
    found: dict[str, SheetFindings] = {}
    findings, where, sheet = SheetFindings(), name, False
    rows = columns = cells = 0
    offset, size = 0, len(stream)
    unpack = struct.unpack_from
    while offset + 4 <= size:
        kind, length = unpack("<HH", stream, offset)
        body = offset + 4
        if body + length > size:
            raise InputError(f"{name} is damaged: a record runs past the end of the workbook.",
                             hint=REBUILD_HINT)
        if kind in _CELLS and sheet and length >= 4:
            row, column = unpack("<HH", stream, body)
            rows, columns, cells = max(rows, row + 1), max(columns, column + 1), cells + 1
            if kind == _FORMULA and length >= 14 and unpack("<H", stream, body + 12)[0] == 0xFFFF \
                    and stream[body + 6] == 2:
                findings.issues[(row, column)] = \
                    f"shows the error {_ERRORS.get(stream[body + 8], 'value')}"
            elif kind == _BOOLERR and length >= 8 and stream[body + 7] == 1:
                findings.issues[(row, column)] = \
                    f"shows the error {_ERRORS.get(stream[body + 6], 'value')}"
        elif kind == _MULRK and sheet and length >= 6:
            row, first = unpack("<HH", stream, body)
            last = unpack("<H", stream, body + length - 2)[0]
            rows, columns = max(rows, row + 1), max(columns, last + 1)
            cells += max(0, last - first + 1)
        elif kind == _ROW and sheet and length >= 16:
            row = unpack("<H", stream, body)[0]
            if unpack("<H", stream, body + 12)[0] & 0x20:  # fDyZero: the row is hidden
                findings.hidden.add(row + 1)
        elif kind == _DIMENSIONS and sheet and length >= 8:
            # one past the last row and column; BIFF8 numbers rows with 32 bits, BIFF5 16
            last_row, _, last_column = (unpack("<IHH", stream, body + 4) if biff8
                                        else unpack("<HHH", stream, body + 2))
            limits.check(where, rows=last_row, columns=last_column)
        elif kind == _SST and length >= 8:
            texts = unpack("<I", stream, body + 4)[0]  # a parser sets aside room for each
            if texts > limits.max_cells:
                raise InputError(f"{name} declares {texts:,} texts; batchpay reads at most "
                                 f"{limits.max_cells:,} cells, so it refuses the file unread.",
                                 hint=REBUILD_HINT)
        elif kind == _BOF and length >= 4:
            sheet = unpack("<H", stream, body + 2)[0] == 0x0010
            if sheet:
                where = f"Sheet {names.get(offset, '?')!r} of {name}"
                findings = found.setdefault(names.get(offset, ""), SheetFindings())
                rows = columns = cells = 0
        elif kind == _BOUNDSHEET and length >= 8:
            names[unpack("<I", stream, body)[0]] = _sheet_name(stream[body + 6:body + length],
                                                               biff8)
        elif kind == _FILEPASS:
            raise InputError(f"{name} {PROTECTED}", hint=PROTECTED_HINT)
        if sheet and (rows > limits.max_rows or columns > limits.max_columns
                      or max(rows * columns, cells) > limits.max_cells):
            limits.check(where, rows=rows, columns=columns, cells=cells)
        offset = body + length
    return found


def _sheet_name(raw: memoryview, biff8: bool) -> str:
    """A BOUNDSHEET record's name: a length, then (BIFF8) a flag for 16-bit characters."""
    if not raw:
        return ""
    count = raw[0]
    if not biff8:
        return bytes(raw[1:1 + count]).decode("cp1252", "replace")
    wide = len(raw) > 1 and raw[1] & 1
    text = bytes(raw[2:2 + count * (2 if wide else 1)])
    return text.decode("utf-16-le" if wide else "latin-1", "replace")

