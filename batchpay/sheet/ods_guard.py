"""Look inside an .ods (OpenDocument spreadsheet: LibreOffice's own format) before calamine
parses it: the same refusals and the same bounds as for an .xlsx (`xlsx_guard`).

An .ods is a zip whose content.xml holds every sheet. Its rows and cells carry repeat counts
(`table:number-rows-repeated`, `table:number-columns-repeated`): LibreOffice writes a million
repeated empty rows below a formatted table as one tag, and a parser expands a repeated cell
that holds a value. So content.xml is streamed once through expat (no DTD: refused), and each
sheet's rectangle is measured as a parser fills it: up to its last row and column that hold
something, with every repeat counted. The same pass finds hidden rows (`table:visibility`) and
formula cells whose value is missing or an error, which calamine would show as a plain value.
"""

from __future__ import annotations

import zipfile
import zlib
from dataclasses import dataclass, field
from typing import Any
from xml.parsers import expat

from batchpay.errors import InputError
from batchpay.sheet.limits import DEFAULT_LIMITS, SheetLimits
from batchpay.sheet.xlsx_cells import CellIssues
from batchpay.sheet.xlsx_guard import (
    CHUNK,
    REBUILD_HINT,
    XML_SUFFIXES,
    check_entries,
    scan_part,
)

_TABLE = "urn:oasis:names:tc:opendocument:xmlns:table:1.0"
_OFFICE = "urn:oasis:names:tc:opendocument:xmlns:office:1.0"
_CALCEXT = "urn:org:documentfoundation:names:experimental:calc:xmlns:calcext:1.0"
_SEP = " "
T = f"{_TABLE}{_SEP}"
_VALUE_ATTRIBUTES = {f"{_OFFICE}{_SEP}{name}" for name in (
    "value", "date-value", "time-value", "boolean-value", "string-value")}


@dataclass
class SheetFindings:
    """What one sheet of a workbook holds besides its values, for the reader."""

    hidden: set[int] = field(default_factory=set)  # row numbers (from 1) hidden or filtered
    issues: CellIssues = field(default_factory=dict)  # formula without value, error value


class _Measure:
    """expat handlers: each sheet's extent, hidden rows and formula problems."""

    def __init__(self, name: str, limits: SheetLimits) -> None:
        self.name, self.limits = name, limits
        self.sheets: dict[str, SheetFindings] = {}
        self.sheet, self.findings = "", SheetFindings()
        self.depth_in_cell, self.content, self.repeat_cells = 0, False, 1
        self.error = False
        self.shown: list[str] = []
        self.row_index, self.rows, self.columns, self.cells = 0, 0, 0, 0
        self.row_repeat, self.row_hidden = 1, False
        self.column, self.row_width, self.row_cells = 0, 0, 0

    def start(self, tag: str, attrs: dict[str, str]) -> None:
        if self.depth_in_cell:
            self.depth_in_cell += 1
            self.content = True  # <text:p> and the like: the cell shows something
            return
        if tag == T + "table-cell" or tag == T + "covered-table-cell":
            self.depth_in_cell = 1
            self.repeat_cells = _count(attrs.get(T + "number-columns-repeated"))
            self.content = any(key in _VALUE_ATTRIBUTES for key in attrs)
            formula = T + "formula" in attrs
            self.error = attrs.get(f"{_CALCEXT}{_SEP}value-type") == "error"
            self.shown = []
            if formula and not self.content and not self.error:
                self._issue("is a formula with no saved value")
            self.content = self.content or formula
        elif tag == T + "table-row":
            self.row_repeat = _count(attrs.get(T + "number-rows-repeated"))
            self.row_hidden = attrs.get(T + "visibility", "visible") != "visible"
            self.column, self.row_width, self.row_cells = 0, 0, 0
        elif tag == T + "table":
            self.sheet = attrs.get(T + "name", "")
            self.findings = self.sheets.setdefault(self.sheet, SheetFindings())
            self.row_index, self.rows, self.columns, self.cells = 0, 0, 0, 0

    def text(self, data: str) -> None:
        if self.error and len(self.shown) < 8:
            self.shown.append(data[:40])

    def _issue(self, problem: str) -> None:
        if self.row_repeat == 1 and self.repeat_cells <= self.limits.max_columns:
            for offset in range(self.repeat_cells):
                self.findings.issues[(self.row_index, self.column + offset)] = problem

    def end(self, tag: str) -> None:
        if self.depth_in_cell > 1:
            self.depth_in_cell -= 1
            return
        if self.depth_in_cell == 1:
            self.depth_in_cell = 0
            if self.error:  # the value shown (#DIV/0!): calamine reads the number behind it
                self._issue(f"shows the error {''.join(self.shown).strip() or 'value'}")
            self.column += self.repeat_cells
            if self.content:
                self.row_width = self.column
                self.row_cells += self.repeat_cells
        elif tag == T + "table-row":
            if self.row_width:
                self.rows = self.row_index + self.row_repeat
                self.columns = max(self.columns, self.row_width)
                self.cells += self.row_cells * self.row_repeat
                where = f"Sheet {self.sheet!r} of {self.name}"
                self.limits.check(where, rows=self.rows, columns=self.columns, cells=self.cells)
                if self.row_hidden:
                    self.findings.hidden.update(
                        range(self.row_index + 1, self.row_index + self.row_repeat + 1))
            self.row_index += self.row_repeat
            if self.row_index > 2**31:  # empty rows past any spreadsheet's end: a bomb
                raise InputError(f"Sheet {self.sheet!r} of {self.name} declares "
                                 f"{self.row_index:,} rows; no spreadsheet has that many.",
                                 hint=REBUILD_HINT)


def _count(text: str | None) -> int:
    try:
        return max(1, int(text)) if text else 1
    except ValueError:
        return 1


def _refuse_dtd(*_: Any) -> None:
    raise InputError("DOCTYPE")


def inspect_ods(path: Any, name: str, limits: SheetLimits = DEFAULT_LIMITS
                ) -> dict[str, SheetFindings]:
    """Refuse a hostile, broken or too large .ods; each sheet's findings otherwise."""
    try:
        with zipfile.ZipFile(path) as archive:
            infos = archive.infolist()
            check_entries(infos, name, "content.xml",
                          "is not an OpenDocument spreadsheet (a zip file without content.xml)")
            for info in infos:
                if info.filename != "content.xml" and info.filename.lower().endswith(XML_SUFFIXES):
                    scan_part(archive, info, name, set(), limits, name, is_sheet=False)
            return _measure_content(archive, name, limits)
    except (zipfile.BadZipFile, zlib.error, EOFError) as exc:
        raise InputError(f"{name} is damaged ({exc}).", hint=REBUILD_HINT) from None
    except (RuntimeError, NotImplementedError) as exc:  # encrypted entries, unknown compression
        raise InputError(f"{name} cannot be opened ({exc}).", hint=REBUILD_HINT) from None


def _measure_content(archive: zipfile.ZipFile, name: str, limits: SheetLimits
                     ) -> dict[str, SheetFindings]:
    measure = _Measure(name, limits)
    parser = expat.ParserCreate(namespace_separator=_SEP)
    parser.StartElementHandler = measure.start
    parser.EndElementHandler = measure.end
    parser.CharacterDataHandler = measure.text
    parser.StartDoctypeDeclHandler = _refuse_dtd
    parser.EntityDeclHandler = _refuse_dtd
    parser.buffer_text = True
    try:
        with archive.open("content.xml") as part:
            while chunk := part.read(CHUNK):
                parser.Parse(chunk, False)
            parser.Parse(b"", True)
    except InputError as exc:
        if exc.message != "DOCTYPE":
            raise
        raise InputError(f"{name} contains an XML DOCTYPE/ENTITY declaration (content.xml); "
                         "no spreadsheet program writes one, so batchpay refuses the file as "
                         "possibly hostile.", hint=REBUILD_HINT) from None
    except expat.ExpatError as exc:
        raise InputError(f"{name} is damaged: content.xml is not valid XML ({exc}).",
                         hint=REBUILD_HINT) from None
    return measure.sheets
