"""No batch stranded: a payment whose process died is seen as stopped, resumed once with
Resume payment, or finished by `batchpay run --plan` on a terminal (which finds the
console's own approvers file); either way the page shows the final state and the results
workbook. Payouts are counted at the sandbox over real HTTP.

The process that died is a real one: `batchpay run --plan` of the batch's plan, killed with
SIGKILL once some of its payout requests are in the journal, stands for the console's
payment thread that died with `serve` (the browser test kills `serve` itself)."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import openpyxl
import pytest

from batchpay.console.batches import Payment, this_process
from tests.console.conftest import Desk, Signed, batch_id
from tests.console.test_month import wait_final
from tests.support.e2e import batchpay, sandbox_payouts
from tests.support.processes import kill_when

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def approved_batch(desk: Desk, sample: str = "november-payouts-corrected.xlsx"
                   ) -> tuple[Signed, str]:
    maker = desk.client("mia")
    batch = batch_id(maker.upload(sample))
    assert maker.post(f"/batches/{batch}/review").status_code == 303
    assert desk.client("abe").press(batch, "approve").status_code == 303
    return maker, batch


def stranded(desk: Desk, batch: str, pid: int) -> Any:
    """The batch as a console leaves it when its process dies while paying: claimed, its
    payment recorded as run by `pid`, no end written."""
    from batchpay.controls.plan_file import read_plan
    from batchpay.journal.store import Journal

    batches = desk.app.state.console.batches
    plan = read_plan(batches.get(batch).plan_files.plan)
    with Journal(desk.settings.journal) as journal:
        before = [r.id for r in journal.runs() if r.input_sha256 == plan.id]
    batches.claim_payment(batch, "mia")
    return batches.update(batch, pay=Payment(sha256=plan.id, runs_before=before),
                          pay_process={**this_process(), "pid": pid})


def test_a_payment_killed_half_way_is_resumed_and_pays_every_row_once(
        desk_factory: Callable[..., Desk], tmp_path: Any) -> None:
    desk = desk_factory(require_approval=True, sandbox={"latency_ms": 150,
                                                        "settle_seconds": 0.2})
    maker, batch = approved_batch(desk)
    stored = desk.app.state.console.batches.get(batch)
    # the payment's process: paying the batch's plan, killed once 4 requests are journaled
    env = {**os.environ, "PYTHONPATH": str(REPO)}  # the sandbox's, the journal's, its key's
    stranded(desk, batch, pid=dead_pid())
    child = subprocess.Popen([sys.executable, "-m", "batchpay", "run", "--plan",
                              str(stored.plan_files.plan), "--yes", "--concurrency", "2",
                              "--out", str(tmp_path / "killed.xlsx")],
                             env=env, cwd=tmp_path, stdout=subprocess.PIPE,
                             stderr=(tmp_path / "run.log").open("w"), text=True)
    desk.app.state.console.batches.update(batch, pay_process={**this_process(),
                                                              "pid": child.pid})
    assert kill_when(child, desk.settings.journal, intents=4, extra=0.05), (
        tmp_path / "run.log").read_text()
    sent_before = len(sandbox_payouts(desk.sandbox.url))
    assert 0 < sent_before < 12, sent_before  # killed half-way

    page = maker.http.get(f"/batches/{batch}").text
    assert "Stopped: this payment stopped before it ended" in page
    assert ">Resume payment<" in page and "goes on, and this page shows it" not in page
    index = maker.http.get("/").text
    assert "Payments that stopped" in index and f"batch {batch}" in index
    assert maker.http.get(f"/batches/{batch}/progress").json()["stopped"] is True
    # whoever may not pay may not resume, the page's plan or not: auditor, approver, owner
    shown = stored.meta["review"]["plan_id"]
    for who in ("ada", "abe", "owner"):
        assert desk.client(who).post(f"/batches/{batch}/resume",
                                     plan=shown).status_code == 403, who
    for who in ("abe", "owner"):
        assert ">Resume payment<" not in desk.client(who).http.get(f"/batches/{batch}").text
    # Pay stays once, even with the plan and a yes
    assert maker.post(f"/batches/{batch}/pay", plan=shown, confirm="yes").status_code == 409

    # Resume payment acts on the plan its page showed, and on the one the payment started
    assert maker.post(f"/batches/{batch}/resume").status_code == 409  # no plan: refused
    assert maker.post(f"/batches/{batch}/resume", plan="0" * 64).status_code == 409
    assert ">Resume payment<" in maker.http.get(f"/batches/{batch}").text  # still stopped
    first = maker.press(batch, "resume")
    second = maker.post(f"/batches/{batch}/resume", plan=shown)  # a second press, a second tab
    assert first.status_code == 303 and second.status_code == 409, second.text
    state = wait_final(maker, batch)
    assert dict(state["counts"]) == {"COMPLETED": 12}, state
    paid = sandbox_payouts(desk.sandbox.url)
    assert len(paid) == 12 and len({p["accountNumber"] for p in paid}) == 12
    assert len({p["quoteId"] for p in paid}) == 12
    page = maker.http.get(f"/batches/{batch}").text
    assert "Results workbook" in page and "Resume payment" not in page
    assert "Payments that stopped" not in maker.http.get("/").text


def test_a_stopped_payment_finished_on_a_terminal_shows_its_end_and_results(
        desk_factory: Callable[..., Desk], tmp_path: Any, monkeypatch: Any) -> None:
    """`batchpay run --plan` of the batch's plan, with no approvers_file set: it finds the
    console's own approvers file; the page then shows the run's end and the workbook."""
    desk = desk_factory(require_approval=True, sandbox={"settle_seconds": 0.05})
    maker, batch = approved_batch(desk)
    stranded(desk, batch, pid=dead_pid())
    assert ">Resume payment<" in maker.http.get(f"/batches/{batch}").text
    monkeypatch.delenv("BATCHPAY_APPROVERS_FILE", raising=False)
    plan = desk.app.state.console.batches.get(batch).plan_files.plan
    paid = batchpay("run", "--plan", str(plan), "--yes", "--out", str(tmp_path / "cli.xlsx"))
    assert paid.exit_code == 0, paid
    assert len(sandbox_payouts(desk.sandbox.url)) == 12

    state = maker.http.get(f"/batches/{batch}/progress").json()
    assert state["finished"] and dict(state["counts"]) == {"COMPLETED": 12}, state
    page = maker.http.get(f"/batches/{batch}").text
    assert "Final: the run" in page and "Results workbook" in page
    assert "Resume payment" not in page
    results = maker.http.get(f"/batches/{batch}/files/results")
    book = openpyxl.load_workbook(io.BytesIO(results.content), read_only=True)
    header, *rows = list(book["Results"].iter_rows(values_only=True))
    assert [r[header.index("status")] for r in rows] == ["COMPLETED"] * 12
    assert maker.post(f"/batches/{batch}/resume").status_code == 409  # nothing to resume


def test_a_payment_going_on_is_not_offered_for_resuming(desk_factory: Callable[..., Desk]
                                                        ) -> None:
    """While a payment goes on (in this console, or in a live process) the page says so and
    Resume payment is refused: only a dead process's payment is resumed."""
    desk = desk_factory(sandbox={"latency_ms": 200, "settle_seconds": 0.05})
    maker = desk.client("mia")
    batch = batch_id(maker.upload("november-payouts.xlsx"))
    maker.post(f"/batches/{batch}/review")
    assert maker.press(batch, "pay").status_code == 303
    page = maker.http.get(f"/batches/{batch}").text
    assert "the payment goes on" in page and ">Resume payment<" not in page
    assert maker.post(f"/batches/{batch}/resume").status_code == 409
    wait_final(maker, batch)
    assert len(sandbox_payouts(desk.sandbox.url)) == 25

    other = batch_id(maker.upload("november-payouts-corrected.xlsx"))
    maker.post(f"/batches/{other}/review")
    batches = desk.app.state.console.batches
    batches.claim_payment(other, "mia")
    batches.update(other, pay=Payment(sha256=batches.get(other).meta["sha256"],
                                      runs_before=[]),
                   pay_process={**this_process(), "pid": os.getppid()})  # alive, not us
    page = maker.http.get(f"/batches/{other}").text
    assert "Paying elsewhere" in page and ">Resume payment<" not in page
    assert maker.post(f"/batches/{other}/resume").status_code == 409


def test_a_console_that_died_right_after_the_claim_offers_resume(
        desk_factory: Callable[..., Desk]) -> None:
    """Claimed, and the process gone before the payment was even recorded: nothing was
    sent; Resume payment pays every row once."""
    desk = desk_factory(sandbox={"settle_seconds": 0.05})
    maker = desk.client("mia")
    batch = batch_id(maker.upload("november-payouts.xlsx"))
    maker.post(f"/batches/{batch}/review")
    batches = desk.app.state.console.batches
    batches.claim_payment(batch, "mia")
    batches.update(batch, pay_process={**this_process(), "pid": dead_pid()})
    page = maker.http.get(f"/batches/{batch}").text
    assert "Stopped: this payment stopped" in page and ">Resume payment<" in page
    assert maker.press(batch, "resume").status_code == 303
    assert dict(wait_final(maker, batch)["counts"]) == {"COMPLETED": 25}
    assert len(sandbox_payouts(desk.sandbox.url)) == 25
