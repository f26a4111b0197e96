"""`check_sheet_file`, the library function behind `batchpay validate`: read, bank names,
payee changes and the report in one outcome. Requests are counted at the sandbox."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from batchpay.connect import open_service
from batchpay.controls.payees import CHANGED, NEW
from batchpay.engine.validate_sheet import check_sheet_file
from batchpay.errors import UsageError
from batchpay.settings.load import load_settings
from batchpay.statuses import EXIT_OK, EXIT_ROWS
from tests.support.e2e import batchpay, results, sandbox_stats
from tests.support.sheets import row, rows, write_sheet

NEAR_MISS = "bank_name: 中国工商 is not in the service's bank list for CN/CNY; did you mean 中国工商银行?"


@pytest.fixture
def service(cli_sandbox: Any) -> Any:
    return cli_sandbox(settle_seconds=0.2)


def bank_requests(url: str) -> int:
    return int(sandbox_stats(url)["requests"].get("GET /v1/bank 200", 0))


def test_one_outcome_holds_rows_bank_names_payee_changes_report_and_exit_code(
        service: Any, tmp_path: Path) -> None:
    assert batchpay("run", str(write_sheet(tmp_path / "nov.xlsx", rows(2))),
                    "--wait", "10").exit_code == 0
    sheet = write_sheet(tmp_path / "dec.xlsx", [
        row(1, account_number="6222111111111111111"),  # a known payee, new account
        row(3, bank_name="中国工商"),  # a new payee, a near miss
        row(4, amount="abc")])  # invalid
    settings = load_settings()
    report = tmp_path / "check.xlsx"
    checked = check_sheet_file(sheet, settings, lambda: open_service(settings), report=report)
    assert checked.exit_code == EXIT_ROWS
    assert checked.outcome.validation.counts == {"VALID": 2, "INVALID": 1}
    assert checked.bank_notes == []
    assert bank_requests(service.url) == 1
    assert {c["payout_ref"]: c["reason"] for c in checked.payee_changes} == {
        "T-00001": CHANGED, "T-00003": NEW}
    assert checked.report == report
    got = {r["payout_ref"]: r for r in results(report)}
    assert got["T-00003"]["status"] == "VALID" and got["T-00003"]["warning"] == NEAR_MISS
    assert got["T-00004"]["status"] == "INVALID" and got["T-00004"]["error"].startswith("amount")


def test_without_a_service_nothing_is_asked(service: Any, tmp_path: Path) -> None:
    sheet = write_sheet(tmp_path / "nov.xlsx", [row(1, bank_name="中国工商")])
    checked = check_sheet_file(sheet, load_settings(), None)
    assert checked.exit_code == EXIT_OK
    assert checked.report is None and checked.bank_notes == [] and checked.payee_changes == []
    assert checked.outcome.validation.rows[0].warnings == []
    assert bank_requests(service.url) == 0
    assert not (tmp_path / "journal").exists()  # no journal made, no list cached


def test_a_service_that_cannot_be_opened_is_one_note(service: Any, tmp_path: Path) -> None:
    sheet = write_sheet(tmp_path / "nov.xlsx", rows(2))

    def unusable() -> Any:
        raise UsageError("no service today")

    checked = check_sheet_file(sheet, load_settings(), unusable)
    assert checked.bank_notes == ["Bank names not checked: no service today"]
    assert checked.exit_code == EXIT_OK


def test_an_existing_report_is_refused_before_anything_is_read(service: Any,
                                                               tmp_path: Path) -> None:
    report = tmp_path / "check.xlsx"
    report.write_bytes(b"kept")
    with pytest.raises(UsageError, match="already exists"):
        check_sheet_file(tmp_path / "missing.xlsx", load_settings(), None, report=report)
    assert report.read_bytes() == b"kept"
    sheet = write_sheet(tmp_path / "nov.xlsx", rows(1))
    checked = check_sheet_file(sheet, load_settings(), None, report=report, overwrite=True)
    assert results(report)[0]["status"] == "VALID" and checked.report == report
