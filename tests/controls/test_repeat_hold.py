"""A sheet typed again with new payout_refs does not pay the same people twice: a row that
repeats a recent payment (same account, amount and currencies, another payout_ref) is HELD
until a person releases it with --allow-repeat, and both are events of the chain."""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from batchpay.controls.repeats import RepeatCheck, payment_key
from batchpay.journal.store import Journal
from tests.support.e2e import batchpay, by_ref, sandbox_payouts
from tests.support.sheets import rows, write_sheet


@pytest.fixture
def service(cli_sandbox: Any) -> Any:
    return cli_sandbox(settle_seconds=0.05)


def journal_path(tmp_path: Path) -> Path:
    return tmp_path / "journal" / "journal.sqlite3"


def paid_once(tmp_path: Path, count: int = 3, **overrides: Any) -> Path:
    first = write_sheet(tmp_path / "october.xlsx", rows(count, **overrides))
    outcome = batchpay("run", str(first), "--wait", "5", "--out", str(tmp_path / "oct.xlsx"))
    assert outcome.exit_code == 0, outcome
    return first


def retyped(tmp_path: Path, count: int = 3, name: str = "november.xlsx", **overrides: Any) -> Path:
    """The same people and amounts, typed again with new payout_refs."""
    again = rows(count, **overrides)
    for n, values in enumerate(again, start=1):
        values["payout_ref"] = f"NOV-{n:03d}"
    return write_sheet(tmp_path / name, again)


def events(tmp_path: Path, kind: str) -> list[tuple[str, dict[str, Any]]]:
    with sqlite3.connect(journal_path(tmp_path)) as db:
        return [(ref, json.loads(data)) for ref, data in db.execute(
            "SELECT payout_ref, data FROM events WHERE kind = ? ORDER BY seq", (kind,))]


def test_new_refs_for_the_same_payments_are_held_and_nothing_is_sent(
        service: Any, tmp_path: Path) -> None:
    paid_once(tmp_path)
    outcome = batchpay("run", str(retyped(tmp_path)), "--wait", "2",
                       "--out", str(tmp_path / "nov.xlsx"))
    assert outcome.exit_code == 1, outcome
    assert len(sandbox_payouts(service.url)) == 3  # not 6
    assert "3 row(s) HELD as possible duplicate payments" in outcome.stderr
    cells = by_ref(tmp_path / "nov.xlsx")
    assert [cells[f"NOV-{n:03d}"]["status"] for n in (1, 2, 3)] == ["HELD"] * 3
    error = cells["NOV-002"]["error"]
    assert "possible duplicate payment" in error and "T-00002" in error
    assert "6222…0002" in error and "--allow-repeat NOV-002" in error
    assert "102,000.50 NGN" in error
    held = events(tmp_path, "hold.repeat")
    assert [(ref, data["earlier"]) for ref, data in held] == [
        ("NOV-001", ["T-00001"]), ("NOV-002", ["T-00002"]), ("NOV-003", ["T-00003"])]
    summary = {r[0]: r for r in _summary_rows(tmp_path / "nov.xlsx")}
    assert any("HELD" in str(k) for k in summary)


def _summary_rows(path: Path) -> list[tuple[Any, ...]]:
    import openpyxl

    wb = openpyxl.load_workbook(path, read_only=True)
    try:
        return [tuple(r) for r in wb["Summary"].iter_rows(values_only=True) if r and r[0]]
    finally:
        wb.close()


def test_allow_repeat_releases_exactly_the_rows_named_and_records_who(
        service: Any, tmp_path: Path) -> None:
    paid_once(tmp_path)
    sheet = retyped(tmp_path)
    outcome = batchpay("run", str(sheet), "--wait", "5", "--allow-repeat", "NOV-002",
                       "--allow-repeat", "NOT-IN-SHEET", "--out", str(tmp_path / "nov.xlsx"))
    assert outcome.exit_code == 1, outcome
    paid = sandbox_payouts(service.url)
    assert len(paid) == 4  # the three of October and NOV-002
    cells = by_ref(tmp_path / "nov.xlsx")
    assert cells["NOV-002"]["status"] in ("COMPLETED", "PENDING", "PROCESSING")
    assert cells["NOV-001"]["status"] == cells["NOV-003"]["status"] == "HELD"
    released = events(tmp_path, "hold.released")
    assert [(ref, data["earlier"]) for ref, data in released] == [("NOV-002", ["T-00002"])]
    assert released[0][1]["operator"]
    assert "--allow-repeat NOT-IN-SHEET: no row with that payout_ref" in outcome.stderr
    assert batchpay("verify").exit_code == 0


def test_rerun_keeps_the_hold_until_released(service: Any, tmp_path: Path) -> None:
    paid_once(tmp_path, count=2)
    batchpay("run", str(retyped(tmp_path, count=2)), "--wait", "2",
             "--out", str(tmp_path / "nov.xlsx"))
    again = batchpay("rerun", str(tmp_path / "nov.xlsx"), "--wait", "2",
                     "--out", str(tmp_path / "nov-2.xlsx"))
    assert again.exit_code == 1, again
    assert {r["status"] for r in by_ref(tmp_path / "nov-2.xlsx").values()} == {"HELD"}
    assert len(sandbox_payouts(service.url)) == 2
    released = batchpay("rerun", str(tmp_path / "nov-2.xlsx"), "--wait", "5",
                        "--allow-repeat", "NOV-001", "--allow-repeat", "NOV-002",
                        "--out", str(tmp_path / "nov-3.xlsx"))
    assert released.exit_code == 0, released
    assert len(sandbox_payouts(service.url)) == 4


def test_spreadsheet_noise_in_the_account_does_not_hide_a_repeat(
        service: Any, tmp_path: Path) -> None:
    paid_once(tmp_path, count=1)
    spaced = retyped(tmp_path, count=1, account_number="6222 0000-0000 0000 001")
    outcome = batchpay("run", str(spaced), "--wait", "2", "--out", str(tmp_path / "nov.xlsx"))
    assert outcome.exit_code == 1, outcome
    assert by_ref(tmp_path / "nov.xlsx")["NOV-001"]["status"] == "HELD"
    assert len(sandbox_payouts(service.url)) == 1


def test_another_amount_a_failed_payout_or_a_window_of_zero_is_not_held(
        service: Any, tmp_path: Path) -> None:
    # a payout that failed moved no money: paying the person again is not a duplicate
    failed = write_sheet(tmp_path / "october.xlsx", rows(2, remark="fail"))
    first = batchpay("run", str(failed), "--wait", "5", "--out", str(tmp_path / "oct.xlsx"))
    assert {r["status"] for r in by_ref(tmp_path / "oct.xlsx").values()} <= {
        "FAILED", "REFUNDED"}, first
    changed = rows(2)
    changed[0]["payout_ref"], changed[1]["payout_ref"] = "NOV-001", "NOV-002"
    sheet = write_sheet(tmp_path / "nov.xlsx", changed)
    outcome = batchpay("run", str(sheet), "--wait", "5", "--out", str(tmp_path / "nov-r.xlsx"))
    # the payee control holds details whose last payout failed; the repeat check does not
    errors = [v["error"] for v in by_ref(tmp_path / "nov-r.xlsx").values()]
    assert all("previously failed" in e or "ended" in e for e in errors), outcome
    assert not any("duplicate" in e for e in errors), outcome
    for values in changed:
        payee = values["company_id"] or values["ic_number"]
        assert batchpay("payees", "confirm", payee, "--account-last4",
                        values["account_number"][-4:]).exit_code == 0
    outcome = batchpay("rerun", str(tmp_path / "nov-r.xlsx"), "--wait", "5",
                       "--out", str(tmp_path / "nov-r2.xlsx"))
    statuses = {k: v["status"] for k, v in by_ref(tmp_path / "nov-r2.xlsx").items()}
    assert "HELD" not in statuses.values(), outcome
    assert len(sandbox_payouts(service.url)) == 4
    # a window of 0 days turns the check off (in the user's own settings file: a folder's
    # file may not loosen it)
    (tmp_path / "config" / "batchpay").mkdir(parents=True)
    (tmp_path / "config" / "batchpay" / "batchpay.toml").write_text("repeat_window_days = 0\n")
    zero = batchpay("run", str(retyped(tmp_path, count=1, name="dec.xlsx")), "--wait", "5",
                    "--out", str(tmp_path / "dec-r.xlsx"))
    assert by_ref(tmp_path / "dec-r.xlsx")["NOV-001"]["status"] != "HELD", zero


def test_a_dry_run_shows_the_hold_and_records_no_release(service: Any, tmp_path: Path) -> None:
    paid_once(tmp_path, count=1)
    outcome = batchpay("run", str(retyped(tmp_path, count=1)), "--dry-run",
                       "--allow-repeat", "NOV-001", "--out", str(tmp_path / "dry.xlsx"))
    assert by_ref(tmp_path / "dry.xlsx")["NOV-001"]["status"] == "NOT_SENT", outcome
    assert events(tmp_path, "hold.released") == []
    held = batchpay("run", str(retyped(tmp_path, count=1)), "--dry-run",
                    "--out", str(tmp_path / "dry-2.xlsx"))
    assert held.exit_code == 1
    assert by_ref(tmp_path / "dry-2.xlsx")["NOV-001"]["status"] == "HELD"
    assert len(sandbox_payouts(service.url)) == 1


def test_the_window_counts_from_the_first_payout_request(journal: Journal) -> None:
    details = json.dumps({"account_number": "6222-0001", "amount": "100.50",
                          "source_currency": "NGN", "currency": "CNY"})
    journal.record_intent("A-1", "run-1", details, {}, {"quoteId": "q-1"}, 0.0)
    journal.set_status("A-1", "COMPLETED", run_id="run-1")
    key = payment_key("6222 0001", "100.500", "ngn", "CNY")
    now = datetime.now(UTC)
    assert [e.payout_ref for e in RepeatCheck(journal, 45, now=now).earlier("B-1", key)] == ["A-1"]
    assert RepeatCheck(journal, 45, now=now).earlier("A-1", key) == []  # its own ref
    assert RepeatCheck(journal, 45, now=now + timedelta(days=46)).earlier("B-1", key) == []
    assert RepeatCheck(journal, 45, now=now).earlier(
        "B-1", payment_key("6222 0001", "100.51", "NGN", "CNY")) == []
