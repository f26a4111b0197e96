"""A repeat released by the maker belongs in the plan the approver signs: `plan
--allow-repeat REF` plans the row, the plan lists the release (and the approver is shown
it), `run --plan` pays it; `run --plan --allow-repeat` is refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.controls.test_approval import CHECKER, MAKER, approve, approvers, maya, new_key
from tests.support.e2e import batchpay, by_ref, sandbox_payouts
from tests.support.sheets import rows, write_sheet


@pytest.fixture
def service(cli_sandbox: Any) -> Any:
    return cli_sandbox(settle_seconds=0.05)


def planned(tmp_path: Path, sheet: Path, name: str, key: Path, *extra: str) -> tuple[Path, Any]:
    made = batchpay("plan", str(sheet), "--out", str(tmp_path / name), "--json",
                    "--key", str(maya(tmp_path)), *extra, env=MAKER)
    assert made.exit_code in (0, 1), made  # 1: some row of the sheet is held
    plan = tmp_path / f"{name}.plan.json"
    return plan, approve(plan, json.loads(made.stdout)["short_code"], key)


def test_a_release_is_planned_approved_and_paid(service: Any, tmp_path: Path) -> None:
    key, line = new_key(tmp_path, "Li Wei")
    approvers(tmp_path, line)
    plan, signed = planned(tmp_path, write_sheet(tmp_path / "a.xlsx", rows(2)), "a", key)
    batchpay("run", "--plan", str(plan), "--out", str(tmp_path / "a-r.xlsx"), "--wait", "5",
             env=CHECKER)
    assert len(sandbox_payouts(service.url)) == 2
    again = rows(2)
    again[0]["payout_ref"], again[1]["payout_ref"] = "B-1", "B-2"  # a real second payment
    sheet = write_sheet(tmp_path / "b.xlsx", again)
    held = batchpay("plan", str(sheet), "--out", str(tmp_path / "held"),
                    "--key", str(maya(tmp_path)), env=MAKER)
    assert held.exit_code == 1 and "no row would be sent" in held.stderr, held

    plan, signed = planned(tmp_path, sheet, "b", key, "--allow-repeat", "B-1")
    document = json.loads(plan.read_text())
    assert [r["payout_ref"] for r in document["rows"]] == ["B-1"]
    assert document["released_repeats"] == {"B-1": ["T-00001"]}
    assert [h["row"] for h in document["held"]] == [3]  # B-2 still held, and why
    assert "released by the maker: B-1 repeats T-00001" in signed.stderr
    assert "possible duplicate payment" in signed.stderr

    refused = batchpay("run", "--plan", str(plan), "--allow-repeat", "B-2", env=CHECKER)
    assert refused.exit_code == 2 and "belongs in the plan" in refused.stderr
    paid = batchpay("run", "--plan", str(plan), "--out", str(tmp_path / "b-r.xlsx"),
                    "--wait", "5", env=CHECKER)
    assert paid.exit_code == 0, paid
    assert by_ref(tmp_path / "b-r.xlsx")["B-1"]["status"] == "COMPLETED"
    assert len(sandbox_payouts(service.url)) == 3


def test_a_change_confirmed_by_the_maker_alone_waits_for_another_person(
        service: Any, tmp_path: Path) -> None:
    key, line = new_key(tmp_path, "Li Wei")
    approvers(tmp_path, line, extra="payee_confirmed_by_other = true\n")
    first = rows(2)
    for n, values in enumerate(first, start=1):
        values["payee_id"] = f"P-{n}"
    headers = list(first[0])
    plan, _ = planned(tmp_path, write_sheet(tmp_path / "a.xlsx", first, headers), "a", key)
    batchpay("run", "--plan", str(plan), "--out", str(tmp_path / "a-r.xlsx"), "--wait", "5",
             env=CHECKER)
    second = [dict(v, payout_ref=f"DEC-{n}", amount=v["amount"] + 1)
              for n, v in enumerate(first, start=1)]
    second[1]["account_number"] = "6217000000000009876"
    sheet = write_sheet(tmp_path / "b.xlsx", second, headers)
    held = batchpay("plan", str(sheet), "--out", str(tmp_path / "held"),
                    "--key", str(maya(tmp_path)), env=MAKER)
    assert "HELD" in held.stderr
    assert batchpay("payees", "confirm", "P-2", "--account-last4", "9876",
                    env=MAKER).exit_code == 0
    plan, signed = planned(tmp_path, sheet, "b", key)
    document = json.loads(plan.read_text())
    assert [r["payout_ref"] for r in document["rows"]] == ["DEC-1"]  # the maker's own word
    assert "confirmed by maya, who makes this batch" in document["held"][0]["why"]
    assert document["controls"]["payee_confirmed_by_other"] is True
    assert batchpay("payees", "confirm", "P-2", "--account-last4", "9876",
                    env=CHECKER).exit_code == 0  # a second person
    plan, signed = planned(tmp_path, sheet, "c", key)
    document = json.loads(plan.read_text())
    assert sorted(r["payout_ref"] for r in document["rows"]) == ["DEC-1", "DEC-2"]
    assert "confirmed by li.wei" in signed.stderr and "maker alone" not in signed.stderr
    paid = batchpay("run", "--plan", str(plan), "--out", str(tmp_path / "c-r.xlsx"),
                    "--wait", "5", env=CHECKER)
    assert paid.exit_code == 0, paid
    assert len(sandbox_payouts(service.url)) == 4
