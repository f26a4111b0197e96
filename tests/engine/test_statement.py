"""`batchpay statement`: a period's payouts from the journal, reconciled with what the sandbox
holds and with the wallet's movement, to the cent, read back from the workbook's cells."""

from __future__ import annotations

import json
import sqlite3
import time
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import openpyxl
import pytest

from batchpay.journal.integrity import replay_runs
from batchpay.journal.store import Journal
from tests.support.e2e import batchpay, by_ref, edit_results, sandbox_payouts, set_wallet
from tests.support.sheets import row, write_sheet
from tests.support.timing import settled


@pytest.fixture
def service(cli_sandbox: Any) -> Any:
    return cli_sandbox(settle_seconds=0.05)


def wallet(url: str, currency: str = "NGN") -> Decimal:
    answer = httpx.get(f"{url}/v1/wallet", headers={"X-API-KEY": "sandbox-key"}, timeout=10)
    answer.raise_for_status()
    body = answer.json()
    found = body["data"] if isinstance(body, dict) else body
    return next(Decimal(str(w["balance"])) for w in found if w["currency"] == currency)


def sheet_rows(path: Path, name: str) -> list[dict[str, Any]]:
    wb = openpyxl.load_workbook(path)
    ws = wb[name]
    grid = list(ws.iter_rows(values_only=True))
    formulas = [c for sheet in wb for r in sheet.iter_rows() for c in r if c.data_type == "f"]
    assert formulas == []
    header = [str(h) for h in grid[0]]
    return [dict(zip(header, r, strict=False)) for r in grid[1:] if any(v is not None for v in r)]


def today() -> str:
    return datetime.now(UTC).date().isoformat()


def cents(value: Any) -> Decimal:
    return Decimal(str(value)).quantize(Decimal("0.01"))


def pay_fix_and_repay(service: Any, sheet: Path, tmp_path: Path) -> None:
    """Pay `sheet`, whose T-00002 the sandbox fails and refunds: follow it to REFUNDED,
    correct its account in the results workbook, pay it again, and wait until every refund
    is credited at the sandbox."""
    first = tmp_path / "first.xlsx"
    assert batchpay("run", str(sheet), "--out", str(first), "--wait", "10").exit_code == 1
    deadline = time.monotonic() + 10
    while by_ref(first)["T-00002"]["status"] != "REFUNDED" and time.monotonic() < deadline:
        time.sleep(0.2)
        batchpay("sync", "--out", str(first), "--overwrite")
    edit_results(first, "T-00002", remark=None, account_number="6222000000000000777")
    second = tmp_path / "second.xlsx"
    assert batchpay("rerun", str(first), "--out", str(second), "--wait", "10").exit_code == 0
    settled(service.url)  # every refund credited at the sandbox


def test_statement_reconciles_with_the_sandbox_and_the_wallet(service: Any,
                                                              tmp_path: Path) -> None:
    before = wallet(service.url)
    hostile = "=HYPERLINK(\"http://x\")"
    sheet = write_sheet(tmp_path / "nov.xlsx", [row(1), row(2, remark="fail"),
                                                row(3, recipient_name=hostile)])
    pay_fix_and_repay(service, sheet, tmp_path)
    after = wallet(service.url)

    out = tmp_path / "statement.xlsx"
    made = batchpay("statement", "--from", today(), "--to", today(), "--out", str(out))
    assert made.exit_code == 0, made
    lines = {r["payout_ref"]: r for r in sheet_rows(out, "Statement")}
    paid = sandbox_payouts(service.url)
    assert len(paid) == 4 and set(lines) == {"T-00001", "T-00002", "T-00003"}
    assert lines["T-00003"]["recipient_name"] == hostile  # text, not a formula
    assert lines["T-00002"]["status"] == "COMPLETED" and lines["T-00002"]["requests"] == 2
    kept = [p for p in paid if p["state"] != "REFUNDED"]
    assert sum(cents(r["source_paid"]) for r in lines.values()) == sum(
        cents(p["sourceAmount"]) for p in kept)
    assert sum(cents(r["delivered"]) for r in lines.values()) == sum(
        cents(p["targetAmount"]) for p in kept)
    for p in kept:
        assert lines[next(ref for ref, r in lines.items()
                          if r["reference_number"] == p["referenceNumber"])]
    refunds = sheet_rows(out, "Refunds")
    assert [r["payout_ref"] for r in refunds] == ["T-00002"]
    refunded = next(p for p in paid if p["state"] == "REFUNDED")
    assert refunds[0]["reference_number"] == refunded["referenceNumber"]
    assert cents(refunds[0]["source_amount"]) == cents(refunded["sourceAmount"])

    totals = next(r for r in sheet_rows(out, "Totals") if r["source_currency"] == "NGN")
    assert cents(totals["net_debit"]) == before - after  # the wallet's movement, to the cent
    assert cents(totals["debited"]) - cents(totals["refunded"]) == cents(totals["net_debit"])
    assert cents(totals["net_debit"]) == sum(cents(r["total_debit"]) for r in lines.values())
    assert cents(totals["wallet_before"]) == before
    assert cents(totals["movement_minus_net_debit"]) == 0
    about = {r["field"]: r["value"] for r in sheet_rows(out, "About")}
    verified = batchpay("verify")
    assert about["journal chain head"] in verified.stdout
    assert "refund" in made.stderr and "chain head" in made.stderr


def test_a_period_without_the_payouts_is_empty(service: Any, tmp_path: Path) -> None:
    sheet = write_sheet(tmp_path / "nov.xlsx", [row(1)])
    assert batchpay("run", str(sheet), "--out", str(tmp_path / "r.xlsx"),
                    "--wait", "5").exit_code == 0
    yesterday = (datetime.now(UTC).date() - timedelta(days=1)).isoformat()
    out = tmp_path / "s.xlsx"
    made = batchpay("statement", "--from", yesterday, "--to", yesterday, "--out", str(out))
    assert made.exit_code == 0, made
    assert sheet_rows(out, "Statement") == []


def test_bad_dates_and_a_tampered_journal_are_refused(service: Any, tmp_path: Path) -> None:
    sheet = write_sheet(tmp_path / "nov.xlsx", [row(1)])
    assert batchpay("run", str(sheet), "--out", str(tmp_path / "r.xlsx"),
                    "--wait", "5").exit_code == 0
    bad = batchpay("statement", "--from", "2026-13-01", "--to", "2026-12-31")
    assert bad.exit_code == 2 and "YYYY-MM-DD" in bad.stderr
    backwards = batchpay("statement", "--from", "2026-12-02", "--to", "2026-12-01")
    assert backwards.exit_code == 2 and "before" in backwards.stderr
    db = sqlite3.connect(tmp_path / "journal" / "journal.sqlite3")
    db.execute("UPDATE payouts SET amount = '1.00'")
    db.commit()
    db.close()
    out = tmp_path / "s.xlsx"
    refused = batchpay("statement", "--from", today(), "--to", today(), "--out", str(out))
    assert refused.exit_code == 2 and "changed outside batchpay" in refused.stderr
    assert not out.exists()


def test_wallet_figures_edited_in_the_runs_table_fail_verify_and_the_statement(
        service: Any, tmp_path: Path) -> None:
    """1,000,000,000 NGN leave the wallet outside batchpay between two runs; the statement
    shows it (wallet movement minus net debit). An edit of the last run's wallet_after in
    `runs.info` would hide it: `verify` names it and the statement refuses the journal;
    the chain, which the statement reads its runs from, still holds the true figure."""
    taken = Decimal(1_000_000_000)
    first = write_sheet(tmp_path / "nov.xlsx", [row(1), row(2)])
    assert batchpay("run", str(first), "--out", str(tmp_path / "a.xlsx"),
                    "--wait", "5").exit_code == 0
    set_wallet(service.url, "NGN", str(wallet(service.url) - taken))  # outside batchpay
    second = write_sheet(tmp_path / "nov2.xlsx", [row(3)])
    assert batchpay("run", str(second), "--out", str(tmp_path / "b.xlsx"),
                    "--wait", "5").exit_code == 0
    true_after = wallet(service.url)
    out = tmp_path / "s.xlsx"
    made = batchpay("statement", "--from", today(), "--to", today(), "--out", str(out))
    assert made.exit_code == 0, made
    totals = next(r for r in sheet_rows(out, "Totals") if r["source_currency"] == "NGN")
    assert cents(totals["wallet_after"]) == true_after
    assert cents(totals["movement_minus_net_debit"]) == taken

    path = tmp_path / "journal" / "journal.sqlite3"
    db = sqlite3.connect(path)
    run_id, text = db.execute("SELECT id, info FROM runs ORDER BY started_at DESC, rowid DESC"
                              " LIMIT 1").fetchone()
    info = json.loads(text)
    info["wallet_after"]["NGN"] = str(true_after + taken)
    db.execute("UPDATE runs SET info = ? WHERE id = ?",
               (json.dumps(info, sort_keys=True, separators=(",", ":"), ensure_ascii=False),
                run_id))
    db.commit()
    db.close()

    checked = batchpay("verify")
    assert checked.exit_code == 1, checked
    assert f"run {run_id}: the runs table's info was edited (wallet_after " in checked.stderr
    hidden = tmp_path / "hidden.xlsx"
    refused = batchpay("statement", "--from", today(), "--to", today(), "--out", str(hidden))
    assert refused.exit_code == 2 and "changed outside batchpay" in refused.stderr, refused
    assert not hidden.exists()
    with Journal(path) as journal:
        chained = replay_runs(journal.db)[run_id]
    assert Decimal(chained.info["wallet_after"]["NGN"]) == true_after


def test_a_run_erased_from_the_runs_table_or_added_to_it_fails_verify(
        service: Any, tmp_path: Path) -> None:
    sheet = write_sheet(tmp_path / "nov.xlsx", [row(1)])
    assert batchpay("run", str(sheet), "--out", str(tmp_path / "a.xlsx"),
                    "--wait", "5").exit_code == 0
    db = sqlite3.connect(tmp_path / "journal" / "journal.sqlite3")
    (run_id,) = db.execute("SELECT id FROM runs").fetchone()
    db.execute("UPDATE runs SET id = 'R-BY-HAND'")
    db.commit()
    db.close()
    checked = batchpay("verify")
    assert checked.exit_code == 1, checked
    assert "run R-BY-HAND is in the runs table but in no event" in checked.stderr
    assert f"run {run_id} is in the chain but missing from the runs table" in checked.stderr
