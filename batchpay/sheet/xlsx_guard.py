"""Look inside an .xlsx before any parser trusts it, and find formula cells without a value.

An .xlsx file is a zip of XML parts. Before calamine parses it we refuse, with one line:
- a zip with absurd entries (too many, too big once uncompressed, or compressed at a
  ratio no spreadsheet reaches): a zip bomb would exhaust memory or time;
- any XML part with a DOCTYPE (and so ENTITY) declaration: Excel never writes one, and
  it is how "billion laughs" and external-entity attacks start. defusedxml parses each
  part's prolog only (a DTD can appear nowhere else), so the scan stays fast.
Every entry is read through once, so its CRC proves the declared sizes were honest.

A parser allocates the rectangle a worksheet spans, so the same pass measures it (`Extent`):
the declared `<dimension>`, the row tags, every reference in column AA or beyond and every
row number with more digits than the rows seen so far (rare in a payout sheet, so the
searches stay fast literal scans). Only `<c r=…>`, `<row r=…>` and `<dimension ref=…>` count
(LibreOffice's pageOrder="downThenOver" merely ends in r="). A worksheet is wherever the
workbook's relationships put it (xl/data/sheet1.xml too), and any part holding a <sheetData>
is measured as one; each piece searched holds whole tags, written plainly (`plain_markup`:
single quotes, spaces around =, characters by number, a namespace prefix are all legal XML). A worksheet beyond `SheetLimits` stops the scan, before
calamine is asked to load anything; a large one whose first megabytes, scaled to its size,
already reach 1.5 times a bound is refused then (a 250 MB sheet of 10 million cells in half
a second, not after streaming it all).

calamine gives a formula cell's saved value but shows a formula without one, or an error
value (#DIV/0!), as an empty cell. While reading each worksheet we look for `<f` and
`t="e"`; only a sheet that has them is searched cell by cell (`formula_problems`).
"""

from __future__ import annotations

import posixpath
import re
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import IO, Any

from defusedxml import DefusedXmlException
from defusedxml.ElementTree import DefusedXMLParser, ParseError, fromstring

from batchpay.errors import InputError
from batchpay.sheet.limits import DEFAULT_LIMITS, SheetLimits

MAX_ENTRIES = 10_000
MAX_TOTAL_UNCOMPRESSED = 2 * 2**30  # 2 GiB: Excel's 1,048,576-row limit stays well below
MAX_RATIO = 200  # typical worksheets compress 5-30x; a bomb compresses 1,000x and more
RATIO_FLOOR = 2**20  # small parts (styles, empty sheets) may compress at any ratio
CHUNK = 2**20

XML_SUFFIXES = (".xml", ".rels", ".vml")
_FORMULA_OR_ERROR = re.compile(rb'<f[\s>/]|\st="e"')
REBUILD_HINT = "Open it in Excel or LibreOffice, save it as a new .xlsx, and try again."

CellIssues = dict[tuple[int, int], str]  # (row index, column index), both from 0 → message


class _RootReached(Exception):
    """The first element has started: no DOCTYPE can follow, the prolog is clean."""


class _PrologTarget:
    def start(self, tag: str, attrib: dict[str, str]) -> None:
        raise _RootReached

    def end(self, tag: str) -> None:
        pass

    def data(self, data: str) -> None:
        pass

    def close(self) -> None:
        pass


# Only three things say how far a worksheet reaches: `<c r="…">`, `<row r="…">` and
# `<dimension ref="…">`. An attribute *named* r is preceded by white space; LibreOffice's
# pageOrder="downThenOver" or operator="between" merely end in r=" and say nothing.
# one search for both (each is a pass over the part): a cell in column AA or beyond, or a row
# or cell reference with at least N digits, N one more than the rows seen so far
_FAR = {n: re.compile(rb'r="(?:([A-Za-z]{2,})([0-9]*)"|[A-Za-z]?([0-9]{%d,}))' % n)
        for n in range(1, 9)}
_DIMENSION = re.compile(rb'<dimension\s(?:[^>]*?\s)?ref="([^"]*)"')
_RANGE_END = re.compile(r"([A-Za-z]{0,3})([0-9]*)$")
_ATTRIBUTE_START = frozenset(b" ")  # white space is made a space before measuring
NARROW = 26  # columns A-Z: the width assumed for cells in them, whose references are not read
# a worksheet part of more than ESTIMATE_CHUNKS chunks is judged from its first ones too: one
# whose first chunks, scaled to its size, reach ESTIMATE_MARGIN times a bound is refused
ESTIMATE_CHUNKS, ESTIMATE_MARGIN = 2, 1.5
# a run this long without a tag: no spreadsheet writes one (a cell holds 32,767 characters)
MAX_TAG_GAP = 8 * CHUNK


def _named_r(piece: bytes, match: re.Match[bytes]) -> bool:
    """True when the r=" of `match` is an attribute named r, not the end of another name."""
    return match.start() > 0 and piece[match.start() - 1] in _ATTRIBUTE_START


@dataclass
class Extent:
    """How far one worksheet reaches: the rectangle a parser allocates for it, and its cells.

    Measured while the part streams by, with searches that hit only what is rare in a payout
    sheet: references in column AA or beyond (exact), and row numbers with more digits than
    the rows seen so far (exact); a sheet of columns A-Z counts as 26 wide. Rows are also
    counted from the `<row>` tags, and cells without a reference (placed one after another)
    widen the sheet by one column each. The declared `<dimension>` counts too. Each piece
    fed holds whole tags (`_pieces`), written plainly (`plain_markup`)."""

    rows: int = 0
    columns: int = 0
    cells: int = 0  # `<c` tags in sheetData: an upper bound on the cells
    refs: int = 0  # attributes named r (cells' and rows')
    row_tags: int = 0
    declared_rows: int = 0  # the <dimension>: counted, never extrapolated
    declared_columns: int = 0
    data: int = 0  # 0 before <sheetData>, 1 inside, 2 after

    def feed(self, piece: bytes) -> bytes:
        """Measure one piece (whole tags, white space as spaces); returns it as measured:
        with its attributes spelled plainly when some were not (`plain_attributes`)."""
        refs, before_data = piece.count(b' r="'), self.data == 0
        cells = self._sheet_data(piece)  # <col>, <cfRule>... lie outside it
        tags = cells.count(b"<c"), cells.count(b"<row")
        self.refs, self.cells, self.row_tags = (self.refs + refs, self.cells + tags[0],
                                                self.row_tags + tags[1])
        self._references(piece, before_data)
        # a tag without a plain r="…" (fewer than the cell and row tags), a quote, a
        # character by number in a reference: measured again with its attributes plain
        if refs < sum(tags) or b"'" in piece or (b"&" in piece and _ODD_REFERENCE.search(piece)):
            plain = plain_attributes(piece)
            if plain != piece:
                self.refs += plain.count(b' r="') - refs
                self._references(plain, before_data)
                return plain
        return piece

    def _references(self, piece: bytes, before_data: bool) -> None:
        """The declared <dimension> (before <sheetData>), and the references that reach far."""
        if before_data and not self.declared_columns and not self.declared_rows \
                and b"<dimension" in piece and (dimension := _DIMENSION.search(piece)):
            end = _RANGE_END.search(dimension.group(1).decode("ascii", "replace"))
            if end and end.group(1):
                self.declared_columns = column_index(end.group(1).upper()) + 1
            if end and end.group(2):
                self.declared_rows = int(end.group(2))
        for far in _FAR[min(len(str(self.rows)) + 1, 8)].finditer(piece):
            if not _named_r(piece, far):
                continue
            if far.group(1):  # column AA or beyond
                self.columns = max(self.columns, column_index(far.group(1).upper().decode()) + 1)
                self.rows = max(self.rows, int(far.group(2) or 0))
            else:
                self.rows = max(self.rows, int(far.group(3)))

    def _sheet_data(self, piece: bytes) -> bytes:
        """The part of `piece` inside <sheetData>, where the cells are."""
        begin, end = 0, len(piece)
        if self.data == 2:
            return b""
        if self.data == 0:
            at = piece.find(b"<sheetData")
            if at == -1:
                return b""
            closing = piece.find(b">", at)
            if closing > 0 and piece[closing - 1:closing] == b"/":  # <sheetData/>: no cells
                self.data = 2
                return b""
            self.data, begin = 1, at
        if self.data == 1 and (at := piece.find(b"</sheetData", begin)) != -1:
            self.data, end = 2, at
        return piece[begin:end] if (begin, end) != (0, len(piece)) else piece

    def span(self) -> tuple[int, int]:
        """(rows, columns) of the rectangle the sheet spans."""
        unreferenced = max(0, self.cells - (self.refs - self.row_tags))
        return (max(self.rows, self.row_tags, self.declared_rows),
                max(self.columns, NARROW if self.cells else 0, unreferenced,
                    self.declared_columns))

    def check(self, limits: SheetLimits, where: str) -> None:
        rows, columns = self.span()
        limits.check(where, rows=rows, columns=columns, cells=self.cells)

    def extrapolate(self, limits: SheetLimits, where: str, read: int, size: int) -> None:
        """Refuse a large part whose first megabytes already show it far beyond the bounds
        (ESTIMATE_MARGIN times), instead of streaming hundreds of megabytes to be sure."""
        scale = size / read
        rows = int(max(self.rows, self.row_tags) * scale)
        cells = int(self.cells * scale)
        columns = self.span()[1]
        margin = ESTIMATE_MARGIN
        if rows > limits.max_rows * margin or max(rows * columns, cells) > limits.max_cells * margin:
            raise InputError(
                f"{where} spans about {rows:,} rows × {columns:,} columns ({cells:,} cells), "
                f"judged from its first {read / 2**20:,.0f} MB of {size / 2**20:,.0f} MB; "
                f"batchpay reads at most {limits.max_rows:,} rows and {limits.max_cells:,} "
                "cells.", hint="Split the payouts into smaller sheets, or raise the max_rows "
                               "or max_cells setting.")


_SPACES = bytes.maketrans(b"\t\r\n", b"   ")
_PREFIX = re.compile(rb"<([A-Za-z_][\w.-]*):worksheet[\s>]")
# attributes written otherwise than name="value": single quotes, spaces around =, or
# characters given by number (r="&#88;FD1"); XML allows them all, and so do parsers
_ODD_REFERENCE = re.compile(rb'r="[^"<]*&')
_ODD_VALUE = re.compile(rb"""\s*=\s*'([^'<]*)'|\s+=\s*"([^"<]*)"|=\s+"([^"<]*)"|="([^"<]*&#[^"<]*)\"""")
_CHARACTER = re.compile(rb"&#(x[0-9A-Fa-f]{1,6}|[0-9]{1,7});")


def plain_markup(piece: bytes, prefix: bytes = b"") -> bytes:
    """The piece as the searches expect it: white space as spaces, and no namespace prefix
    on the worksheet's tags (`<x:c>` is `<c>` to a parser)."""
    if b"\n" in piece or b"\r" in piece or b"\t" in piece:
        piece = piece.translate(_SPACES)
    if prefix:
        piece = piece.replace(b"<" + prefix + b":", b"<").replace(b"</" + prefix + b":", b"</")
    return piece


def plain_attributes(piece: bytes) -> bytes:
    """The piece with every attribute written otherwise (single quotes, spaces around =,
    characters by number) as name="value", as a parser reads it."""
    return _ODD_VALUE.sub(_plain_value, piece)


def _plain_value(match: re.Match[bytes]) -> bytes:
    value = next(group for group in match.groups() if group is not None)
    return b'="' + _CHARACTER.sub(_character, value).replace(b'"', b"'") + b'"'


def _character(match: re.Match[bytes]) -> bytes:
    number = match.group(1)
    code = int(number[1:], 16) if number[:1] == b"x" else int(number)
    return chr(code).encode("utf-8", "replace") if code < 0x110000 else b"?"


def worksheet_prefix(piece: bytes) -> bytes:
    """The namespace prefix of a worksheet written `<x:worksheet ...>` (b"" without one)."""
    found = _PREFIX.search(piece, 0, 4096)
    return found.group(1) if found else b""


@dataclass
class Inspection:
    """What the guard's one pass over an .xlsx found, for the reader."""

    parts: dict[str, str]  # sheet name → its worksheet part ({} when workbook.xml is unusable)
    flagged: set[str]  # worksheet parts holding formulas or error values
    hidden: dict[str, set[int]]  # worksheet part → its hidden rows (by hand or filtered out)


def inspect_xlsx(path: Any, name: str | None = None,
                 limits: SheetLimits = DEFAULT_LIMITS) -> Inspection:
    """Refuse a hostile or broken .xlsx; what it holds otherwise (`Inspection`).

    `name` is the file name the messages show (an in-memory copy has none of its own).
    Hidden rows (hidden by hand or filtered out: Excel marks both `hidden="1"`) are found in
    the same pass. A worksheet that spans more than `limits`, or more shared strings than
    `limits.max_cells` (read whole when a workbook opens), refuses the file as soon as the
    scan reaches that far.
    """
    name = name or str(getattr(path, "name", path))
    try:
        with zipfile.ZipFile(path) as archive:
            infos = archive.infolist()
            check_entries(infos, name)
            found = Inspection(_sheet_parts_or_none(archive), set(), {})
            sheets = {part: sheet for sheet, part in found.parts.items()}
            for info in infos:
                rows: set[int] = set()
                where = (f"Sheet {sheets[info.filename]!r} of {name}" if info.filename in sheets
                         else f"{name} ({info.filename})")
                if info.filename.lower().endswith(XML_SUFFIXES) and scan_part(
                        archive, info, name, rows, limits, where,
                        is_sheet=info.filename in sheets
                        or info.filename.lower().startswith("xl/worksheets/")):
                    found.flagged.add(info.filename)
                if rows:
                    found.hidden[info.filename] = rows
            return found
    except (zipfile.BadZipFile, zlib.error, EOFError) as exc:
        raise InputError(f"{name} is damaged ({exc}).", hint=REBUILD_HINT) from None
    except (RuntimeError, NotImplementedError) as exc:  # encrypted entries, unknown compression
        raise InputError(f"{name} cannot be opened ({exc}).", hint=REBUILD_HINT) from None


def _sheet_parts_or_none(archive: zipfile.ZipFile) -> dict[str, str]:
    try:
        return sheet_parts(archive)
    except (KeyError, ParseError, DefusedXmlException):
        return {}  # the parser will say what is wrong with the workbook


def check_entries(infos: list[zipfile.ZipInfo], name: str, required: str = "xl/workbook.xml",
                  missing: str = "is not an Excel workbook (a zip file without xl/workbook.xml)"
                  ) -> None:
    """Refuse a zip without its `required` entry, or whose entries are absurd (a zip bomb)."""
    names = {info.filename for info in infos}
    if required not in names:
        raise InputError(
            f"{name} {missing}.",
            hint="Give a workbook (.xlsx, .xls, .ods) saved by Excel, LibreOffice, WPS or "
                 "Google Sheets, or a .csv.",
        )
    if len(infos) > MAX_ENTRIES:
        raise InputError(f"{name} holds {len(infos):,} parts; no payout sheet needs that many.",
                         hint=REBUILD_HINT)
    total = 0
    for info in infos:
        total += info.file_size
        ratio = info.file_size / max(info.compress_size, 1)
        if info.file_size > RATIO_FLOOR and ratio > MAX_RATIO:
            raise InputError(
                f"{name} looks like a zip bomb: {info.filename} expands {ratio:,.0f} times "
                f"(to {info.file_size / 2**20:,.0f} MB).",
                hint="batchpay refuses it unread. " + REBUILD_HINT,
            )
    if total > MAX_TOTAL_UNCOMPRESSED:
        raise InputError(
            f"{name} would expand to {total / 2**30:,.1f} GB; batchpay refuses it unread.",
            hint="Split the payouts into smaller sheets.",
        )


def scan_part(archive: zipfile.ZipFile, info: zipfile.ZipInfo, name: str,
               hidden: set[int], limits: SheetLimits, where: str, is_sheet: bool) -> bool:
    """Check the part's prolog with defusedxml, read it through; True if it has formulas.
    A worksheet's hidden rows are added to `hidden`; a worksheet reaching beyond `limits`
    (or shared strings more than its cells) stops the scan with InputError.

    `is_sheet`: the workbook's relationships name the part as a worksheet. Any other part
    that turns out to hold a <sheetData> is measured as one too: a parser may find it by a
    path the relationships spell otherwise."""
    is_strings = info.filename.lower() == "xl/sharedstrings.xml"
    parser = DefusedXMLParser(target=_PrologTarget(), forbid_dtd=True)
    in_prolog, flagged, extent, strings, prefix = True, False, Extent(), 0, b""
    judge_at = ESTIMATE_CHUNKS * CHUNK if info.file_size > 2 * ESTIMATE_CHUNKS * CHUNK else 0
    with archive.open(info) as part:
        for read, piece in _pieces(part, name, info.filename):
            if in_prolog:
                try:
                    parser.feed(piece)
                except _RootReached:
                    in_prolog = False
                    prefix = worksheet_prefix(piece)
                except DefusedXmlException:
                    raise InputError(
                        f"{name} contains an XML DOCTYPE/ENTITY declaration ({info.filename}); "
                        "Excel never writes one, so batchpay refuses the file as possibly hostile.",
                        hint=REBUILD_HINT,
                    ) from None
                except ParseError as exc:
                    raise InputError(f"{name} is damaged: {info.filename} is not valid XML "
                                     f"({exc}).", hint=REBUILD_HINT) from None
            if is_strings:
                if not strings:
                    _check_declared_texts(piece, name, limits)
                strings += piece.count(b"<si")
                if strings > limits.max_cells:
                    raise InputError(f"{name} holds more than {limits.max_cells:,} texts; "
                                     "batchpay refuses it unread.",
                                     hint="Split the payouts into smaller sheets, or raise "
                                          "the max_cells setting.")
                continue  # texts only: nothing in them is measured
            piece = extent.feed(plain_markup(piece, prefix))
            if not (is_sheet or extent.data):
                continue
            extent.check(limits, where)
            if judge_at and read >= judge_at:
                extent.extrapolate(limits, where, read, info.file_size)
                judge_at = 0
            if not flagged:
                flagged = has_formula_or_error(piece)
            if b"hidden=" in piece:
                hidden.update(hidden_rows(piece))
    return flagged


_UNIQUE_COUNT = re.compile(rb"""<(?:[\w.-]+:)?sst\s[^>]*?\buniqueCount\s*=\s*["']([^"']*)""")


def _check_declared_texts(piece: bytes, name: str, limits: SheetLimits) -> None:
    """Refuse shared strings that declare more texts than `limits.max_cells`: a parser sets
    aside room for every declared one before reading any (uniqueCount="2000000000" in a
    2 KB file asks for 48 GB and aborts the process)."""
    declared = _UNIQUE_COUNT.search(piece)
    if declared is None:
        return
    value = declared.group(1).strip()
    if not value.isdigit() or int(value) > limits.max_cells:
        raise InputError(f"{name} declares {value[:20].decode('ascii', 'replace')} texts "
                         f"(xl/sharedStrings.xml); batchpay reads at most {limits.max_cells:,} "
                         "cells, so it refuses the file unread.", hint=REBUILD_HINT)


def _pieces(part: IO[bytes], name: str, entry: str) -> Iterator[tuple[int, bytes]]:
    """(bytes read so far, piece): the part in pieces of about CHUNK, each cut just before a
    `<`, so that no tag is ever split between two pieces and every search sees it whole
    (`<` cannot appear inside a tag)."""
    carry, read = b"", 0
    while chunk := part.read(CHUNK):
        read += len(chunk)
        data = carry + chunk if carry else chunk
        cut = data.rfind(b"<")
        if cut <= 0:  # one tag, or text, longer than a chunk: wait for its end
            if len(data) > MAX_TAG_GAP:
                raise InputError(f"{name} is damaged: {entry} holds {len(data) / 2**20:,.0f} "
                                 "MB without a tag, which no spreadsheet program writes.",
                                 hint=REBUILD_HINT)
            carry = data
            continue
        carry = data[cut:]
        yield read, data[:cut]
    if carry:
        yield read, carry


_HIDDEN_ROW = re.compile(rb'<row\s[^>]*?\bhidden="(?:1|true)"[^>]*>')
_ROW_NUMBER = re.compile(rb'\sr="([0-9]+)"')


def hidden_rows(xml: bytes) -> set[int]:
    """Row numbers of the `<row>` tags marked hidden in this piece of a worksheet."""
    found = set()
    for tag in _HIDDEN_ROW.finditer(xml):
        number = _ROW_NUMBER.search(tag.group(0))
        if number:
            found.add(int(number.group(1)))
    return found


_FORMULA_TAG = re.compile(rb"<f[ \t\r\n>/]")


def has_formula_or_error(xml: bytes) -> bool:
    """True when the XML holds a formula (<f>) or an error cell (t="e").

    Two searches: a regular expression finds `<f` and what follows it in half the time
    bytes.find takes to find `<f` alone in a worksheet (every cell starts with `<`), and
    t="e" is a literal."""
    return _FORMULA_TAG.search(xml) is not None or xml.find(b't="e"') != -1


def sheet_parts(archive: zipfile.ZipFile) -> dict[str, str]:
    """Sheet name → its worksheet part inside the zip, from workbook.xml and its rels."""
    workbook = fromstring(archive.read("xl/workbook.xml"), forbid_dtd=True)
    rels_name = "xl/_rels/workbook.xml.rels"
    rels = fromstring(archive.read(rels_name), forbid_dtd=True) if rels_name in archive.namelist() else None
    # the zip's own spelling of each entry: parsers look a target up ignoring case
    entries = {entry.lower(): entry for entry in archive.namelist()}
    targets: dict[str, str] = {}
    if rels is not None:
        for rel in rels:
            target = rel.get("Target", "")
            path = target.lstrip("/") if target.startswith("/") else str(PurePosixPath("xl") / target)
            path = posixpath.normpath(path)
            targets[rel.get("Id", "")] = entries.get(path.lower(), path)
    parts: dict[str, str] = {}
    for element in workbook.iter():
        if _local(element.tag) == "sheet":
            rel_id = next((v for k, v in element.attrib.items() if _local(k) == "id"), "")
            if rel_id in targets:
                parts[element.get("name", "")] = targets[rel_id]
    return parts


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


_CELL_REF = re.compile(rb'\sr="([A-Z]+)([0-9]+)"')
_ERROR_TYPE = re.compile(rb'\st="e"')
_VALUE = re.compile(rb"<v>([^<]*)</v>")


def formula_problems(path: Any, part: str) -> CellIssues:
    """Cells of one worksheet whose formula has no saved value, or whose value is an error."""
    with zipfile.ZipFile(path) as archive:
        xml = archive.read(part)
    issues: CellIssues = {}
    starts = set()
    for match in _FORMULA_OR_ERROR.finditer(xml):
        start = xml.rfind(b"<c ", 0, match.start())
        if start >= 0:
            starts.add(start)
    for start in sorted(starts):
        end_tag = xml.find(b">", start)
        if xml[end_tag - 1:end_tag] == b"/":  # <c .../> has no formula and no value
            continue
        end = xml.find(b"</c>", end_tag)
        opening, body = xml[start:end_tag], xml[end_tag + 1:end]
        ref = _CELL_REF.search(opening)
        if ref is None:
            continue
        row, column = int(ref.group(2)) - 1, column_index(ref.group(1).decode())
        value = _VALUE.search(body)
        if _ERROR_TYPE.search(opening):
            shown = value.group(1).decode(errors="replace") if value else "an error"
            issues[(row, column)] = f"shows the error {shown}"
        elif b"<f" in body and (value is None or not value.group(1)):
            issues[(row, column)] = "is a formula with no saved value"
    return issues


_NUMBER_CELL = re.compile(rb'<c\s[^>]*>')
_ATTRIBUTE = re.compile(rb'\s(r|s|t)="([^"]*)"')
_QUOTED = re.compile(r'"[^"]*"|\\.|\[[^]]*\]')  # literal text, escapes, [colours]/[conditions]
_PADDING = re.compile(r"0{2,}")


def zero_padded_cells(path: Any, part: str) -> dict[tuple[int, int], int]:
    """Number cells of one worksheet whose format pads them with zeros (`0000000000000`
    shows 12345678901 as 0012345678901): (row, column) from 0 → the digits shown.

    The styles are read first (small); the worksheet is searched only when a style pads."""
    with zipfile.ZipFile(path) as archive:
        widths = _padding_styles(archive)
        if not widths:
            return {}
        xml = archive.read(part)
    found: dict[tuple[int, int], int] = {}
    for tag in _NUMBER_CELL.finditer(xml):
        attributes = dict(_ATTRIBUTE.findall(tag.group(0)))
        style, kind, ref = attributes.get(b"s"), attributes.get(b"t", b"n"), attributes.get(b"r")
        if style is None or kind != b"n" or ref is None or not style.isdigit():
            continue
        width = widths.get(int(style))
        match = _CELL_REF.match(b" r=\"" + ref + b"\"")
        if width and match:
            found[(int(match.group(2)) - 1, column_index(match.group(1).decode()))] = width
    return found


def _padding_styles(archive: zipfile.ZipFile) -> dict[int, int]:
    """Cell style index → digits shown, for the styles whose number format pads with zeros."""
    if "xl/styles.xml" not in archive.namelist():
        return {}
    styles = fromstring(archive.read("xl/styles.xml"), forbid_dtd=True)
    codes: dict[str, str] = {}
    padded: dict[int, int] = {}
    for element in styles.iter():
        if _local(element.tag) == "numFmt":
            codes[element.get("numFmtId", "")] = element.get("formatCode", "")
        elif _local(element.tag) == "cellXfs":
            for index, xf in enumerate(x for x in element if _local(x.tag) == "xf"):
                code = _QUOTED.sub("", codes.get(xf.get("numFmtId", ""), ""))
                whole = code.split(";")[0].split(".")[0]  # the positive section's integer part
                if _PADDING.search(whole):
                    padded[index] = whole.count("0") + whole.count("#") + whole.count("?")
    return padded


def column_index(letters: str) -> int:
    """A → 0, Z → 25, AA → 26."""
    index = 0
    for letter in letters:
        index = index * 26 + ord(letter) - 64
    return index - 1


def column_letters(index: int) -> str:
    """0 → A, 25 → Z, 26 → AA."""
    letters = ""
    index += 1
    while index:
        index, rest = divmod(index - 1, 26)
        letters = chr(65 + rest) + letters
    return letters
