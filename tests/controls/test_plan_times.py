"""A plan's times and rates in the `time_zone` setting's words: its expiry shown in the
zone (a plan ending at Shanghai's midnight ends on the next day there), refusals telling
the zone's time, the plan's workbook stating each rate's direction ("NGN per CNY"). The
plan itself keeps its times in UTC, to the second."""

from __future__ import annotations

import dataclasses
import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import openpyxl
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from batchpay import sshsig
from batchpay.connect import open_service
from batchpay.controls.approval import maker_of, read_plan, summary_lines
from batchpay.controls.plan_checks import PlanRefused, check_times
from batchpay.display import RichReporter
from batchpay.engine.make_plan import PlanFiles, make_plan
from batchpay.engine.runner import RunOptions
from batchpay.settings.load import load_settings
from batchpay.sheet.results import PLAN_SHEET
from tests.support.e2e import batchpay, sandbox_payouts
from tests.support.sheets import rows, write_sheet

ZONE = "Asia/Shanghai"
MAKER_KEY = Ed25519PrivateKey.generate()
# made at 08:00 UTC, expiring at 16:00 UTC on 27 November: midnight in Shanghai
MIDNIGHT_PLAN: Any = {"created_at": "2026-11-27T08:00:00Z", "expires_at": "2026-11-27T16:00:00Z"}


def test_a_plan_expiring_at_shanghai_midnight_is_refused_at_the_zone_s_time() -> None:
    just_after = datetime(2026, 11, 27, 16, 0, 1, tzinfo=UTC)
    with pytest.raises(PlanRefused) as refused:
        check_times(MIDNIGHT_PLAN, 72, just_after, ZONE)
    assert "The plan expired at 2026-11-28 00:00:00 Asia/Shanghai" in refused.value.message
    check_times(MIDNIGHT_PLAN, 72, datetime(2026, 11, 27, 15, 59, 59, tzinfo=UTC), ZONE)
    with pytest.raises(PlanRefused) as in_utc:
        check_times(MIDNIGHT_PLAN, 72, just_after)
    assert "The plan expired at 2026-11-27 16:00:00 UTC" in in_utc.value.message


def test_a_plan_made_to_last_too_long_says_until_when_in_the_zone() -> None:
    with pytest.raises(PlanRefused) as refused:
        check_times(MIDNIGHT_PLAN, 1, datetime(2026, 11, 27, 9, tzinfo=UTC), ZONE)
    assert "to last until 2026-11-28 00:00:00 Asia/Shanghai" in refused.value.message


def test_the_plan_its_summary_and_its_workbook_in_shanghai(cli_sandbox: Any,
                                                            tmp_path: Path) -> None:
    service = cli_sandbox(settle_seconds=0.2)
    sheet = write_sheet(tmp_path / "nov.xlsx", rows(3))
    approvers = tmp_path / "approvers"
    approvers.write_text(f"Maya {sshsig.public_line(MAKER_KEY.public_key())}\n")
    settings = dataclasses.replace(load_settings(), approvers_file=approvers, time_zone=ZONE)
    files = PlanFiles.named(sheet)
    made = make_plan(settings, RunOptions(sheet=sheet, dry_run=True, out=files.workbook, wait=0),
                     RichReporter(quiet=True), lambda: open_service(settings), files,
                     maker=maker_of(settings, MAKER_KEY))
    assert made.refused == "" and sandbox_payouts(service.url) == []
    document = json.loads(files.plan.read_bytes())
    # stored in UTC, to the second, as the plan's version fixes
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", document["expires_at"])
    expires = datetime.strptime(document["expires_at"], "%Y-%m-%dT%H:%M:%SZ").replace(
        tzinfo=UTC).astimezone(ZoneInfo(ZONE))
    shown = f"expires {expires:%Y-%m-%d %H:%M:%S} {ZONE}"
    summary = summary_lines(read_plan(files.plan), zone_name=ZONE)
    assert shown in summary[0]
    assert re.search(r"amounts [\d,]+\.\d\d NGN, quoted debit [\d,]+\.\d\d NGN", summary[1])

    assert set(made.rates) == {"NGN"}
    rate = made.rates["NGN"]
    assert len(rate) == 1 and re.fullmatch(r"[\d,.]+( – [\d,.]+)? NGN per CNY", rate[0]), rate
    book = openpyxl.load_workbook(files.workbook, read_only=True)
    lines = {r[0]: r[1] for r in book[PLAN_SHEET].iter_rows(values_only=True) if r[0]}
    assert lines["rate NGN"] == rate[0]
    assert any(shown in str(v) for v in
               (r[1] for r in book[PLAN_SHEET].iter_rows(values_only=True)))


def test_plan_and_approve_print_the_expiry_in_the_zone_and_the_rate(
        cli_sandbox: Any, tmp_path: Path) -> None:
    from tests.controls.test_approval import CHECKER, MAKER, approvers, maya, new_key

    service = cli_sandbox(settle_seconds=0.05)
    checker_key, checker_line = new_key(tmp_path, "Li Wei")
    approvers(tmp_path, checker_line, extra=f'time_zone = "{ZONE}"\n')
    sheet = write_sheet(tmp_path / "nov.xlsx", rows(3))
    made = batchpay("plan", str(sheet), "--key", str(maya(tmp_path)), env=MAKER)
    assert made.exit_code == 0, made
    document = json.loads((tmp_path / "nov.plan.json").read_bytes())
    expires = datetime.strptime(document["expires_at"], "%Y-%m-%dT%H:%M:%SZ").replace(
        tzinfo=UTC).astimezone(ZoneInfo(ZONE))
    shown = f"expires {expires:%Y-%m-%d %H:%M:%S} {ZONE}"
    assert shown in made.stdout, made.stdout
    assert re.search(r"^Rate NGN: [\d,.]+( – [\d,.]+)? NGN per CNY", made.stdout, re.M)
    code = re.search(r"short code (\S+);", made.stdout)
    assert code
    approved = batchpay("approve", str(tmp_path / "nov.plan.json"), "--key", str(checker_key),
                        "--short-code", code.group(1), "--yes", env=CHECKER)
    assert approved.exit_code == 0, approved
    assert shown in " ".join(approved.stderr.split())
    assert sandbox_payouts(service.url) == []
