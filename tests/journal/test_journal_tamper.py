"""A hand-edited journal is refused before anything is sent, and `verify` names the edit.

The tamper matrix: every table `run` decides from (the ledger, the payout requests with
their bodies) edited behind batchpay's back. Each edit → `run`/`rerun`/`sync` exit 2 with
0 requests to the service (counted at /_sandbox/stats), and `verify` exits 1 naming it.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from batchpay.journal.integrity import check, disagreements
from batchpay.journal.store import Journal
from tests.support.e2e import batchpay, sandbox_payouts, sandbox_stats
from tests.support.sheets import rows, write_sheet


def total_requests(url: str) -> int:
    return sum(sandbox_stats(url)["requests"].values())


@pytest.fixture
def paid(cli_sandbox: Any, tmp_path: Path) -> tuple[Any, Path, Path]:
    """Two rows paid through a sandbox; returns it, the sheet and the journal."""
    journal = tmp_path / "journal" / "journal.sqlite3"
    service = cli_sandbox(settle_seconds=0.2, journal=journal)
    sheet = write_sheet(tmp_path / "nov.xlsx", rows(2))
    assert batchpay("run", str(sheet), "--wait", "5").exit_code == 0
    assert len(sandbox_payouts(service.url)) == 2
    return service, sheet, journal


def edit(journal: Path, sql: str, *params: Any) -> None:
    with sqlite3.connect(journal) as db:
        db.execute(sql, params)


EDITS: dict[str, Callable[[Path], None]] = {
    "status set to NOT_SENT": lambda j: edit(
        j, "UPDATE payouts SET status = 'NOT_SENT' WHERE payout_ref = 'T-00001'"),
    "ledger row deleted": lambda j: edit(j, "DELETE FROM payouts WHERE payout_ref = 'T-00001'"),
    "account changed in the details": lambda j: edit(
        j, "UPDATE payouts SET details = replace(details, '6222000000000000001', "
        "'6217009999999999999') WHERE payout_ref = 'T-00001'"),
    "payout id cleared": lambda j: edit(
        j, "UPDATE payouts SET payout_id = '' WHERE payout_ref = 'T-00001'"),
    "payout request body changed": lambda j: edit(
        j, "UPDATE attempts SET body_json = replace(body_json, '6222000000000000001', "
        "'6217009999999999999') WHERE payout_ref = 'T-00001'"),
    "payout request deleted": lambda j: edit(j, "DELETE FROM attempts WHERE payout_ref = 'T-00001'"),
    "ledger row added": lambda j: edit(
        j, "INSERT INTO payouts (payout_ref, status, details, run_id, updated_at) "
        "VALUES ('T-09999', 'COMPLETED', '{}', 'x', 'now')"),
}


@pytest.mark.parametrize("name", sorted(EDITS))
def test_an_edited_journal_is_refused_with_no_request(
        paid: tuple[Any, Path, Path], name: str, tmp_path: Path) -> None:
    service, sheet, journal = paid
    EDITS[name](journal)
    before = total_requests(service.url)
    for command in (["run", str(sheet)], ["sync"]):
        refused = batchpay(*command, "--out", str(tmp_path / f"{command[0]}.xlsx"))
        assert refused.exit_code == 2, (command, refused)
        assert "changed outside batchpay" in refused.stderr
        assert "T-0" in refused.stderr  # the row is named
        assert "Traceback" not in refused.stderr
    assert total_requests(service.url) == before
    assert len(sandbox_payouts(service.url)) == 2
    verified = batchpay("verify")
    assert verified.exit_code == 1, verified
    assert "T-0" in verified.stderr


def test_an_untouched_journal_passes_and_keeps_paying_once(paid: tuple[Any, Path, Path]) -> None:
    service, sheet, journal = paid
    assert batchpay("verify").exit_code == 0
    again = batchpay("run", str(sheet), "--wait", "1")
    assert again.exit_code == 0, again
    assert len(sandbox_payouts(service.url)) == 2


def test_an_in_doubt_body_edited_to_another_account_is_never_resent(tmp_path: Path) -> None:
    """The identical resend of an in-doubt row must be the body that was journaled."""
    path = tmp_path / "journal.sqlite3"
    body = {"quoteId": "q1", "recipient": {"account": {"accountNumber": "6222000000000000001"}}}
    with Journal(path) as j:
        j.record_intent("R1", "run-1", json.dumps({"account_number": "6222000000000000001"}),
                        {"id": "q1"}, body, expires_at=9e9)
        assert check(j).ok
    edit(path, "UPDATE attempts SET body_json = replace(body_json, '6222000000000000001', "
         "'6217009999999999999')")
    with Journal(path) as j:
        found = list(disagreements(j.db))
        assert found and "R1" in found[0] and "body" in found[0]
        assert not check(j).ok
