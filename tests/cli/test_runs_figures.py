"""A run that sends nothing says so (its Run sheet debits 0, `runs` shows 0 sent), so adding
up Run sheets never counts a payout twice; `runs` shows rows as they stand after `sync`."""

from __future__ import annotations

import json
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from tests.support.e2e import batchpay, results, sandbox_payouts
from tests.support.sheets import row, rows, write_sheet


@pytest.fixture
def service(cli_sandbox: Any) -> Any:
    return cli_sandbox(settle_seconds=0.3)


def run_sheet(path: Path) -> dict[str, str]:
    return {str(r["field"]): str(r["value"]) for r in results(path, "Run")}


def test_a_second_run_that_sends_nothing_debits_nothing(service: Any, tmp_path: Path) -> None:
    sheet = write_sheet(tmp_path / "nov.xlsx", rows(3))
    assert batchpay("run", str(sheet), "--out", str(tmp_path / "1.xlsx"),
                    "--wait", "5").exit_code == 0
    assert batchpay("run", str(sheet), "--out", str(tmp_path / "2.xlsx")).exit_code == 0
    assert len(sandbox_payouts(service.url)) == 3
    first, second = run_sheet(tmp_path / "1.xlsx"), run_sheet(tmp_path / "2.xlsx")
    debit = sum(Decimal(str(p["sourceAmount"])) for p in sandbox_payouts(service.url))
    assert Decimal(first["total debit NGN"].replace(",", "")) > debit  # amounts + fees
    assert first["payouts sent by this run"] == "3"
    assert second["payouts sent by this run"] == "0"
    assert "total debit NGN" not in second
    assert second["total debit"].startswith("0: this run sent nothing")
    listed = json.loads(batchpay("runs", "--json").stdout)
    assert [r["sent"] for r in listed] == [3, 0]


def test_runs_shows_statuses_after_sync(service: Any, tmp_path: Path) -> None:
    sheet = write_sheet(tmp_path / "nov.xlsx", [row(1, remark="fail")])
    batchpay("run", str(sheet), "--out", str(tmp_path / "1.xlsx"), "--wait", "0")
    before = json.loads(batchpay("runs", "--json").stdout)[0]["counts"]
    assert set(before) <= {"PENDING", "PROCESSING"}, before
    time.sleep(1.0)
    batchpay("sync", "--out", str(tmp_path / "s.xlsx"))
    after = json.loads(batchpay("runs", "--json").stdout)[0]["counts"]
    assert set(after) <= {"FAILED", "REFUNDED"} and sum(after.values()) == 1, after
    assert "FAILED" in batchpay("runs").stdout or "REFUNDED" in batchpay("runs").stdout
