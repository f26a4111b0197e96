"""Operators filter a list to "pay these": a row hidden or filtered out in the sheet is never
paid silently, and a hidden sheet is never the one read by default."""

from __future__ import annotations

import json
import zipfile
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import xlsxwriter

from batchpay.sheet.read import read_sheet
from batchpay.sheet.xlsx_rows import HiddenRows
from tests.support.e2e import batchpay, sandbox_payouts
from tests.support.sheets import HEADERS, rows


@pytest.fixture
def service(cli_sandbox: Any) -> Any:
    return cli_sandbox(settle_seconds=0.05)


def write(path: Path, sheets: dict[str, tuple[list[dict[str, Any]], set[int], bool]]) -> Path:
    """Sheets by name: (rows, data rows to hide (1 = first data row), sheet hidden)."""
    book = xlsxwriter.Workbook(str(path))
    for name, (values, hide, hidden_sheet) in sheets.items():
        sheet = book.add_worksheet(name)
        for c, header in enumerate(HEADERS):
            sheet.write_string(0, c, header)
        for r, row in enumerate(values, start=1):
            for c, header in enumerate(HEADERS):
                value = row.get(header)
                if isinstance(value, str):
                    sheet.write_string(r, c, value)
                elif value is not None:
                    sheet.write_number(r, c, float(value))
            if r in hide:
                sheet.set_row(r, None, None, {"hidden": True})
        if values:
            sheet.autofilter(0, 0, len(values), len(HEADERS) - 1)
        if hidden_sheet:
            sheet.hide()
    for sheet in book.worksheets():
        if not sheet.hidden:
            sheet.activate()
            break
    book.close()
    return path


def test_hidden_and_filtered_rows_are_invalid_unless_included(service: Any,
                                                              tmp_path: Path) -> None:
    sheet = write(tmp_path / "nov.xlsx", {"Payouts": (rows(5), {2, 4}, False)})
    checked = batchpay("validate", str(sheet), "--no-bank-check", "--json")
    assert checked.exit_code == 1, checked
    found = {r["payout_ref"]: r for r in json.loads(checked.stdout)["rows"]}
    assert [ref for ref, r in found.items() if r["status"] == "INVALID"] == ["T-00002", "T-00004"]
    assert "row 3 is hidden in the sheet" in found["T-00002"]["error"]
    assert "--include-hidden" in found["T-00002"]["error"]
    refused = batchpay("run", str(sheet), "--wait", "1", "--out", str(tmp_path / "r.xlsx"))
    assert refused.exit_code == 1 and sandbox_payouts(service.url) == []
    visible = batchpay("run", str(sheet), "--skip-invalid", "--wait", "1",
                       "--out", str(tmp_path / "r2.xlsx"))
    assert visible.exit_code == 1, visible
    assert len(sandbox_payouts(service.url)) == 3  # only the rows the operator could see
    everything = batchpay("run", str(sheet), "--include-hidden", "--wait", "2",
                          "--out", str(tmp_path / "r3.xlsx"))
    assert everything.exit_code == 0, everything
    assert len(sandbox_payouts(service.url)) == 5


def test_a_hidden_sheet_is_never_read_by_default(tmp_path: Path) -> None:
    path = write(tmp_path / "nov.xlsx", {"Payouts": (rows(3), set(), True),
                                         "Checked": (rows(1, start=9), set(), False)})
    default = read_sheet(path)
    assert default.sheet_name == "Checked" and len(default.rows) == 1
    named = read_sheet(path, sheet="Payouts")  # named on purpose: read
    assert len(named.rows) == 3


def test_hidden_rows_are_found_in_a_large_sheet(tmp_path: Path) -> None:
    many = rows(20000)
    path = write(tmp_path / "big.xlsx", {"Payouts": (many, {1, 9999, 20000}, False)})
    read = read_sheet(path)
    assert sorted(r.row for r in read.rows if "hidden" in r.errors) == [2, 10000, 20001]
    found = HiddenRows()
    found.feed(b'<row r="7" spans="1:3" ht="15" hidden="1" x14ac:dyDescent="0.25">'
               b'<c r="A7"/></row><row r="8"><c r="A8"/></row>')
    assert found.found == {7}


# --- crafted workbooks: what XML allows and a parser reads, written by hand ---------------

def crafted(path: Path, row_tag: Callable[[int], str], format_pr: str = "",
            cell_refs: bool = True) -> Path:
    """A workbook of the header and 5 rows whose worksheet XML is written by hand:
    `row_tag(n)` is the opening tag of sheet row n, every cell is written (empty ones as
    empty texts), with or without its own reference."""
    from batchpay.sheet.xlsx_extent import column_letters

    lines = [dict(zip(HEADERS, HEADERS, strict=True)), *rows(5)]
    body = []
    for n, values in enumerate(lines, start=1):
        cells = []
        for c, header in enumerate(HEADERS):
            value = values.get(header)
            ref = f' r="{column_letters(c)}{n}"' if cell_refs else ""
            if isinstance(value, Decimal):
                cells.append(f"<c{ref}><v>{value}</v></c>")
            else:
                cells.append(f'<c{ref} t="inlineStr"><is><t>{value or ""}</t></is></c>')
        body.append(row_tag(n) + "".join(cells) + "</row>")
    main = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
    rel = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
    with zipfile.ZipFile(path, "w") as book:
        book.writestr("[Content_Types].xml", (
            '<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/'
            'content-types"><Default Extension="rels" ContentType="application/vnd.'
            'openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType='
            '"application/xml"/><Override PartName="/xl/workbook.xml" ContentType="application/'
            'vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/><Override '
            'PartName="/xl/worksheets/sheet1.xml" ContentType="application/vnd.openxmlformats-'
            'officedocument.spreadsheetml.worksheet+xml"/></Types>'))
        book.writestr("_rels/.rels", (
            '<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/'
            f'package/2006/relationships"><Relationship Id="rId1" Type="{rel}/officeDocument" '
            'Target="xl/workbook.xml"/></Relationships>'))
        book.writestr("xl/workbook.xml", (
            f'<?xml version="1.0"?><workbook xmlns="{main}" xmlns:r="{rel}"><sheets>'
            '<sheet name="Payouts" sheetId="1" r:id="rId1"/></sheets></workbook>'))
        book.writestr("xl/_rels/workbook.xml.rels", (
            '<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/'
            f'package/2006/relationships"><Relationship Id="rId1" Type="{rel}/worksheet" '
            'Target="worksheets/sheet1.xml"/></Relationships>'))
        book.writestr("xl/worksheets/sheet1.xml", (
            f'<?xml version="1.0"?><worksheet xmlns="{main}">{format_pr}<sheetData>'
            + "".join(body) + "</sheetData></worksheet>"))
    return path


def numbered(attributes: str) -> Callable[[int], str]:
    """Sheet row 3 (the second payout) with `attributes`, the others plain."""
    return lambda n: f'<row r="{n}"{" " + attributes if n == 3 else ""}>'


CRAFTED: dict[str, tuple[Callable[[int], str], str, bool]] = {
    # no r= on any row: each is the row before it plus one, its cells placed one by one
    "rows and cells unnumbered": (
        lambda n: '<row hidden="1">' if n == 3 else "<row>", "", False),
    # no r= on the rows, the cells numbered
    "rows unnumbered": (lambda n: '<row hidden="1">' if n == 3 else "<row>", "", True),
    "hidden by character reference": (numbered('hidden="&#49;"'), "", True),
    "hidden by hexadecimal reference, quoted otherwise": (
        numbered("hidden = '&#x31;'"), "", True),
    "hidden=true": (numbered('hidden="true"'), "", True),
    "height 0": (numbered('ht="0" customHeight="1"'), "", True),
    "height 0 by reference": (numbered('ht="&#48;" customHeight="&#49;"'), "", True),
    "height 0.15 as 15e-2": (numbered('ht="15e-2" customHeight="1"'), "", True),
    # hidden by default: every row but those given a visible height of their own
    "zeroHeight": (
        lambda n: "<row>" if n == 3 else f'<row r="{n}" ht="15" customHeight="1">',
        '<sheetFormatPr defaultRowHeight="15" zeroHeight="1"/>', True),
    "default height 0": (
        lambda n: f'<row r="{n}">' if n == 3 else f'<row r="{n}" ht="15" customHeight="1">',
        '<sheetFormatPr defaultRowHeight="0" customHeight="1"/>', True),
}


@pytest.mark.parametrize("how", list(CRAFTED))
def test_a_row_hidden_in_crafted_xml_is_found(tmp_path: Path, how: str) -> None:
    row_tag, format_pr, cell_refs = CRAFTED[how]
    sheet = read_sheet(crafted(tmp_path / "crafted.xlsx", row_tag, format_pr, cell_refs))
    assert [r.row for r in sheet.rows] == [2, 3, 4, 5, 6]
    assert sheet.column_values("payout_ref") == [f"T-{n:05d}" for n in range(1, 6)]
    assert [r.row for r in sheet.rows if "hidden" in r.errors] == [3], how


@pytest.mark.parametrize("row_tag", [
    numbered('customFormat="false" ht="12.8" hidden="false" customHeight="false"'),
    numbered('ht="15" customHeight="1"'),
    numbered('ht="409.5" hidden="0" customHeight="true"'),
    lambda n: "<row>",
], ids=["LibreOffice", "custom height", "tall", "unnumbered, none hidden"])
def test_rows_written_visible_are_read(tmp_path: Path, row_tag: Callable[[int], str]) -> None:
    sheet = read_sheet(crafted(tmp_path / "plain.xlsx", row_tag))
    assert len(sheet.rows) == 5 and not [r for r in sheet.rows if "hidden" in r.errors]


@pytest.mark.parametrize("how", ["rows and cells unnumbered", "hidden by character reference",
                                 "height 0", "zeroHeight"])
def test_a_crafted_hidden_row_is_not_paid(service: Any, tmp_path: Path, how: str) -> None:
    row_tag, format_pr, cell_refs = CRAFTED[how]
    sheet = crafted(tmp_path / "crafted.xlsx", row_tag, format_pr, cell_refs)
    checked = batchpay("validate", str(sheet), "--no-bank-check", "--json")
    assert checked.exit_code == 1, checked
    found = {r["payout_ref"]: r for r in json.loads(checked.stdout)["rows"]}
    assert [ref for ref, r in found.items() if r["status"] == "INVALID"] == ["T-00002"]
    assert "row 3 is hidden in the sheet" in found["T-00002"]["error"]
    refused = batchpay("run", str(sheet), "--wait", "0", "--out", str(tmp_path / "r.xlsx"))
    assert refused.exit_code == 1 and sandbox_payouts(service.url) == []
    visible = batchpay("run", str(sheet), "--skip-invalid", "--wait", "0",
                       "--out", str(tmp_path / "r2.xlsx"))
    assert visible.exit_code == 1, visible
    paid = sorted(p["accountNumber"][-2:] for p in sandbox_payouts(service.url))
    assert paid == ["01", "03", "04", "05"]  # never the hidden row's
