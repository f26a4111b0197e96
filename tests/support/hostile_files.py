"""Crafted files that once cost batchpay its memory or its time: a few KB that ask a parser
for a rectangle of billions of cells, millions of real cells, a CSV of single characters.
Used by the tests (small forms) and by tests/benchmarks/bench_hostile.py (full size)."""

from __future__ import annotations

import zipfile
from collections.abc import Iterable, Iterator
from pathlib import Path

MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
_TYPES = (
    '<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/'
    'package/2006/content-types"><Default Extension="rels" ContentType="application/'
    'vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType='
    '"application/xml"/><Override PartName="/xl/workbook.xml" ContentType="application/'
    'vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/><Override PartName='
    '"/{part}" ContentType="application/vnd.openxmlformats-officedocument.'
    'spreadsheetml.worksheet+xml"/></Types>')
_RELS = (
    '<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats'
    '.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.'
    'openxmlformats.org/officeDocument/2006/relationships/officeDocument" '
    'Target="xl/workbook.xml"/></Relationships>')
_WORKBOOK = (
    f'<?xml version="1.0" encoding="UTF-8"?><workbook xmlns="{MAIN}" xmlns:r="http://schemas.'
    'openxmlformats.org/officeDocument/2006/relationships"><sheets><sheet name="Payouts" '
    'sheetId="1" r:id="rId1"/></sheets></workbook>')
_WORKBOOK_RELS = (
    '<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats'
    '.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.'
    'openxmlformats.org/officeDocument/2006/relationships/worksheet" '
    'Target="{target}"/></Relationships>')
HEADER_ROW = ('<row r="1"><c r="A1" t="inlineStr"><is><t>payout_ref</t></is></c>'
              '<c r="B1" t="inlineStr"><is><t>account_number</t></is></c></row>')


def workbook(path: Path, rows_xml: Iterable[str], dimension: str | None = None,
             part_name: str = "xl/worksheets/sheet1.xml", target: str | None = None,
             after: str = "", prefix: str = "") -> Path:
    """An .xlsx with one sheet, Payouts, whose sheetData is `rows_xml` (streamed), stored
    as `part_name` (the workbook's relationship points there: `target`, by default the
    path relative to xl/, as Excel writes it). `after`: XML after the sheetData; `prefix`:
    the worksheet's tags written <prefix:worksheet>, <prefix:sheetData>..."""
    target = target or part_name.removeprefix("xl/")
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", _TYPES.format(part=part_name))
        archive.writestr("_rels/.rels", _RELS)
        archive.writestr("xl/workbook.xml", _WORKBOOK)
        archive.writestr("xl/_rels/workbook.xml.rels", _WORKBOOK_RELS.format(target=target))
        with archive.open(part_name, "w", force_zip64=True) as part:
            tag = f"{prefix}:" if prefix else ""
            space = f"xmlns:{prefix}" if prefix else "xmlns"
            part.write(f'<?xml version="1.0" encoding="UTF-8"?><{tag}worksheet {space}="{MAIN}">'
                       .encode())
            if dimension:
                part.write(f'<{tag}dimension ref="{dimension}"/>'.encode())
            part.write(f"<{tag}sheetData>".encode())
            buffer: list[str] = []
            for row in rows_xml:
                buffer.append(row)
                if len(buffer) >= 10_000:
                    part.write("".join(buffer).encode())
                    buffer.clear()
            part.write("".join(buffer).encode())
            part.write(f"</{tag}sheetData>{after}</{tag}worksheet>".encode())
    return path


def one_far_cell(path: Path, ref: str, row: int) -> Path:
    """The header and one cell far away (XFD1048576: a 17-billion-cell rectangle)."""
    return workbook(path, [HEADER_ROW, f'<row r="{row}"><c r="{ref}"><v>1</v></c></row>'])


def declared_only(path: Path, dimension: str = "A1:XFD1048576") -> Path:
    """A small sheet whose <dimension> claims the whole grid."""
    return workbook(path, [HEADER_ROW, '<row r="2"><c r="A2"><v>1</v></c></row>'], dimension)


def below_its_row(path: Path, ref: str = "A99999") -> Path:
    """A cell whose reference puts it far below the row tag it sits in (the reference wins)."""
    return workbook(path, [HEADER_ROW, f'<row r="2"><c r="B2"><v>1</v></c><c r="{ref}">'
                                       '<v>1</v></c></row>'])


def many_cells(path: Path, rows: int, columns: int = 10) -> Path:
    """`rows` × `columns` real number cells (10 million: a few MB of zip)."""
    letters = [chr(65 + i) for i in range(columns)]

    def body() -> Iterator[str]:
        yield HEADER_ROW
        for r in range(2, rows + 2):
            yield f'<row r="{r}">' + "".join(f'<c r="{c}{r}"><v>{r}</v></c>' for c in letters) \
                + "</row>"
    return workbook(path, body())


def unreferenced_row(path: Path, cells: int) -> Path:
    """One row of cells without references: each takes the next column."""
    return workbook(path, [HEADER_ROW, "<row>" + "<c><v>1</v></c>" * cells + "</row>"])


def csv_of_characters(path: Path, megabytes: int, separator: str = "\n") -> Path:
    """A CSV of single characters: one per line, or one per field of one line."""
    unit = ("a" + separator).encode()
    with path.open("wb") as out:
        out.write(b"payout_ref,account_number\n")
        block = unit * (2**20 // len(unit))
        for _ in range(megabytes):
            out.write(block)
    return path


_ODS_CONTENT = (
    '<?xml version="1.0" encoding="UTF-8"?>{doctype}<office:document-content xmlns:office="urn:'
    'oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:table="urn:oasis:names:tc:opendocument:'
    'xmlns:table:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" xmlns:calcext='
    '"urn:org:documentfoundation:names:experimental:calc:xmlns:calcext:1.0" office:version="1.3">'
    '<office:body><office:spreadsheet><table:table table:name="Payouts">{rows}</table:table>'
    '</office:spreadsheet></office:body></office:document-content>')


def ods_text(text: str, repeat: int = 1) -> str:
    times = f' table:number-columns-repeated="{repeat}"' if repeat > 1 else ""
    return (f'<table:table-cell office:value-type="string"{times} calcext:value-type="string">'
            f"<text:p>{text}</text:p></table:table-cell>")


def ods_row(cells: str, repeat: int = 1, hidden: bool = False) -> str:
    times = f' table:number-rows-repeated="{repeat}"' if repeat > 1 else ""
    visibility = ' table:visibility="collapse"' if hidden else ""
    return f"<table:table-row{times}{visibility}>{cells}</table:table-row>"


ODS_HEADER = ods_row(ods_text("payout_ref") + ods_text("account_number"))


def ods(path: Path, rows_xml: Iterable[str], doctype: str = "") -> Path:
    """An .ods with one sheet, Payouts, whose rows are `rows_xml`."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(zipfile.ZipInfo("mimetype"), "application/vnd.oasis.opendocument."
                                                      "spreadsheet")
        archive.writestr("META-INF/manifest.xml", (
            '<?xml version="1.0" encoding="UTF-8"?><manifest:manifest xmlns:manifest="urn:oasis:'
            'names:tc:opendocument:xmlns:manifest:1.0" manifest:version="1.3"><manifest:file-entry'
            ' manifest:full-path="/" manifest:media-type="application/vnd.oasis.opendocument.'
            'spreadsheet"/><manifest:file-entry manifest:full-path="content.xml" manifest:media-'
            'type="text/xml"/></manifest:manifest>'))
        archive.writestr("content.xml", _ODS_CONTENT.format(doctype=doctype,
                                                            rows="".join(rows_xml)))
    return path
