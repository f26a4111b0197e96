"""How far an .xlsx worksheet reaches, and what it marks, measured in its XML as it streams by.

A parser allocates the rectangle a worksheet spans, so the guard's one pass over each part
(`xlsx_guard.scan_part`) measures it (`Extent`): the declared `<dimension>`, the row tags,
every reference in column AA or beyond and every row number with more digits than the rows
seen so far (rare in a payout sheet, so the searches stay fast literal scans). Only
`<c r=…>`, `<row r=…>` and `<dimension ref=…>` count (LibreOffice's pageOrder="downThenOver"
merely ends in r="). Each piece searched holds whole tags, written plainly (`plain_markup`:
single quotes, spaces around =, characters by number, a namespace prefix are all legal XML).
The same pieces are searched for hidden rows (`xlsx_rows.HiddenRows`) and for formulas or
error values (`has_formula_or_error`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from batchpay.errors import InputError
from batchpay.sheet.limits import SheetLimits

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


_FORMULA_TAG = re.compile(rb"<f[ \t\r\n>/]")


def has_formula_or_error(xml: bytes) -> bool:
    """True when the XML holds a formula (<f>) or an error cell (t="e").

    Two searches: a regular expression finds `<f` and what follows it in half the time
    bytes.find takes to find `<f` alone in a worksheet (every cell starts with `<`), and
    t="e" is a literal."""
    return _FORMULA_TAG.search(xml) is not None or xml.find(b't="e"') != -1


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
