"""Operators filter a list to "pay these": a row hidden or filtered out in the sheet is never
paid silently, and a hidden sheet is never the one read by default."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import xlsxwriter

from batchpay.sheet.read import read_sheet
from batchpay.sheet.xlsx_extent import hidden_rows
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
    assert hidden_rows(b'<row r="7" spans="1:3" ht="15" hidden="1" x14ac:dyDescent="0.25">'
                       b'<c r="A7"/></row><row r="8"><c r="A8"/></row>') == {7}
