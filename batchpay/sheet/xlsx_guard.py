"""Look inside an .xlsx before any parser trusts it.

An .xlsx file is a zip of XML parts. Before calamine parses it we refuse, with one line:
- a zip with absurd entries (too many, too big once uncompressed, or compressed at a
  ratio no spreadsheet reaches): a zip bomb would exhaust memory or time;
- any XML part with a DOCTYPE (and so ENTITY) declaration: Excel never writes one, and
  it is how "billion laughs" and external-entity attacks start. defusedxml parses each
  part's prolog only (a DTD can appear nowhere else), so the scan stays fast.
Every entry is read through once, so its CRC proves the declared sizes were honest.

The same pass measures each worksheet (`xlsx_extent.Extent`). A worksheet is wherever the
workbook's relationships put it (xl/data/sheet1.xml too), and any part holding a <sheetData>
is measured as one. A worksheet beyond `SheetLimits` stops the scan, before calamine is
asked to load anything; a large one whose first megabytes, scaled to its size, already
reach 1.5 times a bound is refused then (a 250 MB sheet of 10 million cells in half a
second, not after streaming it all). It also notes the worksheets holding formulas or error
values, which `xlsx_cells.formula_problems` searches, and their hidden rows.
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
from batchpay.sheet.xlsx_cells import local_name
from batchpay.sheet.xlsx_extent import (
    ESTIMATE_CHUNKS,
    Extent,
    has_formula_or_error,
    plain_markup,
    worksheet_prefix,
)
from batchpay.sheet.xlsx_rows import HiddenRows

MAX_ENTRIES = 10_000
MAX_TOTAL_UNCOMPRESSED = 2 * 2**30  # 2 GiB: Excel's 1,048,576-row limit stays well below
MAX_RATIO = 200  # typical worksheets compress 5-30x; a bomb compresses 1,000x and more
RATIO_FLOOR = 2**20  # small parts (styles, empty sheets) may compress at any ratio
CHUNK = 2**20

XML_SUFFIXES = (".xml", ".rels", ".vml")
REBUILD_HINT = "Open it in Excel or LibreOffice, save it as a new .xlsx, and try again."


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


# a run this long without a tag: no spreadsheet writes one (a cell holds 32,767 characters)
MAX_TAG_GAP = 8 * CHUNK


@dataclass
class Inspection:
    """What the guard's one pass over an .xlsx found, for the reader."""

    parts: dict[str, str]  # sheet name → its worksheet part ({} when workbook.xml is unusable)
    flagged: set[str]  # worksheet parts holding formulas or error values
    hidden: dict[str, set[int]]  # worksheet part → its hidden rows (`xlsx_rows`)


def inspect_xlsx(path: Any, name: str | None = None,
                 limits: SheetLimits = DEFAULT_LIMITS) -> Inspection:
    """Refuse a hostile or broken .xlsx; what it holds otherwise (`Inspection`).

    `name` is the file name the messages show (an in-memory copy has none of its own).
    Hidden rows (hidden by hand or filtered out: Excel marks both `hidden="1"`; too low to
    see; or hidden by the sheet's default, `xlsx_rows`) are found in the same pass. A worksheet that spans more than `limits`, or more shared strings than
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
    rows = HiddenRows()
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
            rows.feed(piece)
    hidden.update(rows.found)
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
        if local_name(element.tag) == "sheet":
            rel_id = next((v for k, v in element.attrib.items() if local_name(k) == "id"), "")
            if rel_id in targets:
                parts[element.get("name", "")] = targets[rel_id]
    return parts
