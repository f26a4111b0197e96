"""Reading sheets exactly: cell types kept, headers matched, rows numbered, CSV encodings."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import openpyxl
import pytest
import xlsxwriter

from batchpay.errors import InputError
from batchpay.sheet.read import read_sheet
from tests.support.sheets import write_grid

HEADERS = ["payout_ref", "recipient_type", "recipient_name", "company_name", "company_id",
           "ic_number", "account_number", "bank_name", "amount", "source_currency", "reason"]
ACCOUNT = HEADERS.index("account_number")  # column G


def text_row(ref: str, account: str = "6222021234567890123", amount: str = "1000.50") -> list[Any]:
    return [ref, "INDIVIDUAL", "张三", None, None, None, account, "ICBC", amount, "NGN", "Salary"]


def write_xlsx(path: Path, rows: list[list[Any]], headers: list[str] = HEADERS,
               sheet: str = "Payouts") -> Path:
    return write_grid(path, headers, rows, sheet=sheet)


def column(sheet: Any, name: str) -> list[Any]:
    return sheet.column_values(name)


def test_text_cells_are_kept_exactly(tmp_path: Path) -> None:
    rows = [text_row("A-1", account="0012345678901234567"), text_row("NA", account="N/A")]
    sheet = read_sheet(write_xlsx(tmp_path / "p.xlsx", rows))
    assert sheet.sheet_name == "Payouts"
    assert sheet.columns == HEADERS
    assert column(sheet, "account_number") == ["0012345678901234567", "N/A"]
    assert column(sheet, "payout_ref") == ["A-1", "NA"]
    assert column(sheet, "recipient_name") == ["张三", "张三"]
    assert [r.row for r in sheet.rows] == [2, 3]
    assert all(not r.errors for r in sheet.rows)


@pytest.mark.parametrize("number", [6222021234567890, 6222021234567890123])
def test_numeric_account_with_more_than_15_digits_names_the_cell(tmp_path: Path,
                                                                 number: int) -> None:
    rows = [text_row("A-1"), text_row("A-2"), text_row("A-3"), text_row("A-4")]
    rows[3][ACCOUNT] = number  # row 5 of the sheet, column G
    sheet = read_sheet(write_xlsx(tmp_path / "p.xlsx", rows))
    error = sheet.rows[3].errors["account_number"]
    assert "cell G5" in error
    assert f"{len(str(number))} digits" in error
    assert "format the column as Text" in error
    assert not sheet.rows[0].errors


def test_numeric_identifier_with_15_digits_or_fewer_keeps_its_number(tmp_path: Path) -> None:
    rows = [text_row("A-1")]
    rows[0][ACCOUNT] = 622202123456789
    sheet = read_sheet(write_xlsx(tmp_path / "p.xlsx", rows))
    assert column(sheet, "account_number") == [622202123456789]
    assert not sheet.rows[0].errors


def test_amounts_become_decimals_from_the_shortest_repr(tmp_path: Path) -> None:
    rows = [text_row("A-1", amount="1,000.50"), text_row("A-2"), text_row("A-3")]
    rows[1][HEADERS.index("amount")] = 1234.56
    rows[2][HEADERS.index("amount")] = 99.999
    sheet = read_sheet(write_xlsx(tmp_path / "p.xlsx", rows))
    assert column(sheet, "amount") == ["1,000.50", Decimal("1234.56"),
                                       Decimal("99.999")]


def test_title_case_headers_and_unknown_columns_in_order(tmp_path: Path) -> None:
    headers = [h.replace("_", " ").title() for h in HEADERS] + ["Cost Centre", " Notes "]
    rows = [text_row("A-1") + ["CC-9", "x"]]
    sheet = read_sheet(write_xlsx(tmp_path / "p.xlsx", rows, headers=headers))
    assert sheet.columns == HEADERS + ["cost_centre", "notes"]
    assert sheet.headers[0] == "Payout Ref"
    assert sheet.rows[0].values[-2:] == ["CC-9", "x"]


def test_blank_rows_are_skipped_and_rows_keep_their_numbers(tmp_path: Path) -> None:
    rows = [text_row("A-1"), [None] * len(HEADERS), ["  "] + [None] * 10, text_row("A-4")]
    sheet = read_sheet(write_xlsx(tmp_path / "p.xlsx", rows))
    assert [r.row for r in sheet.rows] == [2, 5]


def test_formula_without_saved_value_is_an_error(tmp_path: Path) -> None:
    workbook = openpyxl.Workbook()
    ws = workbook.active
    ws.title = "Payouts"
    ws.append(HEADERS)
    ws.append(text_row("A-1"))
    ws.append(text_row("A-2"))
    ws["I3"] = "=500*2"  # openpyxl saves formulas without a computed value
    workbook.save(tmp_path / "f.xlsx")
    sheet = read_sheet(tmp_path / "f.xlsx")
    assert "cell I3 is a formula with no saved value" in sheet.rows[1].errors["amount"]
    assert not sheet.rows[0].errors


def test_formula_with_saved_value_counts_with_that_value(tmp_path: Path) -> None:
    workbook = xlsxwriter.Workbook(str(tmp_path / "f.xlsx"))
    ws = workbook.add_worksheet("Payouts")
    ws.write_row(0, 0, HEADERS)
    for c, value in enumerate(text_row("A-1")):
        if value is not None:
            ws.write_string(1, c, value)
    ws.write_formula(1, HEADERS.index("amount"), "=500*2", None, 1000)
    ws.write_formula(1, HEADERS.index("reason"), '="Sal"&"ary"', None, "Salary")
    ws.write_formula(1, HEADERS.index("bank_name"), "=1/0", None, "#DIV/0!")
    workbook.close()
    sheet = read_sheet(tmp_path / "f.xlsx")
    row = sheet.rows[0]
    assert column(sheet, "amount") == [Decimal("1000")]
    assert column(sheet, "reason") == ["Salary"]
    assert row.errors == {"bank_name": "cell H2 shows the error #DIV/0!"}


def test_default_sheet_is_payouts_else_the_first(tmp_path: Path) -> None:
    path = tmp_path / "two.xlsx"
    workbook = xlsxwriter.Workbook(str(path))
    notes = workbook.add_worksheet("Notes")
    notes.write_string(0, 0, "just notes")
    data = workbook.add_worksheet("Payouts")
    data.write_row(0, 0, HEADERS)
    data.write_row(1, 0, ["A-1"])
    other = workbook.add_worksheet("March")
    other.write_row(0, 0, HEADERS)
    other.write_row(1, 0, ["M-1"])
    workbook.close()
    assert column(read_sheet(path), "payout_ref") == ["A-1"]
    assert column(read_sheet(path, sheet="march"), "payout_ref") == ["M-1"]
    with pytest.raises(InputError) as refused:
        read_sheet(path, sheet="April")
    assert "'Notes', 'Payouts', 'March'" in (refused.value.hint or "")
    first_only = write_xlsx(tmp_path / "one.xlsx", [text_row("B-1")], sheet="Sheet1")
    assert read_sheet(first_only).sheet_name == "Sheet1"


def test_title_row_above_the_headers_is_refused(tmp_path: Path) -> None:
    workbook = openpyxl.Workbook()
    ws = workbook.active
    ws["A1"] = "Supplier payments March 2024"
    ws.merge_cells("A1:K1")
    ws.append(HEADERS)
    ws.append(text_row("A-1"))
    workbook.save(tmp_path / "t.xlsx")
    with pytest.raises(InputError) as refused:
        read_sheet(tmp_path / "t.xlsx")
    assert "headers not found in row 1" in refused.value.message
    assert "row 2" in refused.value.message
    assert "Row 1 must be the headers" in (refused.value.hint or "")


def csv_text(rows: list[list[str]]) -> str:
    return "\n".join(",".join(r) for r in [HEADERS] + rows) + "\n"


ROWS = [["R-1", "individual", "张三", "", "", "", "0062220212345678901", "中国工商银行",
         "1000.50", "NGN", "工资"],
        [""] * 11,
        ["R-3", "BUSINESS", "深圳市华强电子有限公司", "深圳市华强电子有限公司", "91350100M000100Y43",
         "", "6222021234567890123", "中国银行", "NA", "NGN", "货款"]]


@pytest.mark.parametrize("encoding", ["utf-8", "utf-8-sig", "gb18030"])
def test_csv_encodings_keep_chinese_names(tmp_path: Path, encoding: str) -> None:
    path = tmp_path / "p.csv"
    path.write_bytes(csv_text(ROWS).encode(encoding))
    sheet = read_sheet(path)
    assert sheet.columns == HEADERS  # the BOM is not part of the first header
    assert column(sheet, "recipient_name") == ["张三", "深圳市华强电子有限公司"]
    assert column(sheet, "bank_name") == ["中国工商银行", "中国银行"]
    assert column(sheet, "account_number") == ["0062220212345678901", "6222021234567890123"]
    assert column(sheet, "amount") == [Decimal("1000.50"), "NA"]  # a number, "NA" as text
    assert [r.row for r in sheet.rows] == [2, 4]


def test_sha256_is_of_the_file_bytes(tmp_path: Path) -> None:
    import hashlib

    path = tmp_path / "p.csv"
    path.write_bytes(csv_text(ROWS).encode())
    assert read_sheet(path).sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
