"""`validate --report` tells the truth a run would: invoice rows are not "without an amount",
their asked amounts are in the Summary, and a row the payee register holds is HELD in the
report, with its Payee changes sheet."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import openpyxl
import pytest

from tests.support.e2e import batchpay, by_ref, results
from tests.support.sheets import HEADERS, row, write_sheet

INVOICE_HEADERS = ["payee_id", *HEADERS, "target_amount"]


@pytest.fixture
def service(cli_sandbox: Any) -> Any:
    return cli_sandbox(settle_seconds=0.05)


def summary_cells(path: Path) -> list[list[Any]]:
    wb = openpyxl.load_workbook(path, read_only=True)
    grid = [list(r) for r in wb["Summary"].iter_rows(values_only=True)]
    wb.close()
    return grid


def test_report_of_an_all_valid_sheet_with_invoices_and_a_changed_payee(
        service: Any, tmp_path: Path) -> None:
    first = [row(1, payee_id="SUP-1"), row(2, payee_id="SUP-2")]
    paid = write_sheet(tmp_path / "oct.xlsx", first, INVOICE_HEADERS)
    assert batchpay("run", str(paid), "--out", str(tmp_path / "oct-r.xlsx"),
                    "--wait", "5").exit_code == 0
    second = [
        row(1, payee_id="SUP-1", payout_ref="NOV-1", account_number="6217000000000009876"),
        row(3, payee_id="SUP-3", payout_ref="NOV-3", amount=None,
            target_amount=Decimal("1234.56")),
        row(4, payee_id="SUP-4", payout_ref="NOV-4", amount=None,
            target_amount=Decimal("100.00")),
    ]
    sheet = write_sheet(tmp_path / "nov.xlsx", second, INVOICE_HEADERS)
    report = tmp_path / "report.xlsx"
    checked = batchpay("validate", str(sheet), "--report", str(report), "--no-bank-check")
    assert "HELD" in checked.stderr, checked
    cells = by_ref(report)
    assert cells["NOV-1"]["status"] == "HELD"
    assert "bank details changed" in cells["NOV-1"]["error"]
    assert cells["NOV-3"]["status"] == "VALID"
    grid = summary_cells(report)
    verdict = next(r for r in grid if r and r[0] == "Control totals")
    assert verdict[1] == "reconcile", verdict
    asked = [r for r in grid if r and len(r) > 3 and r[2] == "asked by invoice rows"]
    assert [(r[0], r[1], Decimal(str(r[3]))) for r in asked] == [
        ("NGN", "CNY", Decimal("1334.56"))]
    changes = results(report, "Payee changes")
    assert {(c["payout_ref"], c["decision"]) for c in changes} >= {("NOV-1", "HELD")}
