"""Cells calamine shows otherwise than the sheet holds them, found in the worksheet's XML.

calamine gives a formula cell's saved value but shows a formula without one, or an error
value (#DIV/0!), as an empty cell; the guard notes which worksheets hold `<f` or `t="e"`,
and only those are searched cell by cell (`formula_problems`). A number whose format pads
it with zeros (an account number typed as 0012345678901) reaches calamine without its
zeros (`zero_padded_cells`).
"""

from __future__ import annotations

import re
import zipfile
from typing import Any

from defusedxml.ElementTree import fromstring

from batchpay.sheet.xlsx_extent import column_index

CellIssues = dict[tuple[int, int], str]  # (row index, column index), both from 0 → message
_FORMULA_OR_ERROR = re.compile(rb'<f[\s>/]|\st="e"')


def local_name(tag: str) -> str:
    """An XML tag or attribute name without its {namespace}."""
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
        if local_name(element.tag) == "numFmt":
            codes[element.get("numFmtId", "")] = element.get("formatCode", "")
        elif local_name(element.tag) == "cellXfs":
            for index, xf in enumerate(x for x in element if local_name(x.tag) == "xf"):
                code = _QUOTED.sub("", codes.get(xf.get("numFmtId", ""), ""))
                whole = code.split(";")[0].split(".")[0]  # the positive section's integer part
                if _PADDING.search(whole):
                    padded[index] = whole.count("0") + whole.count("#") + whole.count("?")
    return padded
