"""The results workbook: literal text, typed cells, control totals, and reading it back."""

from __future__ import annotations

import csv
import shutil
import subprocess
import sys
import zipfile
from datetime import datetime
from decimal import Decimal
from pathlib import Path

import openpyxl
import pytest
import xlsxwriter

from batchpay.sheet.outcomes import ResultRow, summarize
from batchpay.sheet.results import (
    RESULT_COLUMNS,
    VALIDATE_COLUMNS,
    write_results,
)
from batchpay.sheet.results_input import read_results
from batchpay.sheet.xlsx import StreamingWorksheet

D = Decimal
FORMULA_LIKE = ['=HYPERLINK("http://x","y")', "+1", "-2", "@SUM(A1)", "=1+1", "<r>x</r>",
                "<r><t>1</t></r>", "a & b <c>", " leading space", "_x0041_", "tab\there"]
INPUTS = ["payout_ref", "recipient_name", "account_number", "company_id", "amount",
          "source_currency", "status", "notes"]


def completed(row: int, amount: str, currency: str = "NGN", fee: str = "150.00",
              target: str = "434.78", status: str = "COMPLETED", **inputs: object) -> ResultRow:
    amount_d, fee_d = D(amount), D(fee)
    values = {"payout_ref": f"NOV26-{row:03d}", "recipient_name": "深圳市华强电子有限公司",
              "account_number": "6222021234567890123", "company_id": "91440300MA5DABCD1X",
              "amount": amount_d, "source_currency": currency, "status": "paid?",
              "notes": None}
    values.update(inputs)
    return ResultRow(
        row=row, inputs=[values[c] for c in INPUTS], status=status,
        reference_number="ABCDEFGHJK123", payout_id=f"9f1c-{row}", quote_id=f"q-{row}",
        rate=D("230.123456"), fee=fee_d, delivered=D(target), total_debit=amount_d + fee_d,
        updated_at="2026-11-30T10:15:02Z", amount=amount_d, source_currency=currency,
        target_currency="CNY")


def not_sent(row: int, amount: str, status: str, currency: str = "NGN", error: str = "") -> ResultRow:
    result = completed(row, amount, currency, status=status)
    result.reference_number = result.payout_id = ""
    result.fee = result.delivered = result.total_debit = None
    result.error = error
    return result


def invalid(row: int, **inputs: object) -> ResultRow:
    values = {c: None for c in INPUTS} | inputs
    return ResultRow(row=row, inputs=[values[c] for c in INPUTS], status="INVALID",
                     error="company_id: check character is wrong",
                     source_currency=str(values["source_currency"] or ""))


@pytest.fixture
def mixed_rows() -> list[ResultRow]:
    return [
        completed(2, "100000.00"),
        completed(3, "250000.50", status="PENDING"),
        completed(4, "9.95", fee="0.05", target="0.04", status="FAILED"),
        completed(5, "120.00", currency="USD", fee="1.20", target="860.00", status="UNKNOWN"),
        not_sent(6, "5000.00", "QUOTE_FAILED", error="Minimum target amount for transaction is 10"),
        not_sent(7, "75000.25", "REJECTED", error="Invalid Bank Sortcode"),
        not_sent(8, "300.00", "NOT_SENT", currency="USD"),
        invalid(9, payout_ref="NOV26-009", amount=D("12.345"), source_currency="NGN"),
    ]


def load(path: Path) -> openpyxl.Workbook:
    return openpyxl.load_workbook(path)


def column_values(sheet, name: str) -> list:
    headers = [c.value for c in sheet[1]]
    index = headers.index(name)
    return [row[index] for row in sheet.iter_rows(min_row=2)]


def test_formula_like_text_stays_literal_text(tmp_path: Path) -> None:
    rows = [completed(2 + i, "1000.00", recipient_name=text, notes=text)
            for i, text in enumerate(FORMULA_LIKE)]
    out = write_results(tmp_path / "r.xlsx", input_columns=INPUTS, rows=rows,
                        run_info=[("input file", "=cmd|' /C calc'!A0")])
    assert out.rows == len(FORMULA_LIKE)
    book = load(tmp_path / "r.xlsx")
    names = column_values(book["Results"], "recipient_name")
    # openpyxl shows a literal "_x0041_" in its OOXML escaped form; Excel shows "_x0041_"
    assert [c.value for c in names] == [
        "_x005F_x0041_" if t == "_x0041_" else t for t in FORMULA_LIKE]
    assert {c.data_type for c in names} == {"s"}
    assert book["Run"]["B2"].value == "=cmd|' /C calc'!A0"
    formulas = [c.coordinate for ws in book for row in ws.iter_rows() for c in row
                if c.data_type == "f"]
    assert formulas == []
    with zipfile.ZipFile(tmp_path / "r.xlsx") as archive:
        xml = b"".join(archive.read(n) for n in archive.namelist() if n.startswith("xl/worksheets/"))
    assert b"<f>" not in xml and b"<f " not in xml


def test_identifiers_are_text_and_amounts_numbers_with_currency_decimals(tmp_path: Path) -> None:
    rows = [
        completed(2, "9.95", account_number=6222021234567890, company_id="0012"),
        completed(3, "1500", currency="JPY", fee="10", target="70.00"),
        completed(4, "12.345", currency="KWD", fee="0.100", target="290.00"),
        # a 19-digit account typed as a number: its digits are lost, and it must show it
        invalid(5, account_number=6.222021234567891e18, amount=D("1.005"), source_currency="NGN"),
    ]
    write_results(tmp_path / "r.xlsx", input_columns=INPUTS, rows=rows)
    sheet = load(tmp_path / "r.xlsx")["Results"]
    accounts = column_values(sheet, "account_number")
    assert [c.value for c in accounts] == ["6222021234567890", "6222021234567890123",
                                           "6222021234567890123", "6.222021234567891e+18"]
    assert all(c.data_type == "s" for c in accounts)
    assert column_values(sheet, "company_id")[0].value == "0012"
    amounts = column_values(sheet, "amount")
    assert [c.value for c in amounts] == [9.95, 1500, 12.345, 1.005]
    assert [c.number_format for c in amounts] == ["#,##0.00", "#,##0", "#,##0.000", "#,##0.000"]
    fees = column_values(sheet, "fee")
    assert [c.number_format for c in fees[:3]] == ["#,##0.00", "#,##0", "#,##0.000"]
    assert column_values(sheet, "delivered_amount")[1].number_format == "#,##0.00"  # CNY
    rate = column_values(sheet, "rate")[0]
    assert rate.value == 230.123456 and rate.data_type == "n"
    row_numbers = column_values(sheet, "row")
    assert [c.value for c in row_numbers] == [2, 3, 4, 5]
    assert all(isinstance(c.value, int) for c in row_numbers)
    for name in ("reference_number", "payout_id", "quote_id"):
        assert column_values(sheet, name)[0].data_type == "s"
    updated = column_values(sheet, "updated_at")[0]  # a date-time cell, in UTC
    assert updated.value == datetime(2026, 11, 30, 10, 15, 2)
    assert updated.number_format == "yyyy-mm-dd hh:mm:ss"


def test_colliding_input_columns_get_input_suffix_and_read_back(tmp_path: Path) -> None:
    columns = ["payout_ref", "status", "status_input", "Fee", "amount", "source_currency"]
    row = ResultRow(row=2, inputs=["NOV26-001", "approved", "x", "waived", D("10.00"), "NGN"],
                    status="VALID", amount=D("10.00"), source_currency="NGN")
    write_results(tmp_path / "r.xlsx", input_columns=columns, rows=[row],
                  result_columns=VALIDATE_COLUMNS)
    sheet = load(tmp_path / "r.xlsx")["Results"]
    assert [c.value for c in sheet[1]] == [
        "payout_ref", "status_input", "status_input_input", "Fee_input", "amount",
        "source_currency",
        "row", "status", "error", "warning"]
    assert [c.value for c in sheet[2]][:8] == ["NOV26-001", "approved", "x", "waived", 10, "NGN",
                                               2, "VALID"]
    names, rows = read_results(tmp_path / "r.xlsx")
    assert names == ["payout_ref", "status", "status_input", "fee", "amount", "source_currency"]
    assert rows[0].inputs == ["NOV26-001", "approved", "x", "waived", 10, "NGN"]


def test_result_headers_collide_only_with_result_columns(tmp_path: Path) -> None:
    write_results(tmp_path / "r.xlsx", input_columns=["Payout Ref", "Row", "rows"],
                  rows=[ResultRow(row=2, inputs=["A-1", 7, 8], status="VALID")],
                  result_columns=VALIDATE_COLUMNS)
    header = [c.value for c in load(tmp_path / "r.xlsx")["Results"][1]]
    assert header[:3] == ["Payout Ref", "Row_input", "rows"]


def test_summary_counts_and_control_totals(tmp_path: Path, mixed_rows: list[ResultRow]) -> None:
    summary = summarize(mixed_rows)
    assert summary.counts == {"COMPLETED": 1, "PENDING": 1, "FAILED": 1, "UNKNOWN": 1,
                              "QUOTE_FAILED": 1, "REJECTED": 1, "NOT_SENT": 1, "INVALID": 1}
    ngn = summary.currencies["NGN"]
    assert (ngn.valid.rows, ngn.sent.rows, ngn.not_sent.rows, ngn.invalid.rows) == (5, 3, 2, 1)
    assert ngn.valid.amount == D("430010.70")
    assert ngn.sent.amount == D("350010.45")  # 100000.00 + 250000.50 + 9.95
    assert ngn.not_sent.amount == D("80000.25")  # 5000.00 + 75000.25
    assert ngn.sent.fee == D("300.05")
    assert ngn.sent.total_debit == D("350310.50")
    assert ngn.sent.target == {"CNY": D("869.60")}
    assert ngn.invalid.amount == 0 and ngn.invalid.missing_amount == 1
    usd = summary.currencies["USD"]
    assert (usd.valid.rows, usd.sent.rows, usd.not_sent.rows) == (1 + 1, 1, 1)
    assert usd.valid.amount == D("420.00") and usd.sent.target == {"CNY": D("860.00")}
    assert summary.reconciles and summary.problems == []

    returned = write_results(tmp_path / "r.xlsx", input_columns=INPUTS, rows=iter(mixed_rows))
    assert returned == summary
    sheet = load(tmp_path / "r.xlsx")["Summary"]
    cells = [[c.value for c in row] for row in sheet.iter_rows()]
    assert cells[0][:2] == ["Control totals", "reconcile"]
    by_status = {r[0]: r[1] for r in cells if r[0] in summary.counts}
    assert by_status == summary.counts
    assert cells[[r[0] for r in cells].index("total")][:2] == ["total", 8]
    money = {(r[0], r[1]): r[2:6] for r in cells if r[0] in ("NGN", "USD") and r[2] is not None}
    assert money["NGN", "valid"] == [5, 430010.7, 300.05, 350310.5]
    assert money["NGN", "sent"] == [3, 350010.45, 300.05, 350310.5]
    assert money["NGN", "not sent"] == [2, 80000.25, 0, 0]
    assert money["NGN", "valid - sent - not sent"][:2] == [0, 0]
    assert money["USD", "valid"][:2] == [2, 420]
    targets = [r[:4] for r in cells if r[:2] in (["NGN", "CNY"], ["USD", "CNY"])]
    assert ["NGN", "CNY", "sent", 869.6] in targets
    assert ["NGN", "CNY", "COMPLETED", 434.78] in targets


def test_summary_says_when_totals_do_not_reconcile(tmp_path: Path) -> None:
    wrong_debit = completed(2, "1000.00")
    wrong_debit.total_debit = D("1000.00")  # fee 150.00 missing from the debit
    rows = [wrong_debit, completed(3, "500.00", status="SENT?"), not_sent(4, "1.00", "NOT_SENT")]
    summary = write_results(tmp_path / "r.xlsx", input_columns=INPUTS, rows=rows)
    assert not summary.reconciles
    assert len(summary.problems) == 2
    assert "SENT?" in summary.problems[0] and "total debit" in summary.problems[1]
    verdict = load(tmp_path / "r.xlsx")["Summary"]["B1"].value
    assert verdict.startswith("DO NOT reconcile") and "SENT?" in verdict


def test_validate_report_counts_valid_rows_as_not_sent() -> None:
    rows = [ResultRow(row=2, inputs=[], status="VALID", amount=D("5.00"), source_currency="NGN"),
            ResultRow(row=3, inputs=[], status="INVALID")]
    summary = summarize(rows)
    assert summary.reconciles
    assert summary.currencies["NGN"].not_sent.amount == D("5.00")


def test_layout_frozen_header_filter_colours_and_run_sheet(tmp_path: Path,
                                                           mixed_rows: list[ResultRow]) -> None:
    run_info = [("run_id", "20261130-101500"), ("api_key", "fingerprint sha256:1a2b3c")]
    write_results(tmp_path / "r.xlsx", input_columns=INPUTS, rows=mixed_rows, run_info=run_info)
    book = load(tmp_path / "r.xlsx")
    assert book.sheetnames == ["Results", "Summary", "Run"]
    results = book["Results"]
    assert results.freeze_panes == "B2"  # the header row and the payout_ref column
    [highlight] = results.conditional_formatting
    assert "COMPLETED" in highlight.rules[0].formula[0]
    assert results.auto_filter.ref == f"A1:V{len(mixed_rows) + 1}"
    assert [c.value for c in results[1]][len(INPUTS):] == list(RESULT_COLUMNS)
    steps = {c.value: s.value for c, s in zip(column_values(results, "status"),
                                              column_values(results, "next_step"), strict=True)}
    assert steps["UNKNOWN"] == "run `batchpay sync`: never pay this row again yourself"
    assert "rerun" in steps["FAILED"] and steps["COMPLETED"] is None
    # identifiers are Text cells, so that a fix typed over them stays text; printed landscape,
    # one page wide, with the header on every page
    assert all(c.number_format == "@" for c in column_values(results, "account_number")
               if c.value is not None)
    assert results.page_setup.orientation == "landscape"
    assert results.sheet_properties.pageSetUpPr.fitToPage
    assert results.page_setup.fitToHeight == 0 and results.print_title_rows == "$1:$1"
    statuses = {c.value: c.fill.fgColor.rgb for c in column_values(results, "status")}
    assert statuses["COMPLETED"].endswith("C6EFCE")
    assert statuses["FAILED"].endswith("FFC7CE") and statuses["INVALID"].endswith("FFC7CE")
    assert statuses["UNKNOWN"].endswith("FFEB9C") and statuses["PENDING"].endswith("DDEBF7")
    assert results.column_dimensions["B"].width > 20  # a Chinese company name fits
    assert [[c.value for c in r] for r in book["Run"].iter_rows()] == [
        ["field", "value"], ["run_id", "20261130-101500"], ["api_key", "fingerprint sha256:1a2b3c"]]

    write_results(tmp_path / "v.xlsx", input_columns=INPUTS, rows=mixed_rows[:1],
                  result_columns=VALIDATE_COLUMNS)
    book = load(tmp_path / "v.xlsx")
    assert book.sheetnames == ["Results", "Summary"]
    assert [c.value for c in book["Results"][1]][len(INPUTS):] == list(VALIDATE_COLUMNS)


def test_no_rows_still_writes_headers_and_totals(tmp_path: Path) -> None:
    summary = write_results(tmp_path / "r.xlsx", input_columns=INPUTS, rows=[])
    assert summary.rows == 0 and summary.reconciles
    assert load(tmp_path / "r.xlsx")["Results"].max_row == 1


def test_failure_while_writing_leaves_no_file(tmp_path: Path) -> None:
    def rows():
        yield completed(2, "1.00")
        raise RuntimeError("journal went away")

    with pytest.raises(RuntimeError):
        write_results(tmp_path / "r.xlsx", input_columns=INPUTS, rows=rows())
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(ValueError, match="input values"):
        write_results(tmp_path / "r.xlsx", input_columns=INPUTS[:2], rows=[completed(2, "1.00")])
    with pytest.raises(FileNotFoundError):
        write_results(tmp_path / "missing" / "r.xlsx", input_columns=INPUTS, rows=[])


def test_streaming_worksheet_writes_the_same_xml_as_xlsxwriter(tmp_path: Path) -> None:
    texts = ["plain", "深圳市华强电子有限公司", *FORMULA_LIKE, "trailing ", "nl\nx", 'q"q',
             "ctrl\x01", "\ufffe", "a" * 40000]

    def build(path: Path, worksheet_class: type | None) -> bytes:
        book = xlsxwriter.Workbook(str(path), {"constant_memory": True,
                                               "strings_to_formulas": False})
        sheet = book.add_worksheet("Results", worksheet_class=worksheet_class)
        money = book.add_format({"num_format": "#,##0.00"})
        sheet.set_row(3, 30)  # a row with its own height goes through xlsxwriter itself
        for r in range(6):
            for c, text in enumerate(texts):
                sheet.write_string(r, c * 2, text, money if c % 3 else None)
                sheet.write_number(r, c * 2 + 1, r * 1000.5 + c, money if c % 2 else None)
        sheet.write_rich_string(6, 0, "a", book.add_format({"bold": True}), "b")
        sheet.write_blank(6, 3, None, money)
        sheet.write_number(7, 300, 1)
        book.close()
        with zipfile.ZipFile(path) as archive:
            return archive.read("xl/worksheets/sheet1.xml")

    fast = build(tmp_path / "fast.xlsx", StreamingWorksheet)
    stock = build(tmp_path / "stock.xlsx", None)
    assert fast == stock


def test_read_results_returns_inputs_and_keeps_operator_corrections(
        tmp_path: Path, mixed_rows: list[ResultRow]) -> None:
    path = tmp_path / "r.xlsx"
    write_results(path, input_columns=INPUTS, rows=mixed_rows)
    book = load(path)
    sheet = book["Results"]
    sheet["C8"].value = "6222029999888877776"  # the operator corrects row 7's account
    sheet["C9"].value = 6222021234567890123  # and types another one as a number
    book.save(path)
    columns, rows = read_results(path)
    assert columns == INPUTS
    assert [r.row for r in rows] == [2, 3, 4, 5, 6, 7, 8, 9]
    assert [r.status for r in rows] == [r.status for r in mixed_rows]
    assert rows[0].reference_number == "ABCDEFGHJK123" and rows[5].reference_number == ""
    assert rows[0].inputs == ["NOV26-002", "深圳市华强电子有限公司", "6222021234567890123",
                              "91440300MA5DABCD1X", D("100000"), "NGN", "paid?", None]
    assert rows[6].inputs[2] == "6222029999888877776"
    assert rows[7].error.startswith("account_number: cell C9 is a number with 19 digits")


def test_read_results_refuses_a_payout_sheet(tmp_path: Path) -> None:
    from batchpay.errors import InputError

    book = xlsxwriter.Workbook(str(tmp_path / "p.xlsx"))
    sheet = book.add_worksheet("Results")
    sheet.write_row(0, 0, ["payout_ref", "amount"])
    sheet.write_row(1, 0, ["A-1", 5])
    book.close()
    with pytest.raises(InputError, match="not a batchpay results workbook"):
        read_results(tmp_path / "p.xlsx")


def test_benchmark_short_mode_meets_targets() -> None:
    script = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_results.py"
    done = subprocess.run([sys.executable, str(script), "--rows", "300"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "rows=300" in done.stdout and "OK" in done.stdout


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("soffice") is None, reason="LibreOffice (soffice) not installed")
def test_libreoffice_shows_formula_like_text_literally(tmp_path: Path) -> None:
    rows = [completed(2 + i, "1000.00", recipient_name=text) for i, text in
            enumerate(t for t in FORMULA_LIKE if "\t" not in t)]
    write_results(tmp_path / "r.xlsx", input_columns=INPUTS, rows=rows)
    done = subprocess.run(
        ["soffice", f"-env:UserInstallation=file://{tmp_path}/lo-profile", "--headless",
         "--convert-to", "csv:Text - txt - csv (StarCalc):44,34,76,1", "--outdir", str(tmp_path),
         str(tmp_path / "r.xlsx")],
        capture_output=True, text=True, timeout=110)
    assert done.returncode == 0, done.stderr
    with open(tmp_path / "r.csv", encoding="utf-8", newline="") as handle:
        table = list(csv.reader(handle))
    names = [line[1] for line in table[1:]]
    assert names == [t for t in FORMULA_LIKE if "\t" not in t]
    assert table[1][2] == "6222021234567890123"
