"""Messages are for people; facts decide. Every message whose words once decided something
(a shortfall's exit code and plan, a held row's next step, a dry run's quoted row, rows
sharing a payout_ref, a payee confirmed by the maker alone, rows naming an unlisted bank)
is reworded here, and the behaviour is the same: the exit code, whether a plan is written,
each row's next step, read back from the workbook."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from batchpay.engine import gate, paying, real_money
from batchpay.sheet import schema
from batchpay.sheet.outcomes import DRY_RUN_STEP, HELD_PAYEE_STEP, HELD_REPEAT_STEP
from batchpay.sheet.validate import read_payouts
from tests.controls.test_make_plan import _plan
from tests.controls.test_repeat_hold import paid_once, retyped
from tests.support.e2e import batchpay, by_ref, sandbox_payouts, set_wallet
from tests.support.sheets import row, rows, write_sheet

REWORDED = "Reworded: the same fact in other words"


@pytest.fixture
def service(cli_sandbox: Any) -> Any:
    return cli_sandbox(settle_seconds=0.05)


def test_a_short_wallet_fails_the_dry_run_and_writes_no_plan_whatever_its_note_says(
        service: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(real_money.WalletNeed, "note", property(lambda self: REWORDED))
    sheet = write_sheet(tmp_path / "nov.xlsx", rows(2))
    covered = batchpay("run", str(sheet), "--dry-run", "--out", str(tmp_path / "dry.xlsx"))
    assert covered.exit_code == 0, covered
    set_wallet(service.url, "NGN", 1)
    short = batchpay("run", str(sheet), "--dry-run", "--out", str(tmp_path / "short.xlsx"))
    assert short.exit_code == 1, short
    assert REWORDED in short.stderr and "SHORTFALL" not in short.stderr
    made = _plan(sheet)
    assert made.refused == "the wallet cannot cover it."
    assert made.document is None and not made.files.plan.exists()
    assert sandbox_payouts(service.url) == []


def test_a_dry_runs_quoted_row_keeps_its_next_step_whatever_its_error_says(
        service: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(paying, "QUOTED_NOT_PAID", REWORDED)
    sheet = write_sheet(tmp_path / "nov.xlsx", rows(2))
    dry = batchpay("run", str(sheet), "--dry-run", "--out", str(tmp_path / "dry.xlsx"))
    assert dry.exit_code == 0, dry
    cells = by_ref(tmp_path / "dry.xlsx")
    assert [c["status"] for c in cells.values()] == ["NOT_SENT"] * 2
    assert {c["error"] for c in cells.values()} == {REWORDED}
    assert {c["next_step"] for c in cells.values()} == {DRY_RUN_STEP.plain}


def test_a_repeat_hold_keeps_its_next_step_whatever_its_error_says(
        service: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    paid_once(tmp_path)
    monkeypatch.setattr(gate, "held_message", lambda *args, **kwargs: REWORDED)
    again = batchpay("run", str(retyped(tmp_path)), "--wait", "2",
                     "--out", str(tmp_path / "nov.xlsx"))
    assert again.exit_code == 1, again
    assert len(sandbox_payouts(service.url)) == 3  # not 6
    cells = by_ref(tmp_path / "nov.xlsx")
    held = [cells[f"NOV-{n:03d}"] for n in (1, 2, 3)]
    assert [c["status"] for c in held] == ["HELD"] * 3
    assert {c["error"] for c in held} == {REWORDED}
    assert {c["next_step"] for c in held} == {HELD_REPEAT_STEP.plain}
    # the same hold said with the words of a payee's hold is still a repeat, and the reverse
    assert HELD_REPEAT_STEP.plain != HELD_PAYEE_STEP.plain


def test_rows_sharing_a_payout_ref_are_named_whatever_the_rule_says(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rules = schema.column_rules

    def reworded(column: Any) -> list[schema.Rule]:
        return [dataclasses.replace(r, message=lambda value, position: REWORDED)
                if r.code == schema.REF_UNIQUE else r for r in rules(column)]

    monkeypatch.setattr(schema, "column_rules", reworded)
    sheet = write_sheet(tmp_path / "nov.xlsx", [row(1, payout_ref="R-1"),
                                                row(2, payout_ref="r-1"), row(3)])
    _, validation = read_payouts(sheet)
    errors = [check.errors for check in validation.rows]
    assert "payout_ref: R-1 is also used in row 3 (r-1); every payout needs its own " \
           "payout_ref (refs that differ only in case are one)" in errors[0]
    assert any("r-1 is also used in row 2 (R-1)" in e for e in errors[1])
    assert errors[2] == []


def test_a_payee_confirmed_by_the_maker_alone_is_said_so_whatever_the_confirmation_says(
) -> None:
    from batchpay.controls.approval import change_line

    change = {"row": 2, "payee": "ACME", "reason": "CHANGED", "fields": [],
              "decision": "pay", "confirmed_by": REWORDED, "confirmer": "maya"}
    alone = f"    row 2 ACME: CHANGED, {REWORDED} (by the maker alone)"
    assert change_line(change, "maya") == alone
    assert change_line(change, "li.wei") == f"    row 2 ACME: CHANGED, {REWORDED}"
    # the words that once decided it, said by another confirmer, decide nothing
    said = {**change, "confirmed_by": "confirmed by maya 2026-11-02 10:00 UTC (call)",
            "confirmer": "li.wei"}
    assert "maker alone" not in change_line(said, "maya")
