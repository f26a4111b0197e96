"""Values an attacker (or a careless paste) puts in a sheet: huge amounts, digits that are
not 0-9, console markup, payout_refs that differ only in case. Each is one INVALID row or
shown as typed; none crashes batchpay or pays twice."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from tests.support.e2e import batchpay, by_ref, sandbox_payouts
from tests.support.sheets import rows, write_sheet


@pytest.fixture
def service(cli_sandbox: Any) -> Any:
    return cli_sandbox(settle_seconds=0.05)


def errors(result: Any) -> dict[str, str]:
    document = json.loads(result.stdout)
    return {r["payout_ref"]: r["error"] or "" for r in document["rows"]}


def test_huge_amounts_and_non_ascii_digits_are_invalid_rows(service: Any, tmp_path: Path) -> None:
    sheet_rows = rows(5)
    sheet_rows[0]["amount"] = 1e27  # a number cell: 28 digits
    sheet_rows[1]["amount"] = "1234567890123.456"  # 16 significant digits, as text
    sheet_rows[2]["account_number"] = "６２２２０００００００００００００００３"  # full-width
    sheet_rows[3]["account_number"] = "٦٢٢٢٠٠٠٠٠٠٠٠٠٠٠٠٠٠٤"  # Arabic-Indic digits
    sheet = write_sheet(tmp_path / "nov.xlsx", sheet_rows)
    result = batchpay("validate", str(sheet), "--no-bank-check", "--json")
    assert result.exit_code == 1, result
    found = errors(result)
    assert "more than 15 significant digits" in found["T-00001"]
    assert "more than 15 significant digits" in found["T-00002"]
    assert "digits other than 0-9" in found["T-00003"]
    assert "digits other than 0-9" in found["T-00004"]
    assert found["T-00005"] == ""
    paid = batchpay("run", str(sheet), "--skip-invalid", "--wait", "2", "--json",
                    "--out", str(tmp_path / "r.xlsx"))
    assert paid.exit_code == 1, paid
    assert [p["accountNumber"] for p in sandbox_payouts(service.url)] == [
        sheet_rows[4]["account_number"]]


def test_console_markup_in_cells_is_shown_as_typed(service: Any, tmp_path: Path) -> None:
    sheet_rows = rows(3)
    sheet_rows[0]["account_number"] = "6222[/x]0001"  # invalid, and shown in the error table
    sheet_rows[1]["remark"] = "[bold]urgent[/bold] [/x]"
    sheet_rows[2]["reason"] = "Invoice [link=http://x]INV-3[/link]"
    sheet = write_sheet(tmp_path / "nov.xlsx", sheet_rows)
    checked = batchpay("validate", str(sheet), "--no-bank-check")
    assert checked.exit_code == 1, checked
    assert "6222[/x]0001" in checked.stderr
    paid = batchpay("run", str(sheet), "--skip-invalid", "--wait", "2", "--json",
                    "--out", str(tmp_path / "r.xlsx"))
    assert paid.exit_code == 1, paid
    document = json.loads(paid.stdout)  # the JSON is whole after payouts went out
    assert document["counts"]["COMPLETED"] == 2
    assert len(sandbox_payouts(service.url)) == 2
    assert "6222[/x]0001" in paid.stderr


def test_payout_refs_that_differ_only_in_case_are_one_payment(service: Any,
                                                              tmp_path: Path) -> None:
    twins = rows(2)
    twins[1]["payout_ref"] = "t-00001"
    sheet = write_sheet(tmp_path / "twins.xlsx", twins)
    checked = batchpay("validate", str(sheet), "--no-bank-check", "--json")
    found = errors(checked)
    assert "also used in row 3 (t-00001)" in found["T-00001"]
    assert "differ only in case" in found["t-00001"]

    first = write_sheet(tmp_path / "nov.xlsx", rows(1))
    assert batchpay("run", str(first), "--wait", "2", "--out",
                    str(tmp_path / "r.xlsx")).exit_code == 0
    again = rows(1, amount=Decimal("100001.50"))
    again[0]["payout_ref"] = "t-00001"
    sheet = write_sheet(tmp_path / "dec.xlsx", again)
    result = batchpay("run", str(sheet), "--wait", "2", "--out", str(tmp_path / "d.xlsx"))
    assert result.exit_code == 1, result
    cell = by_ref(tmp_path / "d.xlsx")["t-00001"]
    assert cell["status"] == "INVALID" and "differs only in case from T-00001" in cell["error"]
    assert len(sandbox_payouts(service.url)) == 1


def test_a_workbook_that_cannot_be_written_after_paying_says_what_was_paid(
        service: Any, tmp_path: Path, monkeypatch: Any) -> None:
    import errno

    from batchpay.engine import runner

    def full_disk(*args: Any, **kwargs: Any) -> Any:
        raise OSError(errno.ENOSPC, "No space left on device")

    sheet = write_sheet(tmp_path / "nov.xlsx", rows(2))
    with monkeypatch.context() as patched:
        patched.setattr(runner, "render_run", full_disk)
        result = batchpay("run", str(sheet), "--wait", "2", "--out", str(tmp_path / "r.xlsx"))
    assert result.exit_code == 1, result
    assert "2 row(s) were sent and are in the journal" in result.stderr
    assert "No space left on device" in result.stderr and "Traceback" not in result.stderr
    assert "batchpay report --run" in result.stderr
    run_id = json.loads(batchpay("runs", "--json").stdout)[0]["run_id"]
    assert batchpay("report", "--run", run_id, "--out", str(tmp_path / "r.xlsx")).exit_code == 0
    assert {r["status"] for r in by_ref(tmp_path / "r.xlsx").values()} <= {
        "COMPLETED", "PENDING", "PROCESSING"}
    assert len(sandbox_payouts(service.url)) == 2


def test_a_number_cell_whose_format_pads_zeros_is_refused(tmp_path: Path) -> None:
    """`0000000000000` shows 12345678901 as 0012345678901; the cell holds no zeros."""
    import xlsxwriter

    from batchpay.sheet.read import read_sheet
    from batchpay.sheet.validate import validate_sheet

    sheet_rows = rows(3)
    path = write_sheet(tmp_path / "nov.xlsx", sheet_rows)
    workbook = xlsxwriter.Workbook(str(path))
    sheet = workbook.add_worksheet("Payouts")
    padded = workbook.add_format({"num_format": "0000000000000"})
    plain = workbook.add_format({"num_format": "0"})
    headers = list(sheet_rows[0])
    account = headers.index("account_number")
    sheet.write_row(0, 0, headers)
    for r, values in enumerate(sheet_rows, start=1):
        sheet.write_row(r, 0, [str(v) if v is not None else None for v in values.values()])
    sheet.write_number(1, account, 12345678901, padded)  # shows 0012345678901
    sheet.write_number(2, account, 62220212345678, plain)  # a plain number: read as typed
    sheet.write_number(3, headers.index("amount"), 1500, padded)  # an amount: not an id
    workbook.close()
    validation = validate_sheet(read_sheet(path))
    by_ref = {r.payout_ref: r for r in validation.rows}
    assert by_ref["T-00001"].status == "INVALID"
    assert "shown as 0012345678901 by the cell's format" in by_ref["T-00001"].error
    assert by_ref["T-00002"].status == "VALID", by_ref["T-00002"].error
    assert by_ref["T-00003"].status == "VALID", by_ref["T-00003"].error
