"""Recurring payments: last month's equal salary under a new payout_ref is paid, not held as
a duplicate (the repeat window, 20 days by default, is shorter than any month), while the
same sheet typed again within days is still held; the check's settings are on the Run sheet
and in the plan."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

import batchpay.journal.store as journal_module
from tests.controls.test_approval import MAKER, approvers, maya, new_key
from tests.support.e2e import batchpay, by_ref, results, sandbox_payouts
from tests.support.sheets import rows, write_sheet


@pytest.fixture
def service(cli_sandbox: Any) -> Any:
    return cli_sandbox(settle_seconds=0.05)


def salaries(month: str) -> list[dict[str, Any]]:
    sheet = rows(3)
    for n, values in enumerate(sheet, start=1):
        values["payout_ref"] = f"{month}-{n:03d}"
    return sheet


def test_equal_monthly_salaries_are_paid_and_a_retyped_sheet_is_held(
        service: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    month_ago = datetime.now(UTC) - timedelta(days=29)
    with monkeypatch.context() as m:  # last month's run: its journal events dated then
        m.setattr(journal_module, "stamp",
                  lambda: month_ago.strftime("%Y-%m-%dT%H:%M:%S.%fZ"))
        october = write_sheet(tmp_path / "oct.xlsx", salaries("OCT"))
        assert batchpay("run", str(october), "--out", str(tmp_path / "oct-r.xlsx"),
                        "--wait", "5").exit_code == 0
    november = write_sheet(tmp_path / "nov.xlsx", salaries("NOV"))
    paid = batchpay("run", str(november), "--out", str(tmp_path / "nov-r.xlsx"), "--wait", "5")
    assert paid.exit_code == 0, paid
    assert {r["status"] for r in by_ref(tmp_path / "nov-r.xlsx").values()} == {"COMPLETED"}
    assert len(sandbox_payouts(service.url)) == 6
    run = {str(r["field"]): str(r["value"]) for r in results(tmp_path / "nov-r.xlsx", "Run")}
    assert run["setting: repeat_window_days"] == "20"
    assert run["setting: hold_new_payees"] == "no"

    # the same salaries typed again days later, under new refs: held, nothing sent
    again = write_sheet(tmp_path / "nov2.xlsx", salaries("NOVB"))
    held = batchpay("run", str(again), "--out", str(tmp_path / "nov2-r.xlsx"), "--wait", "1")
    assert held.exit_code == 1, held
    assert {r["status"] for r in by_ref(tmp_path / "nov2-r.xlsx").values()} == {"HELD"}
    assert len(sandbox_payouts(service.url)) == 6


def test_the_plan_carries_the_repeat_settings(service: Any, tmp_path: Path) -> None:
    _, line = new_key(tmp_path, "Li Wei")
    approvers(tmp_path, line, extra="repeat_window_days = 30\n")
    sheet = write_sheet(tmp_path / "dec.xlsx", salaries("DEC"))
    made = batchpay("plan", str(sheet), "--json", "--key", str(maya(tmp_path)), env=MAKER)
    assert made.exit_code == 0, made
    document = json.loads((tmp_path / "dec.plan.json").read_text())
    assert document["controls"] == {"repeat_window_days": 30, "service_check_days": 62,
                                    "hold_new_payees": False,
                                    "payee_change_hold_hours": 0.0, "payee_confirmed_by_other": False,
                                    "require_approval": True}
    shown = batchpay("approve", str(tmp_path / "dec.plan.json"), "--short-code", "X", "--yes")
    assert "made within 30 day(s)" in shown.stderr
