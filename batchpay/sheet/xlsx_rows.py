"""Rows an .xlsx worksheet hides from the person who opens it, read as an XML parser reads
the `<row>` tags.

A row is hidden when its tag says `hidden="1"` (by hand, or filtered out: Excel writes both
so), when it is drawn too low to read (`ht="0" customHeight="1"`: a height below
`MIN_VISIBLE_HEIGHT` points), or when the worksheet hides rows by default
(`<sheetFormatPr zeroHeight="1">`, or a default height below it) and the row does not give
itself a visible height. XML lets a crafted file say all this otherwise than Excel writes it,
and a parser (calamine, Excel) reads it all the same, so this module does too:
- attribute values given by character reference (`hidden="&#49;"`), in single quotes, with
  spaces around `=`, or `true` for `1`;
- a `<row>` without `r=`: its number is implied, the row before it plus one (the first row
  is 1), and a cell with a reference of its own (`<c r="A9">`) is placed in its own row.

The searches stay fast literal scans for the usual sheet: only a tag that could hide its
row, a worksheet that hides rows by default, or a piece whose row tags lack numbers is read
attribute by attribute. Each piece fed holds whole tags (`xlsx_guard._pieces`), its white
space made spaces and its namespace prefix taken off (`xlsx_extent.plain_markup`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

MIN_VISIBLE_HEIGHT = 2.0  # points: a row lower than this shows nothing of its text

# a row tag (not <rowBreaks>, <rows>...)
_ROW_TAG = re.compile(rb"<row(?=[ >/])[^>]*>")
# a row tag that might hide its row: a hidden= that is not plainly 0 or false, or an ht=
# that is not plainly a number of 2 or more (a character reference, 0, 1.5, 15e-2...)
_MAYBE_HIDDEN = re.compile(
    rb"""<row(?=[ >/])[^>]*?\s(?:hidden\s*=\s*["'](?!\s*(?:0|false)\s*["'])"""
    rb"""|ht\s*=\s*["'](?!\s*(?:[2-9][0-9]*|1[0-9]+)(?:\.[0-9]*)?\s*["']))[^>]*>""")
_ATTRIBUTE = re.compile(rb"""([\w:.-]+)\s*=\s*(?:"([^"]*)"|'([^']*)')""")
_CHARACTER = re.compile(r"&#(x[0-9A-Fa-f]{1,6}|[0-9]{1,7});")
_CELL_ROW = re.compile(rb"""<c(?=\s)[^>]*?\sr\s*=\s*["'][A-Za-z]{1,3}([0-9]{1,7})["']""")
_NAMED_ENTITIES = {"&lt;": "<", "&gt;": ">", "&quot;": '"', "&apos;": "'"}


def attributes(tag: bytes) -> dict[str, str]:
    """A tag's attributes as a parser gives them: values with their character and entity
    references replaced. Prefixed names are other namespaces' attributes, left out."""
    found: dict[str, str] = {}
    for name, double, single in _ATTRIBUTE.findall(tag):
        if b":" in name:
            continue
        value = (double if double or not single else single).decode("utf-8", "replace")
        if "&" in value:
            value = _CHARACTER.sub(_character, value)
            for entity, text in _NAMED_ENTITIES.items():
                value = value.replace(entity, text)
            value = value.replace("&amp;", "&")
        found[name.decode("ascii", "replace")] = value
    return found


def _character(match: re.Match[str]) -> str:
    number = match.group(1)
    code = int(number[1:], 16) if number[:1] in "xX" else int(number)
    return chr(code) if code < 0x110000 else "?"


def is_true(value: str | None) -> bool:
    """An XML Schema boolean: `1` or `true` (white space around it ignored, as the schema's
    collapse rule says; any case, since a hidden row wrongly seen is only a question)."""
    return value is not None and value.strip().lower() in ("1", "true")


def height(value: str | None) -> float | None:
    """A height in points; None when absent or not a number."""
    try:
        return float(value.strip()) if value is not None else None
    except ValueError:
        return None


def too_low(points: float | None) -> bool:
    return points is not None and not points >= MIN_VISIBLE_HEIGHT  # NaN too


@dataclass
class HiddenRows:
    """The hidden rows of one worksheet, found while its part streams by (`feed`)."""

    found: set[int] = field(default_factory=set)
    hidden_by_default: bool = False  # <sheetFormatPr zeroHeight="1"> or a default height of 0
    last: int = 0  # the number of the last <row> tag fed (given or implied)

    def feed(self, piece: bytes) -> None:
        # the format comes before the rows (the schema's order, which Excel holds to)
        if not self.last and b"<sheetFormatPr" in piece:
            self._default(piece)
        if self.hidden_by_default or ((b"hidden" in piece or b" ht" in piece)
                                      and _MAYBE_HIDDEN.search(piece)):
            self._read_tags(piece)
        elif b"<row" in piece:
            self._number_last(piece)

    def _default(self, piece: bytes) -> None:
        at = piece.find(b"<sheetFormatPr")
        values = attributes(piece[at:piece.find(b">", at) + 1])
        self.hidden_by_default = is_true(values.get("zeroHeight")) or (
            is_true(values.get("customHeight")) and too_low(height(values.get("defaultRowHeight"))))

    def _read_tags(self, piece: bytes) -> None:
        """Every row tag of the piece, numbered, its attributes read as a parser does."""
        for tag in _ROW_TAG.finditer(piece):
            values = attributes(tag.group(0))
            number = values.get("r", "").strip()
            self.last = int(number) if number.isdigit() else self.last + 1
            if self._hides(values):
                self.found.add(self.last)
                self._cells_placed_elsewhere(piece, tag.end())

    def _hides(self, values: dict[str, str]) -> bool:
        if is_true(values.get("hidden")):
            return True
        points = height(values.get("ht"))
        custom = is_true(values.get("customHeight"))
        if too_low(points):  # with customHeight="1" or without: never autofitted into view
            return True
        # hidden by default: only a row that gives itself a visible height is shown
        return self.hidden_by_default and not (custom and points is not None
                                               and not too_low(points))

    def _cells_placed_elsewhere(self, piece: bytes, start: int) -> None:
        """A hidden row's cells that carry a row number of their own are placed there by a
        parser, whatever the row tag says: those rows are hidden too."""
        end = piece.find(b"</row", start)
        for cell in _CELL_ROW.finditer(piece, start, end if end != -1 else len(piece)):
            self.found.add(int(cell.group(1)))

    def _number_last(self, piece: bytes) -> None:
        """`last` after a piece with nothing hidden: the number its last row tag gives, or
        (a row tag without one) the numbers counted through the piece."""
        at = len(piece)
        while (at := piece.rfind(b"<row", 0, at)) != -1:
            if piece[at + 4:at + 5] in (b" ", b">", b"/"):
                break
        if at == -1:
            return
        close = piece.find(b">", at)
        number = attributes(piece[at:close + 1] if close != -1 else piece[at:]).get("r", "")
        if number.strip().isdigit():
            self.last = int(number)
        else:
            self._read_tags(piece)
