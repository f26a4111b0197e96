"""The exactly-once gate on its own: what a run plans for each row, from the journal's state.

No service and no sandbox: the journal is set to each state by hand and `plan_rows` is asked
what it would do. The end-to-end tests (test_exactly_once.py) prove the same over HTTP.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from batchpay.engine.gate import Plan, details_of, plan_rows
from batchpay.journal.store import Journal
from batchpay.settings.model import Settings
from batchpay.sheet.read import read_sheet
from batchpay.sheet.validate import Validation, validate_sheet
from tests.support.sheets import rows, write_sheet


def checked(tmp_path: Path, count: int = 1, **overrides: Any) -> tuple[Validation, list[str]]:
    sheet = read_sheet(write_sheet(tmp_path / "nov.xlsx", rows(count, **overrides)))
    return validate_sheet(sheet), list(sheet.columns)


def plan(journal: Journal, tmp_path: Path, validation: Validation, columns: list[str], *,
         kind: str = "run", skip_invalid: bool = False) -> Plan:
    return plan_rows(journal, list(validation.rows), columns, kind=kind,
                     settings=Settings(journal=journal.path or tmp_path / "j.sqlite3"),
                     skip_invalid=skip_invalid)


def where(result: Plan) -> str:
    """Where the plan put its one row: send, resolve, track, or the row's status."""
    if result.send:
        return "send"
    if result.resolve:
        return "resolve"
    if result.track:
        return "track"
    return result.rows[0].status


def test_a_new_payout_ref_is_sent(journal: Journal, tmp_path: Path) -> None:
    validation, columns = checked(tmp_path)
    result = plan(journal, tmp_path, validation, columns)
    assert where(result) == "send" and result.rows[0].status == "NOT_SENT"
    assert result.send[0].ref == "T-00001"


@pytest.mark.parametrize(("status", "kind", "expected"), [
    ("NOT_SENT", "run", "send"),  # no request ever left: sent again
    ("QUOTE_FAILED", "run", "send"),
    ("REJECTED", "run", "send"),
    ("SENDING", "run", "resolve"),  # a request may have left: looked up, never resent blindly
    ("UNKNOWN", "run", "resolve"),
    ("PENDING", "run", "track"),  # sent: never again
    ("PROCESSING", "run", "track"),
    ("COMPLETED", "run", "track"),
    ("COMPLETED", "rerun", "track"),
    ("FAILED", "run", "track"),  # a failed payout is resent only by `rerun`
    # (the payee register then holds details whose last payout failed: test_payees.py)
    ("FAILED", "rerun", "send"),
    ("REFUNDED", "rerun", "send"),
])
def test_what_each_journal_state_plans(journal: Journal, tmp_path: Path, status: str,
                                       kind: str, expected: str) -> None:
    validation, columns = checked(tmp_path)
    payout = validation.rows[0].payout
    assert payout is not None
    journal.set_status("T-00001", status, run_id="earlier", details=details_of(payout))
    result = plan(journal, tmp_path, validation, columns, kind=kind)
    assert where(result) == expected
    assert result.rows[0].linked == (expected in ("resolve", "track"))


def test_a_paid_ref_with_other_details_is_invalid(journal: Journal, tmp_path: Path) -> None:
    validation, columns = checked(tmp_path)
    payout = validation.rows[0].payout
    assert payout is not None
    other = details_of(payout).replace(payout.account_number, "6222000000000000999")
    journal.set_status("T-00001", "COMPLETED", run_id="earlier", details=other)
    result = plan(journal, tmp_path, validation, columns)
    assert where(result) == "INVALID"
    assert "was already sent in run earlier" in result.rows[0].error
    assert "account_number" in result.rows[0].error


def test_a_ref_differing_only_in_case_is_invalid(journal: Journal, tmp_path: Path) -> None:
    validation, columns = checked(tmp_path)
    journal.set_status("t-00001", "COMPLETED", run_id="earlier", details="{}")
    result = plan(journal, tmp_path, validation, columns)
    assert where(result) == "INVALID" and "differs only in case" in result.rows[0].error


def test_one_invalid_row_sends_nothing_unless_skipped(journal: Journal, tmp_path: Path) -> None:
    sheet_rows = rows(3)
    sheet_rows[1]["account_number"] = "not digits"
    sheet = read_sheet(write_sheet(tmp_path / "nov.xlsx", sheet_rows))
    validation, columns = validate_sheet(sheet), list(sheet.columns)
    blocked = plan(journal, tmp_path, validation, columns)
    assert blocked.invalid == 1 and blocked.send == []
    skipped = plan(journal, tmp_path, validation, columns, skip_invalid=True)
    assert [job.ref for job in skipped.send] == ["T-00001", "T-00003"]


def test_planning_writes_nothing(journal: Journal, tmp_path: Path) -> None:
    validation, columns = checked(tmp_path, 3)
    before = journal.db.execute("SELECT COUNT(*) FROM events").fetchone()[0]
    plan(journal, tmp_path, validation, columns)
    assert journal.db.execute("SELECT COUNT(*) FROM events").fetchone()[0] == before
    assert journal.entries() == {}
