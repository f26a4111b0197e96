"""The month through the console's forms, against a sandbox over real HTTP: the mistakes
sample shows its errors with row, column and fix; the corrected sample is reviewed,
approved by someone other than its maker and paid once; the results workbook's cells and
the sandbox's payouts say each row was paid exactly once, also when Pay is pressed again
and when the same sheet is then run from the command line on the same journal."""

from __future__ import annotations

import io
import json
import time
from typing import Any

import openpyxl
import pytest

from tests.console.conftest import SAMPLES, Desk, Signed, batch_id
from tests.support.e2e import batchpay, sandbox_payouts

pytestmark = pytest.mark.slow


def wait_final(signed: Signed, batch: str, seconds: float = 60) -> dict[str, Any]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        state = signed.http.get(f"/batches/{batch}/progress").json()
        if state["finished"]:
            return state
        time.sleep(0.3)
    raise AssertionError(f"the payment of {batch} did not end: {state}")


def test_the_month_with_an_approval(desk_factory) -> None:  # type: ignore[no-untyped-def]
    desk: Desk = desk_factory(require_approval=True)
    maker, approver = desk.client("mia"), desk.client("abe")

    mistakes = maker.upload("november-payouts-mistakes.xlsx")
    page = maker.http.get(mistakes.headers["location"]).text
    assert "INVALID 10" in page and "VALID 2" in page
    assert "<td>3</td><td>account_number</td>" in page  # sheet row, column, and the fix:
    assert "format the column as Text and type the number again" in page
    assert "<td>10</td><td>source_currency</td>" in page
    bad = batch_id(mistakes)
    checked = maker.http.get(f"/batches/{bad}/files/checked")
    sheet = openpyxl.load_workbook(io.BytesIO(checked.content), read_only=True)["Results"]
    header, *rows = list(sheet.iter_rows(values_only=True))
    assert [r[header.index("status")] for r in rows].count("INVALID") == 10
    assert maker.post(f"/batches/{bad}/review").status_code == 409  # errors: no review

    batch = batch_id(maker.upload("november-payouts-corrected.xlsx"))
    assert maker.post(f"/batches/{batch}/review").status_code == 303
    page = maker.http.get(f"/batches/{batch}").text
    assert "13,996,581.52" in page  # the dry run's debit incl. fees, NGN
    assert "the wallet holds" in page
    assert maker.press(batch, "pay").status_code == 409  # approval required
    assert approver.press(batch, "approve").status_code == 303

    first = maker.press(batch, "pay")
    second = maker.press(batch, "pay")  # a second press, a second tab
    assert first.status_code == 303 and second.status_code == 409
    state = wait_final(maker, batch)
    assert dict(state["counts"]) == {"COMPLETED": 12}, state
    results = maker.http.get(f"/batches/{batch}/files/results")
    assert results.status_code == 200
    book = openpyxl.load_workbook(io.BytesIO(results.content), read_only=True)
    header, *rows = list(book["Results"].iter_rows(values_only=True))
    accounts = sorted(str(r[header.index("account_number")]) for r in rows)
    assert [r[header.index("status")] for r in rows] == ["COMPLETED"] * 12
    run_sheet = {r[0]: r[1] for r in book["Run"].iter_rows(values_only=True) if r and r[0]}
    assert any("abe" in str(v) for v in run_sheet.values())  # the approver, on the Run sheet
    # the maker, as the plan's signature names them: mia's principal and key, mia as its user
    mias_key = desk.app.state.console.accounts.fingerprint("mia")
    assert any(str(v).startswith(f"mia ({mias_key}), mia@") for v in run_sheet.values())
    paid = sandbox_payouts(desk.sandbox.url)  # one payout per row, to each row's account
    assert sorted(p["accountNumber"] for p in paid) == accounts and len(set(accounts)) == 12

    # the command line on the same journal pays none of them again
    again = batchpay("run", str(SAMPLES / "november-payouts-corrected.xlsx"), "--out",
                     str(desk.settings.journal.parent / "again.xlsx"))
    assert again.exit_code in (0, 2), again
    assert len(sandbox_payouts(desk.sandbox.url)) == 12
    # and the same file uploaded again says who paid it
    repeat = batch_id(maker.upload("november-payouts-corrected.xlsx"))
    assert "This file was already uploaded by mia" in maker.http.get(f"/batches/{repeat}").text


def test_without_required_approval_the_maker_pays_the_review(desk: Desk) -> None:
    maker = desk.client("mia")
    batch = batch_id(maker.upload("november-payouts.xlsx"))
    assert maker.post(f"/batches/{batch}/review").status_code == 303
    assert maker.press(batch, "pay").status_code == 303
    state = wait_final(maker, batch)
    assert dict(state["counts"]) == {"COMPLETED": 25}
    assert len(sandbox_payouts(desk.sandbox.url)) == 25
    history = desk.client("ada").http.get("/history").text
    assert state["run_id"] in history and "chain head" in history


def test_unpaid_rows_come_back_as_a_new_sheet(desk: Desk, tmp_path) -> None:  # type: ignore[no-untyped-def]
    book = openpyxl.load_workbook(SAMPLES / "november-payouts.xlsx")
    sheet = book["Payouts"]
    header = [c.value for c in sheet[1]]
    sheet.cell(row=3, column=header.index("amount") + 1).value = 100  # 0.43 CNY: below the minimum
    ref = sheet.cell(row=3, column=header.index("payout_ref") + 1).value
    edited = tmp_path / "november-one-too-small.xlsx"
    book.save(edited)

    maker = desk.client("mia")
    batch = batch_id(maker.upload(edited))
    assert maker.post(f"/batches/{batch}/review").status_code == 303
    assert maker.press(batch, "pay").status_code == 303
    state = wait_final(maker, batch)
    assert dict(state["counts"]) == {"COMPLETED": 24, "QUOTE_FAILED": 1}, state
    assert "Unpaid rows as a new sheet" in maker.http.get(f"/batches/{batch}").text
    unpaid = maker.http.get(f"/batches/{batch}/files/unpaid")
    assert unpaid.status_code == 200
    rows = list(openpyxl.load_workbook(io.BytesIO(unpaid.content), read_only=True)["Payouts"]
                .iter_rows(values_only=True))
    assert list(rows[0]) == header and len(rows) == 2
    assert rows[1][header.index("payout_ref")] == ref and rows[1][header.index("amount")] == 100
    assert len(sandbox_payouts(desk.sandbox.url)) == 24


def test_a_payment_that_could_not_start_leaves_pay_free(desk: Desk) -> None:
    """The journal held by another run (`batchpay run` on a terminal): nothing is sent, the
    page says why, and Pay works once the journal is free."""
    from batchpay.journal.store import Journal

    maker = desk.client("mia")
    batch = batch_id(maker.upload("november-payouts.xlsx"))
    assert maker.post(f"/batches/{batch}/review").status_code == 303
    other = Journal(desk.settings.journal)
    other.lock()
    try:
        assert maker.press(batch, "pay").status_code == 303
        deadline = time.monotonic() + 30
        while desk.app.state.console.batches.get(batch).stage == "paying":
            assert time.monotonic() < deadline
            time.sleep(0.1)
    finally:
        other.close()
    page = maker.http.get(f"/batches/{batch}").text
    assert "Nothing was paid: Another batchpay run is using the journal" in page
    assert sandbox_payouts(desk.sandbox.url) == []
    assert maker.press(batch, "pay").status_code == 303
    assert dict(wait_final(maker, batch)["counts"]) == {"COMPLETED": 25}
    assert len(sandbox_payouts(desk.sandbox.url)) == 25


def test_rows_still_on_their_way_are_refreshed_from_the_service(desk_factory) -> None:  # type: ignore[no-untyped-def]
    desk: Desk = desk_factory(wait_seconds=0, sandbox={"settle_seconds": 1.5})
    maker = desk.client("mia")
    batch = batch_id(maker.upload("november-payouts.xlsx"))
    maker.post(f"/batches/{batch}/review")
    maker.press(batch, "pay")
    state = wait_final(maker, batch)
    assert "COMPLETED" not in dict(state["counts"]) and state["on_the_way"] == 25, state
    assert "Refresh statuses" in maker.http.get(f"/batches/{batch}").text
    assert desk.client("ada").post(f"/batches/{batch}/refresh").status_code == 403
    time.sleep(1.6)  # the sandbox settles them
    assert maker.post(f"/batches/{batch}/refresh").status_code == 303
    state = maker.http.get(f"/batches/{batch}/progress").json()
    assert dict(state["counts"]) == {"COMPLETED": 25} and state["on_the_way"] == 0
    results = maker.http.get(f"/batches/{batch}/files/results")
    book = openpyxl.load_workbook(io.BytesIO(results.content), read_only=True)
    header, *rows = list(book["Results"].iter_rows(values_only=True))
    assert [r[header.index("status")] for r in rows] == ["COMPLETED"] * 25
    assert len(sandbox_payouts(desk.sandbox.url)) == 25  # refreshed, never resent


def test_a_review_still_under_way_is_said_and_then_shown(desk: Desk) -> None:
    """A large sheet's review outlasts the request: the page says so and refreshes itself."""
    from batchpay.console import work

    maker = desk.client("mia")
    batch = batch_id(maker.upload("november-payouts.xlsx"))
    console = desk.app.state.console
    started = work.review(desk.settings, console.batches, console.batches.get(batch),
                          console.accounts, "mia", wait=0)
    assert started.stage in ("reviewing", "reviewed")
    page = maker.http.get(f"/batches/{batch}").text
    if console.batches.get(batch).stage == "reviewing":
        assert "This page refreshes itself" in page and ">Pay<" not in page
        assert maker.post(f"/batches/{batch}/review").status_code == 409  # one at a time
    deadline = time.monotonic() + 30
    while console.batches.get(batch).stage == "reviewing":
        assert time.monotonic() < deadline
        time.sleep(0.1)
    assert "Cost per currency" in maker.http.get(f"/batches/{batch}").text
    assert maker.press(batch, "pay").status_code == 303
    assert dict(wait_final(maker, batch)["counts"]) == {"COMPLETED": 25}


def test_two_approvals_when_the_settings_ask_for_two(desk_factory) -> None:  # type: ignore[no-untyped-def]
    desk: Desk = desk_factory(require_approval=True, approvals_required=2)
    maker = desk.client("mia")
    batch = batch_id(maker.upload("november-payouts.xlsx"))
    maker.post(f"/batches/{batch}/review")
    assert desk.client("abe").press(batch, "approve").status_code == 303
    refused = maker.press(batch, "pay")
    assert refused.status_code == 409 and "2 are required" in refused.text
    assert desk.client("abe").press(batch, "approve").status_code == 409  # twice
    assert desk.client("max").press(batch, "approve").status_code == 303
    assert maker.press(batch, "pay").status_code == 303
    assert dict(wait_final(maker, batch)["counts"]) == {"COMPLETED": 25}
    assert len(sandbox_payouts(desk.sandbox.url)) == 25


def test_a_results_workbook_is_planned_and_its_failed_row_paid_again(  # type: ignore[no-untyped-def]
        desk_factory, tmp_path) -> None:
    """The month's correction in approval mode: a row the bank refused is fixed in the
    results workbook, which is uploaded, planned as `rerun` reads it, approved and paid."""
    from tests.support.e2e import by_ref, edit_results

    desk: Desk = desk_factory(require_approval=True, sandbox={"settle_seconds": 0.05})
    maker, approver = desk.client("mia"), desk.client("abe")
    book = openpyxl.load_workbook(SAMPLES / "november-payouts-corrected.xlsx")
    header = [c.value for c in book["Payouts"][1]]
    book["Payouts"].cell(row=2, column=header.index("remark") + 1).value = "fail"
    book.save(tmp_path / "november.xlsx")
    batch = batch_id(maker.upload(tmp_path / "november.xlsx"))
    maker.post(f"/batches/{batch}/review")
    approver.press(batch, "approve")
    assert maker.press(batch, "pay").status_code == 303
    wait_final(maker, batch)
    results = tmp_path / "november-results.xlsx"
    for _ in range(40):
        maker.post(f"/batches/{batch}/refresh")
        results.write_bytes(maker.http.get(f"/batches/{batch}/files/results").content)
        if by_ref(results)["NOV26-M01"]["status"] == "REFUNDED":
            break
        time.sleep(0.2)
    assert by_ref(results)["NOV26-M01"]["status"] == "REFUNDED"
    assert len(sandbox_payouts(desk.sandbox.url)) == 12

    edit_results(results, "NOV26-M01", remark=None, account_number="6222020000012420000")
    again = batch_id(maker.upload(results))
    assert maker.post(f"/batches/{again}/review").status_code == 303
    stored = desk.app.state.console.batches.get(again)
    document = json.loads(stored.plan_files.plan.read_text())
    assert document["input"] == "results workbook"
    assert [r["payout_ref"] for r in document["rows"]] == ["NOV26-M01"]
    assert approver.press(again, "approve").status_code == 303
    assert maker.press(again, "pay").status_code == 303
    assert dict(wait_final(maker, again)["counts"]) == {"COMPLETED": 1}
    paid = [p["accountNumber"] for p in sandbox_payouts(desk.sandbox.url)]
    assert len(paid) == 13 and paid.count("6222020000012420000") == 1


@pytest.mark.parametrize("require_approval", [True, False])
def test_a_repeat_the_maker_releases_is_planned_and_paid_once(  # type: ignore[no-untyped-def]
        desk_factory, tmp_path, require_approval: bool) -> None:
    """Two of last batch's payments again under new refs: both held as repeats; the maker
    releases one (`plan --allow-repeat`), the plan lists it, and it alone is paid."""
    desk: Desk = desk_factory(require_approval=require_approval)
    maker, approver = desk.client("mia"), desk.client("abe")
    first = batch_id(maker.upload("november-payouts-corrected.xlsx"))
    maker.post(f"/batches/{first}/review")
    if require_approval:
        approver.press(first, "approve")
    maker.press(first, "pay")
    wait_final(maker, first)

    book = openpyxl.load_workbook(SAMPLES / "november-payouts-corrected.xlsx")
    sheet = book["Payouts"]
    header = [c.value for c in sheet[1]]
    sheet.delete_rows(4, sheet.max_row)
    for n in (1, 2):
        sheet.cell(row=n + 1, column=header.index("payout_ref") + 1).value = f"DEC-{n}"
    book.save(tmp_path / "december.xlsx")
    again = batch_id(maker.upload(tmp_path / "december.xlsx"))
    assert maker.post(f"/batches/{again}/review").status_code == 303
    page = maker.http.get(f"/batches/{again}").text
    assert "possible duplicate payment" in page and ">Review again<" in page
    assert 'name="release" value="DEC-1"' in page and 'name="release" value="DEC-2"' in page
    assert maker.post(f"/batches/{again}/review", release="DEC-1").status_code == 303
    document = json.loads(desk.app.state.console.batches.get(again).plan_files.plan.read_text())
    assert [r["payout_ref"] for r in document["rows"]] == ["DEC-1"]
    assert list(document["released_repeats"]) == ["DEC-1"]
    assert "Released by mia: DEC-1 repeats NOV26-M01" in maker.http.get(f"/batches/{again}").text
    assert "released by the maker: DEC-1" in approver.http.get(f"/batches/{again}").text
    if require_approval:
        assert approver.press(again, "approve").status_code == 303
    assert maker.press(again, "pay").status_code == 303
    # a plan pays its rows only; a sheet paid unapproved holds DEC-2 again
    held = {} if require_approval else {"HELD": 1}
    assert dict(wait_final(maker, again)["counts"]) == {"COMPLETED": 1, **held}
    assert len(sandbox_payouts(desk.sandbox.url)) == 13


def test_a_plan_the_library_no_longer_takes_is_shown_and_reviewed_again(  # type: ignore[no-untyped-def]
        desk_factory) -> None:
    """A batch reviewed by an earlier batchpay (a version 1 plan): its page still shows,
    saying why; approving it is refused; Review again makes a plan that is approved and
    paid."""
    desk: Desk = desk_factory(require_approval=True)
    maker, approver = desk.client("mia"), desk.client("abe")
    batch = batch_id(maker.upload("november-payouts-corrected.xlsx"))
    maker.post(f"/batches/{batch}/review")
    plan = desk.app.state.console.batches.get(batch).plan_files.plan
    plan.write_text(json.dumps({**json.loads(plan.read_text()), "version": 1}))
    page = approver.http.get(f"/batches/{batch}")
    assert page.status_code == 200 and "not a batchpay plan of version 3" in page.text
    assert approver.press(batch, "approve").status_code == 409
    assert ">Review again<" in maker.http.get(f"/batches/{batch}").text
    assert maker.post(f"/batches/{batch}/review").status_code == 303
    assert approver.press(batch, "approve").status_code == 303
    assert maker.press(batch, "pay").status_code == 303
    assert dict(wait_final(maker, batch)["counts"]) == {"COMPLETED": 12}
    assert len(sandbox_payouts(desk.sandbox.url)) == 12


@pytest.mark.parametrize("kind", ["run", "rerun"])
def test_the_payment_is_found_in_the_journal_while_it_goes_whatever_its_kind(
        tmp_path: Any, kind: str) -> None:
    """A results workbook's plan pays as `rerun` does: its run is the batch's payment too
    (else a payment that failed half-way would be said to have paid nothing); the review's
    dry run and runs from before the claim are not."""
    from types import SimpleNamespace

    from batchpay.console.payment import run_of
    from batchpay.journal.records import RunRecord
    from batchpay.journal.store import Journal
    from batchpay.settings.model import Settings

    path = tmp_path / "journal.sqlite3"
    with Journal(path) as journal:
        for run_id, run_kind in [("old", kind), ("review", "dry-run"), ("paying", kind)]:
            journal.start_run(RunRecord(run_id, run_kind, "2026-11-26T00:00:00Z", "nov.xlsx",
                                        "a" * 64, ["payout_ref"]), [])
    settings = Settings(journal=path)
    batch = SimpleNamespace(meta={"pay": {"sha256": "a" * 64, "runs_before": ["old"]}})
    assert run_of(settings, batch) == "paying"  # type: ignore[arg-type]
