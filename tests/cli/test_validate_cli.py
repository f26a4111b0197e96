"""`batchpay validate`: exit codes, the console summary, --json and --report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import openpyxl
from click.testing import CliRunner

from batchpay.cli import cli
from tests.support.sheets import write_grid

HEADERS = ["Payout Ref", "Recipient Type", "Recipient Name", "Account Number", "Bank Name",
           "Amount", "Source Currency", "Reason", "Cost Centre"]
GOOD = ["P-1", "INDIVIDUAL", "张三", "6222021234567890123", "中国银行", "1000.50", "NGN",
        "Salary", "CC-1"]


def workbook(path: Path, rows: list[list[Any]]) -> Path:
    return write_grid(path, HEADERS, rows)


def invoke(*args: str) -> Any:
    return CliRunner().invoke(cli, ["validate", *args])


def test_all_valid_exits_0_and_writes_nothing(tmp_path: Path) -> None:
    sheet = workbook(tmp_path / "march.xlsx", [GOOD, ["P-2", *GOOD[1:]]])
    result = invoke(str(sheet))
    assert result.exit_code == 0, result.output
    assert "VALID" in result.stderr and "2 rows" in result.stderr
    assert result.stdout == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["march.xlsx"]


def test_invalid_rows_exit_1_with_a_table_and_json(tmp_path: Path) -> None:
    bad_account = ["P-2", *GOOD[1:3], 6222021234567890123, *GOOD[4:]]
    sheet = workbook(tmp_path / "march.xlsx", [GOOD, bad_account, ["P-3", *GOOD[1:5], "1.005",
                                                                    *GOOD[6:]]])
    result = invoke(str(sheet), "--json")
    assert result.exit_code == 1
    assert "account_number" in result.stderr and "cell D3" in result.stderr
    document = json.loads(result.stdout)
    assert document["run_id"] is None and document["outputs"] == []
    assert document["counts"] == {"VALID": 1, "INVALID": 2}
    assert [r["status"] for r in document["rows"]] == ["VALID", "INVALID", "INVALID"]
    assert document["rows"][1]["payout_ref"] == "P-2"
    assert document["rows"][2]["error"].startswith("amount: 1.005 has 3 decimals but NGN has 2")
    assert all(r["reference_number"] is None for r in document["rows"])


def test_report_holds_every_row_with_status_and_messages(tmp_path: Path) -> None:
    sheet = workbook(tmp_path / "march.xlsx",
                     [GOOD, ["P-1", *GOOD[1:]], [], ["P-4", "PERSON", *GOOD[2:]]])
    report = tmp_path / "check.xlsx"
    result = invoke(str(sheet), "--report", str(report), "--json")
    assert result.exit_code == 1
    assert json.loads(result.stdout)["outputs"] == [str(report)]
    book = openpyxl.load_workbook(report, read_only=True)
    assert "Summary" in book.sheetnames
    rows = list(book["Results"].iter_rows(values_only=True))
    assert list(rows[0]) == HEADERS + ["row", "status", "error", "warning"]
    assert [r[len(HEADERS)] for r in rows[1:]] == [2, 3, 5]  # row 4 is blank: skipped
    assert [r[len(HEADERS) + 1] for r in rows[1:]] == ["INVALID", "INVALID", "INVALID"]
    assert rows[1][len(HEADERS) + 2] == ("payout_ref: P-1 is also used in row 3; every payout "
                                         "needs its own payout_ref")
    errors = rows[3][len(HEADERS) + 2]
    assert errors.startswith("recipient_type: must be BUSINESS or INDIVIDUAL")
    assert rows[1][3] == "6222021234567890123"  # identifiers stay text
    assert rows[1][-5] == "CC-1"  # unknown columns are carried


def test_unreadable_file_exits_2_with_one_line(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_bytes(b"\x00\x00binary")
    result = invoke(str(path))
    assert result.exit_code == 2
    assert result.stderr.startswith("Error: ")
    assert "Traceback" not in result.output
    assert invoke(str(tmp_path / "missing.xlsx")).exit_code == 2


def test_wrong_sheet_name_lists_the_sheets(tmp_path: Path) -> None:
    sheet = workbook(tmp_path / "march.xlsx", [GOOD])
    result = invoke(str(sheet), "--sheet", "April")
    assert result.exit_code == 2
    assert "'Payouts'" in result.stderr


def test_source_currency_option(tmp_path: Path) -> None:
    sheet = workbook(tmp_path / "march.xlsx", [[*GOOD[:6], None, *GOOD[7:]]])
    assert invoke(str(sheet)).exit_code == 1
    assert invoke(str(sheet), "--source-currency", "NGN").exit_code == 0
    assert invoke(str(sheet), "--source-currency", "NAIRA").exit_code == 2
