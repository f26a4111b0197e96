"""With require_approval, a results workbook's next_step says to make a plan of it (a rerun
is refused in that mode), never to rerun."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.controls.test_approval import MAKER, approve, approvers, maya, new_key
from tests.support.e2e import batchpay, by_ref
from tests.support.sheets import row, write_sheet


@pytest.fixture
def service(cli_sandbox: Any) -> Any:
    return cli_sandbox(settle_seconds=0.05)


def test_next_step_in_approval_mode_says_plan_this_workbook(service: Any,
                                                           tmp_path: Path) -> None:
    checker_key, line = new_key(tmp_path, "Li Wei")
    approvers(tmp_path, line)
    sheet = write_sheet(tmp_path / "nov.xlsx", [row(1), row(2, remark="fail")])
    made = batchpay("plan", str(sheet), "--json", "--key", str(maya(tmp_path)), env=MAKER)
    assert made.exit_code == 0, made
    code = json.loads(made.stdout)["short_code"]
    assert approve(tmp_path / "nov.plan.json", code, checker_key).exit_code == 0
    out = tmp_path / "paid.xlsx"
    batchpay("run", "--plan", str(tmp_path / "nov.plan.json"), "--out", str(out), "--wait", "5")
    failed = by_ref(out)["T-00002"]
    assert failed["status"] in ("FAILED", "REFUNDED")
    assert "make a plan of this workbook" in failed["next_step"], failed
    assert "rerun" not in failed["next_step"]
    dry = by_ref(tmp_path / "nov.plan.xlsx")["T-00001"]["next_step"]
    assert "approved plan" in dry and "without --dry-run" not in dry
