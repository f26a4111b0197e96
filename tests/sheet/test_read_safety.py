"""Files batchpay refuses before parsing: missing, not a spreadsheet, too big, hostile."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
import xlsxwriter

from batchpay.sheet.limits import SheetLimits
from batchpay.sheet.read import read_sheet
from tests.support.refusals import refused

LAUGHS = b"""<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
 <!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
 <!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
 <!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
 <!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
 <!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">
]>
<sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" count="1" uniqueCount="1">
<si><t>&lol9;</t></si></sst>"""


def real_workbook(path: Path) -> Path:
    workbook = xlsxwriter.Workbook(str(path))
    ws = workbook.add_worksheet("Payouts")
    ws.write_row(0, 0, ["payout_ref", "account_number"])
    ws.write_row(1, 0, ["A-1", "6222021234567890123"])
    workbook.close()
    return path


def rebuilt(source: Path, target: Path, replace: dict[str, bytes],
            compression: int = zipfile.ZIP_DEFLATED) -> Path:
    """A copy of an .xlsx with some parts replaced (or added)."""
    with zipfile.ZipFile(source) as src, zipfile.ZipFile(target, "w", compression) as dst:
        for info in src.infolist():
            dst.writestr(info.filename, replace.pop(info.filename, src.read(info.filename)))
        for name, data in replace.items():
            dst.writestr(name, data)
    return target


def test_the_fixture_workbook_itself_is_read(tmp_path: Path) -> None:
    sheet = read_sheet(real_workbook(tmp_path / "ok.xlsx"))
    assert sheet.column_values("account_number") == ["6222021234567890123"]


def test_missing_file(tmp_path: Path) -> None:
    assert "File not found" in refused(tmp_path / "nope.xlsx").message


@pytest.mark.parametrize(("name", "content"), [
    ("report.pdf", b"%PDF-1.7\n..."),
    ("fake.xlsx", b"this is not a zip at all"),
    ("binary.csv", b"\x00\x01\x02payout_ref\x00"),
    ("old.xls", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 100),
])
def test_not_a_spreadsheet(tmp_path: Path, name: str, content: bytes) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    error = refused(path)
    assert name in error.message


def test_a_zip_that_is_not_a_workbook(tmp_path: Path) -> None:
    path = tmp_path / "doc.xlsx"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("word/document.xml", "<w/>")
    assert "not an Excel workbook" in refused(path).message


def test_file_over_the_size_limit(tmp_path: Path) -> None:
    path = real_workbook(tmp_path / "ok.xlsx")
    error = refused(path, limits=SheetLimits(max_bytes=1000))
    assert "over the" in error.message and "max_file_mb" in (error.hint or "")


def test_billion_laughs_in_shared_strings_is_refused(tmp_path: Path) -> None:
    source = real_workbook(tmp_path / "ok.xlsx")
    bomb = rebuilt(source, tmp_path / "laughs.xlsx", {"xl/sharedStrings.xml": LAUGHS})
    assert "DOCTYPE/ENTITY" in refused(bomb).message


def test_external_entity_in_the_sheet_is_refused(tmp_path: Path) -> None:
    source = real_workbook(tmp_path / "ok.xlsx")
    xxe = (b'<?xml version="1.0"?><!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]>'
           b'<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">'
           b"<sheetData/></worksheet>")
    bomb = rebuilt(source, tmp_path / "xxe.xlsx", {"xl/worksheets/sheet1.xml": xxe})
    assert "DOCTYPE/ENTITY" in refused(bomb).message


def test_absurd_compression_ratio_is_refused(tmp_path: Path) -> None:
    source = real_workbook(tmp_path / "ok.xlsx")
    padding = b"<worksheet>" + b" " * (40 * 2**20) + b"</worksheet>"  # 40 MB of spaces
    bomb = rebuilt(source, tmp_path / "zipbomb.xlsx", {"xl/worksheets/sheet1.xml": padding})
    assert bomb.stat().st_size < 2**20
    error = refused(bomb)
    assert "zip bomb" in error.message and "sheet1.xml" in error.message


def test_oversized_total_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from batchpay.sheet import xlsx_guard

    monkeypatch.setattr(xlsx_guard, "MAX_TOTAL_UNCOMPRESSED", 2000)
    source = real_workbook(tmp_path / "ok.xlsx")
    assert "would expand to" in refused(source).message


def test_damaged_zip_is_refused(tmp_path: Path) -> None:
    data = bytearray(real_workbook(tmp_path / "ok.xlsx").read_bytes())
    data[len(data) // 2: len(data) // 2 + 200] = b"\xff" * 200
    path = tmp_path / "damaged.xlsx"
    path.write_bytes(bytes(data))
    refused(path)
