"""What the maker does with a sheet before paying it: continue without its invalid rows (as
`--skip-invalid`), discard the batch, upload it as .xls or .ods (read as the CLI reads them),
and download every file under the name it was uploaded with, Chinese included."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote

import openpyxl
import pytest

from tests.console.conftest import SAMPLES, Desk, batch_id
from tests.console.test_month import wait_final
from tests.support.e2e import sandbox_payouts
from tests.support.producers import NO_SOFFICE, SOFFICE, libreoffice_formats

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("require_approval", [True, False])
def test_continue_without_the_invalid_rows_pays_only_the_valid_ones(
        desk_factory: Callable[..., Desk], require_approval: bool) -> None:
    desk = desk_factory(require_approval=require_approval)
    maker = desk.client("mia")
    batch = batch_id(maker.upload("november-payouts-mistakes.xlsx"))  # 10 invalid, 2 valid
    page = maker.http.get(f"/batches/{batch}").text
    assert ">Continue without the invalid rows<" in page and ">Review<" not in page
    assert maker.post(f"/batches/{batch}/review").status_code == 409
    assert desk.client("ada").post(f"/batches/{batch}/continue").status_code == 403
    other = desk.client("max")  # a maker, not this batch's: its invalid rows are mia's call
    assert ">Continue without the invalid rows<" not in other.http.get(f"/batches/{batch}").text
    assert other.post(f"/batches/{batch}/continue").status_code == 403
    assert "skip_invalid" not in desk.app.state.console.batches.get(batch).meta
    assert maker.post(f"/batches/{batch}/continue").status_code == 303
    page = maker.http.get(f"/batches/{batch}").text
    assert "Continuing without the 10 invalid row(s)" in page and ">Review<" in page
    assert maker.post(f"/batches/{batch}/review").status_code == 303
    review = maker.http.get(f"/batches/{batch}").text
    assert review.count('<td>INVALID</td>') == 10  # listed in the review, with their reasons
    stored = desk.app.state.console.batches.get(batch)
    if require_approval:
        document = json.loads(stored.plan_files.plan.read_text())
        assert len(document["rows"]) == 2  # the plan holds the valid rows only
        assert desk.client("abe").press(batch, "approve").status_code == 303
    assert maker.press(batch, "pay").status_code == 303
    state = wait_final(maker, batch)
    assert dict(state["counts"]).get("COMPLETED") == 2, state
    paid = sandbox_payouts(desk.sandbox.url)
    assert len(paid) == 2
    valid = [r for r in openpyxl.load_workbook(stored.checked, read_only=True)["Results"]
             .iter_rows(values_only=True)]
    header, rows = valid[0], valid[1:]
    accounts = {str(r[header.index("account_number")]) for r in rows
                if r[header.index("status")] == "VALID"}
    assert {p["accountNumber"] for p in paid} == accounts


def test_a_discarded_batch_is_never_paid_and_stays_in_history(desk: Desk) -> None:
    maker = desk.client("mia")
    batch = batch_id(maker.upload("november-payouts.xlsx"))
    assert maker.post(f"/batches/{batch}/review").status_code == 303
    assert ">Discard batch<" in maker.http.get(f"/batches/{batch}").text
    shown = desk.app.state.console.batches.get(batch).meta["review"]["plan_id"]
    assert desk.client("ada").post(f"/batches/{batch}/discard").status_code == 403
    other = desk.client("max")  # a maker, not this batch's
    assert ">Discard batch<" not in other.http.get(f"/batches/{batch}").text
    assert other.post(f"/batches/{batch}/discard").status_code == 403
    assert desk.app.state.console.batches.get(batch).stage == "reviewed"
    assert maker.post(f"/batches/{batch}/discard").status_code == 303
    page = maker.http.get(f"/batches/{batch}").text
    assert "Discarded by mia" in page and ">Pay<" not in page and ">Discard batch<" not in page
    # the form Pay showed before the discard, sent now: refused
    assert maker.post(f"/batches/{batch}/pay", plan=shown, confirm="yes").status_code == 409
    assert maker.post(f"/batches/{batch}/review").status_code == 409
    assert maker.post(f"/batches/{batch}/discard").status_code == 409
    history = desk.client("ada").http.get("/history").text
    assert batch in history and "discarded" in history
    assert sandbox_payouts(desk.sandbox.url) == []

    paid = batch_id(maker.upload("november-payouts.xlsx"))
    maker.post(f"/batches/{paid}/review")
    assert maker.press(paid, "pay").status_code == 303
    wait_final(maker, paid)
    assert maker.post(f"/batches/{paid}/discard").status_code == 409  # paid: kept as paid
    assert ">Discard batch<" not in maker.http.get(f"/batches/{paid}").text
    assert len(sandbox_payouts(desk.sandbox.url)) == 25


@pytest.mark.skipif(SOFFICE is None, reason=NO_SOFFICE)
def test_xls_and_ods_uploads_are_read_as_the_command_line_reads_them(
        desk: Desk, tmp_path: Path) -> None:
    saved = libreoffice_formats([SAMPLES / "november-payouts.xlsx"],
                                {"xls": tmp_path / "xls", "ods": tmp_path / "ods"})
    maker = desk.client("mia")
    for kind, (path,) in saved.items():
        batch = batch_id(maker.upload(path))
        page = maker.http.get(f"/batches/{batch}").text
        assert "Every row passed the check." in page and "VALID 25" in page, (kind, page[:2000])
    assert sandbox_payouts(desk.sandbox.url) == []


def test_downloads_keep_the_uploaded_name_chinese_included(desk: Desk) -> None:
    maker = desk.client("mia")
    name = "十一月 工资.xlsx"
    answer = maker.post("/upload", files={"sheet": (name, (SAMPLES / "november-payouts.xlsx")
                                                    .read_bytes())})
    batch = batch_id(answer)
    for kind, expected in [("sheet", "十一月 工资.xlsx"), ("checked", "十一月 工资-checked.xlsx")]:
        got = maker.http.get(f"/batches/{batch}/files/{kind}")
        assert got.status_code == 200
        disposition = got.headers["content-disposition"]
        assert f"filename*=UTF-8''{quote(expected, safe='')}" in disposition, disposition
        assert disposition.startswith('attachment; filename="') and disposition.isascii()
    book = openpyxl.load_workbook(io.BytesIO(
        maker.http.get(f"/batches/{batch}/files/checked").content), read_only=True)
    assert "Results" in book.sheetnames


def test_a_large_sheets_review_shows_how_far_it_got_at_once(
        desk_factory: Callable[..., Desk], monkeypatch: pytest.MonkeyPatch) -> None:
    """A sheet of more than SMALL_SHEET rows: Review answers within a second or so, and the
    page says how many rows are quoted of how many, until the review is there."""
    import time

    from batchpay.console import work

    monkeypatch.setattr(work, "SMALL_SHEET", 10)  # the 25-row sample counts as large
    desk = desk_factory(sandbox={"latency_ms": 300})
    maker = desk.client("mia")
    batch = batch_id(maker.upload("november-payouts.xlsx"))
    started = time.monotonic()
    assert maker.post(f"/batches/{batch}/review").status_code == 303
    assert time.monotonic() - started < 10
    page = maker.http.get(f"/batches/{batch}").text
    assert "This page refreshes itself" in page, page[-2000:]
    deadline = time.monotonic() + 30
    seen = False
    while desk.app.state.console.batches.get(batch).stage == "reviewing":
        seen = seen or " of 25 rows quoted" in maker.http.get(f"/batches/{batch}").text
        assert time.monotonic() < deadline
        time.sleep(0.1)
    assert seen
    assert "Cost per currency" in maker.http.get(f"/batches/{batch}").text
