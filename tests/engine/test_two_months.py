"""Two months in approval mode at the sandbox, as a maker, an approver and an auditor would
live them: month 1 with a row that fails at the bank and is paid again through a plan of
the results workbook; month 2 with equal salaries (paid, not held), a changed payee
(confirmed by the maker, shown to the approver as such) and a new payee. Each month's
statement equals the sandbox's payouts and the wallet's movement, to the cent; every
figure is read back from workbook cells."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

import batchpay.engine.runner as runner_module
import batchpay.journal.store as journal_module
from tests.controls.test_approval import CHECKER, MAKER, approve, approvers, maya, new_key
from tests.engine.test_statement import cents, sheet_rows, wallet
from tests.support.e2e import batchpay, by_ref, edit_results, results, sandbox_payouts
from tests.support.postgres import BOTH_STORES
from tests.support.sheets import HEADERS, rows, write_sheet

PAYEE_HEADERS = ["payee_id", *HEADERS]


@pytest.fixture
def service(cli_sandbox: Any) -> Any:
    return cli_sandbox(settle_seconds=0.05)


def staff(month: str) -> list[dict[str, Any]]:
    """Three salaries and a supplier, the same people and amounts every month."""
    sheet = rows(4)
    for n, values in enumerate(sheet, start=1):
        values["payee_id"] = f"P-{n}"
        values["payout_ref"] = f"{month}-{n}"
    return sheet


def plan_approved(tmp_path: Path, source: Path, name: str, key: Path,
                  *extra: str) -> tuple[Path, dict[str, Any], str]:
    """The maker plans, the approver reads the summary and signs; returns the plan, its
    document and what the approver was shown."""
    made = batchpay("plan", str(source), "--out", str(tmp_path / name), "--json",
                    "--key", str(maya(tmp_path)), *extra, env=MAKER)
    assert made.exit_code == 0, made
    plan = tmp_path / f"{name}.plan.json"
    signed = approve(plan, json.loads(made.stdout)["short_code"], key)
    assert signed.exit_code == 0, signed
    return plan, json.loads(plan.read_text()), signed.stderr


def pay(tmp_path: Path, plan: Path, out: str) -> Path:
    path = tmp_path / out
    batchpay("run", "--plan", str(plan), "--out", str(path), "--wait", "5", env=CHECKER)
    return path


def statement(tmp_path: Path, first: str, out: str, last: str = "") -> Path:
    path = tmp_path / out
    made = batchpay("statement", "--from", first, "--to", last or first, "--out", str(path))
    assert made.exit_code == 0, made
    return path


def totals_of(path: Path) -> dict[str, Any]:
    return next(r for r in sheet_rows(path, "Totals") if r["source_currency"] == "NGN")


@BOTH_STORES
def test_two_months_in_approval_mode(service: Any, tmp_path: Path,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    checker_key, line = new_key(tmp_path, "Li Wei")
    approvers(tmp_path, line)
    start = wallet(service.url)

    # ---- month 1, a month ago: the journal and the runs are dated then
    month_ago = datetime.now(UTC) - timedelta(days=31)
    stamp = month_ago.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    with monkeypatch.context() as m:
        m.setattr(journal_module, "stamp", lambda: stamp)
        m.setattr(runner_module, "stamp", lambda: stamp)
        november = staff("NOV")
        november[3]["remark"] = "fail"  # the supplier's bank refuses it
        sheet = write_sheet(tmp_path / "nov.xlsx", november, PAYEE_HEADERS)
        plan1, _, _ = plan_approved(tmp_path, sheet, "nov", checker_key)
        paid1 = pay(tmp_path, plan1, "nov-paid.xlsx")
        assert batchpay("rerun", str(paid1)).exit_code == 2  # approval mode: a plan only
        for _ in range(20):
            if by_ref(paid1)["NOV-4"]["status"] == "REFUNDED":
                break
            batchpay("sync", "--out", str(paid1), "--overwrite")
        failed = by_ref(paid1)["NOV-4"]
        assert failed["status"] == "REFUNDED", failed
        assert "make a plan of this workbook" in failed["next_step"]
        # the operator corrects the account in the results workbook and plans *it*
        edit_results(paid1, "NOV-4", remark=None, account_number="6222000000000000444")
        plan2, document2, _ = plan_approved(tmp_path, paid1, "nov-again", checker_key)
        assert [r["payout_ref"] for r in document2["rows"]] == ["NOV-4"]
        assert document2["input"] == "results workbook"
        paid2 = pay(tmp_path, plan2, "nov-again-paid.xlsx")
        assert by_ref(paid2)["NOV-4"]["status"] == "COMPLETED"
    month1 = sandbox_payouts(service.url)
    assert len(month1) == 5
    after1 = wallet(service.url)

    # ---- month 2, today: equal salaries, one changed payee, one new payee
    month2_began = datetime.now(UTC).date().isoformat()  # its statement's period (midnight may pass)
    december = staff("DEC")
    december[3]["remark"] = None
    december[3]["account_number"] = "6222000000000000444"  # as corrected and paid
    december[1]["account_number"] = "6217000000000009876"  # P-2 says it changed banks
    december.append(rows(1, start=5)[0] | {"payee_id": "P-5", "payout_ref": "DEC-5"})
    sheet = write_sheet(tmp_path / "dec.xlsx", december, PAYEE_HEADERS)
    first_try = batchpay("plan", str(sheet), "--out", str(tmp_path / "dec-held"), "--json",
                         "--key", str(maya(tmp_path)), env=MAKER)
    held_plan = json.loads((tmp_path / "dec-held.plan.json").read_text())
    assert first_try.exit_code == 1
    assert [h["row"] for h in held_plan["held"]] == [3]  # DEC-2, row 3, held and why
    assert "bank details changed" in held_plan["held"][0]["why"]
    assert sorted(r["payout_ref"] for r in held_plan["rows"]) == [
        "DEC-1", "DEC-3", "DEC-4", "DEC-5"]  # equal salaries are not held as repeats
    confirmed = batchpay("payees", "confirm", "P-2", "--account-last4", "9876", env=MAKER)
    assert confirmed.exit_code == 0, confirmed
    plan3, document3, shown = plan_approved(tmp_path, sheet, "dec", checker_key)
    assert len(document3["rows"]) == 5 and document3["held"] == []
    change = next(c for c in document3["payee_changes"] if c["payee"] == "P-2")
    assert change["fields"] == [["account_number", "6222…0002", "6217…9876"]]
    assert "P-2: known, account_number 6222…0002 → 6217…9876, confirmed by maya" in shown
    assert "(by the maker alone)" in shown
    assert any(c["payee"] == "P-5" and c["reason"] == "new" for c in document3["payee_changes"])
    paid3 = pay(tmp_path, plan3, "dec-paid.xlsx")
    assert {r["status"] for r in by_ref(paid3).values()} == {"COMPLETED"}
    month2 = sandbox_payouts(service.url)[5:]
    assert len(month2) == 5
    after2 = wallet(service.url)
    run3 = {str(r["field"]): str(r["value"]) for r in results(paid3, "Run")}
    assert run3["payouts sent by this run"] == "5"

    # ---- the auditor: one statement per month, reconciled with the sandbox and the wallet
    for path, payouts, before, after, refs in (
            (statement(tmp_path, month_ago.date().isoformat(), "nov-statement.xlsx"),
             month1, start, after1, {f"NOV-{n}" for n in range(1, 5)}),
            (statement(tmp_path, month2_began, "dec-statement.xlsx",
                       datetime.now(UTC).date().isoformat()),
             month2, after1, after2, {f"DEC-{n}" for n in range(1, 6)})):
        lines = {r["payout_ref"]: r for r in sheet_rows(path, "Statement")}
        assert set(lines) == refs
        kept = [p for p in payouts if p["state"] != "REFUNDED"]
        assert sum(cents(r["source_paid"]) for r in lines.values()) == sum(
            cents(p["sourceAmount"]) for p in kept)
        assert sum(cents(r["delivered"]) for r in lines.values()) == sum(
            cents(p["targetAmount"]) for p in kept)
        assert {r["reference_number"] for r in lines.values()} == {
            p["referenceNumber"] for p in kept}
        totals = totals_of(path)
        assert cents(totals["net_debit"]) == before - after  # the wallet, to the cent
        assert cents(totals["wallet_before"]) == before
        assert cents(totals["wallet_after"]) == after
        assert all("Li Wei" in r["approved_by"] for r in lines.values())
    nov = {r["payout_ref"]: r for r in sheet_rows(tmp_path / "nov-statement.xlsx", "Statement")}
    assert nov["NOV-4"]["requests"] == 2 and nov["NOV-4"]["status"] == "COMPLETED"
    refunds = sheet_rows(tmp_path / "nov-statement.xlsx", "Refunds")
    assert [r["payout_ref"] for r in refunds] == ["NOV-4"]
    dec = {r["payout_ref"]: r for r in sheet_rows(tmp_path / "dec-statement.xlsx", "Statement")}
    assert "P-2" in dec["DEC-2"]["payee_confirmations"]
    assert batchpay("verify").exit_code == 0
