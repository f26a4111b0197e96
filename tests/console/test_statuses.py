"""Statuses until final: Refresh statuses stays while a sent row is not COMPLETED or REFUNDED
(a FAILED row's refund is still to come), the console's follower asks for such rows by
itself, and a results workbook that pays a FAILED row again first records its failed
request's final state, so that the month's statement reconciles to the cent."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import openpyxl
import pytest

from batchpay.console.follower import Follower
from tests.console.conftest import SAMPLES, Desk, batch_id
from tests.console.test_month import wait_final
from tests.support.e2e import by_ref, edit_results, sandbox_payouts

pytestmark = pytest.mark.slow


def with_a_failing_row(tmp_path: Path, sample: str = "november-payouts-corrected.xlsx"
                       ) -> Path:
    """The sample with its first row's remark "fail": the sandbox ends it FAILED, then
    REFUNDED (the money back in the wallet)."""
    book = openpyxl.load_workbook(SAMPLES / sample)
    header = [c.value for c in book["Payouts"][1]]
    book["Payouts"].cell(row=2, column=header.index("remark") + 1).value = "fail"
    path = tmp_path / "november.xlsx"
    book.save(path)
    return path


def statement_gap(desk: Desk) -> dict[str, Any]:
    """Per currency: the wallet's movement minus the statement's net debit, and refunds."""
    from batchpay.engine.statement import build_statement
    from batchpay.journal.store import Journal

    today = datetime.now(UTC).date()
    with Journal(desk.settings.journal) as journal:
        statement = build_statement(journal, today, today)
    return {c: (t.wallet_movement - t.net_debit if t.wallet_movement is not None else None,
                t.refunded) for c, t in statement.totals.items()} | {
        "refunds": len(statement.refunds)}


def test_a_failed_row_fixed_and_paid_again_leaves_a_statement_that_reconciles(
        desk_factory: Callable[..., Desk], tmp_path: Path) -> None:
    """Nobody presses Refresh statuses: the run ends with the row FAILED (final, so the run
    stops following it); the refund comes at the service; the row is fixed in the results
    workbook, planned, approved and paid again. Its first request is REFUNDED in the journal
    before the second leaves, and the wallet's movement equals the statement's net debit."""
    desk = desk_factory(require_approval=True, sandbox={"settle_seconds": 1.0})
    maker, approver = desk.client("mia"), desk.client("abe")
    batch = batch_id(maker.upload(with_a_failing_row(tmp_path)))
    maker.post(f"/batches/{batch}/review")
    approver.press(batch, "approve")
    assert maker.press(batch, "pay").status_code == 303
    paid_at = time.monotonic()
    state = wait_final(maker, batch)
    assert dict(state["counts"]) == {"COMPLETED": 11, "FAILED": 1}, state
    assert state["not_final"] == 1
    assert ">Refresh statuses<" in maker.http.get(f"/batches/{batch}").text  # FAILED: not final
    results = tmp_path / "november-results.xlsx"
    results.write_bytes(maker.http.get(f"/batches/{batch}/files/results").content)
    assert by_ref(results)["NOV26-M01"]["status"] == "FAILED"
    # the refund, at the service: FAILED after a settle, REFUNDED two settles later
    time.sleep(max(0.0, paid_at + 3.5 - time.monotonic()))

    edit_results(results, "NOV26-M01", remark=None, account_number="6222020000012420000")
    again = batch_id(maker.upload(results))
    assert maker.post(f"/batches/{again}/review").status_code == 303
    assert approver.press(again, "approve").status_code == 303
    assert maker.press(again, "pay").status_code == 303
    assert dict(wait_final(maker, again)["counts"]) == {"COMPLETED": 1}
    assert len(sandbox_payouts(desk.sandbox.url)) == 13

    gap = statement_gap(desk)
    assert gap["refunds"] == 1, gap
    movement_minus_net, refunded = gap["NGN"]
    assert movement_minus_net == 0 and refunded > 0, gap
    # the first batch's page shows each payout_ref's latest payout: all final now
    state = maker.http.get(f"/batches/{batch}/progress").json()
    assert dict(state["counts"]) == {"COMPLETED": 12} and state["not_final"] == 0, state
    assert ">Refresh statuses<" not in maker.http.get(f"/batches/{batch}").text


def test_the_follower_follows_a_failed_row_to_refunded(desk_factory: Callable[..., Desk],
                                                        tmp_path: Path) -> None:
    desk = desk_factory(wait_seconds=0, sandbox={"settle_seconds": 1.0})
    maker = desk.client("mia")
    batch = batch_id(maker.upload(with_a_failing_row(tmp_path, "november-payouts.xlsx")))
    maker.post(f"/batches/{batch}/review")
    assert maker.press(batch, "pay").status_code == 303
    paid_at = time.monotonic()
    state = wait_final(maker, batch)
    assert state["not_final"] == 25 and ">Refresh statuses<" in maker.http.get(
        f"/batches/{batch}").text, state
    console = desk.app.state.console
    follower = Follower(desk.settings, console.batches, every=0)  # rounds by hand
    time.sleep(max(0.0, paid_at + 1.3 - time.monotonic()))  # the first rows settled
    assert follower.round() == 1
    counts: dict[str, int] = {}
    deadline = time.monotonic() + 30
    while True:
        counts = dict(maker.http.get(f"/batches/{batch}/progress").json()["counts"])
        if counts.get("FAILED") or counts.get("PENDING") or counts.get("PROCESSING"):
            assert ">Refresh statuses<" in maker.http.get(f"/batches/{batch}").text, counts
        if "REFUNDED" in counts and counts.get("COMPLETED") == 24:
            break
        assert time.monotonic() < deadline, counts
        time.sleep(0.5)
        follower.round()
    assert counts == {"COMPLETED": 24, "REFUNDED": 1}
    assert ">Refresh statuses<" not in maker.http.get(f"/batches/{batch}").text
    assert follower.round() == 0  # every row final: the batch is left alone from now on
    assert console.batches.get(batch).meta.get("followed") is True
    assert len(sandbox_payouts(desk.sandbox.url)) == 25  # followed, never resent
