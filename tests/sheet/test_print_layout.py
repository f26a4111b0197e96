"""What every auditor sees first: dates wide enough not to show ###, a Results sheet that
prints readable (several pages wide, payout_ref on each), a Run sheet whose fields and
values print on one page."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import openpyxl

from batchpay.sheet.outcomes import ResultRow
from batchpay.sheet.results import RESULT_COLUMNS, write_results

INPUTS = ["payout_ref", "recipient_type", "recipient_name", "company_name", "company_id",
          "ic_number", "account_number", "bank_name", "bank_city", "sort_code", "amount",
          "source_currency", "reason", "remark", "item_category", "currency", "country",
          "payment_channel", "payee_id", "notes"]


def workbook(tmp_path: Path, rows: int = 3) -> openpyxl.Workbook:
    path = tmp_path / "r.xlsx"
    write_results(path, input_columns=INPUTS, rows=[
        ResultRow(row=n + 2, inputs=[f"R-{n}" if c == "payout_ref" else "x" for c in INPUTS],
                  status="COMPLETED", updated_at="2026-11-30T10:15:02.123456Z",
                  amount=Decimal("10.00"), source_currency="NGN", target_currency="CNY")
        for n in range(rows)], run_info=[("run id", "20261130-101502-abcd"),
                                         ("journal chain head", "ab" * 32)])
    return openpyxl.load_workbook(path)


def test_updated_at_is_wide_enough_for_its_date_time(tmp_path: Path) -> None:
    ws = workbook(tmp_path)["Results"]
    header = [c.value for c in ws[1]]
    letter = openpyxl.utils.get_column_letter(header.index("updated_at") + 1)
    assert ws[f"{letter}2"].is_date
    assert ws.column_dimensions[letter].width >= 19  # "2026-11-30 10:15:02"


def test_results_print_readably_with_the_payout_ref_on_every_page(tmp_path: Path) -> None:
    ws = workbook(tmp_path)["Results"]
    assert len(INPUTS) + len(RESULT_COLUMNS) > 30
    assert ws.page_setup.orientation == "landscape"
    assert ws.sheet_properties.pageSetUpPr.fitToPage
    assert ws.page_setup.fitToWidth >= 2  # not 34 columns squeezed onto one page
    assert ws.print_title_rows == "$1:$1"
    assert ws.print_title_cols == "$A:$A"  # payout_ref on every page


def test_run_sheet_prints_fields_and_values_on_one_page(tmp_path: Path) -> None:
    ws = workbook(tmp_path)["Run"]
    assert ws.sheet_properties.pageSetUpPr.fitToPage
    assert ws.page_setup.fitToWidth in (None, 1)  # absent: 1 page wide
    assert ws["B2"].alignment.wrap_text
