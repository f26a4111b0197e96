"""Who gets what, in Debian's Chromium: an approver reads a review of 2,000 rows a hundred
at a time (Next page, Previous page) and filters it by finding; no resident ID or USCC of
the sheet is on any page an approver or an auditor opens; the maker reads a held payee's
details back (before → after, the new account in full) and confirms it by its name.

BATCHPAY_SCREENSHOTS=FOLDER keeps the screenshots the README shows."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest

from batchpay.console.rows import PAGE_SIZE
from batchpay.controls.masking import masked_id
from batchpay.money import masked
from batchpay.sheet.columns import COLUMN_NAMES
from tests.benchmarks.bench_intake import make_rows
from tests.console.conftest import Desk, Signed, batch_id
from tests.console.test_browser import Served, browser, serving, shot
from tests.console.test_month import wait_final
from tests.support.e2e import sandbox_payouts
from tests.support.sheets import write_grid

__all__ = ["browser"]  # the module's Chromium (a fixture)

pytestmark = pytest.mark.slow
ROWS = 2000
HELD = 3  # the sheet's first rows: payees paid last month on other accounts
COLUMNS = list(COLUMN_NAMES)


def column(name: str) -> int:
    return COLUMNS.index(name)


def month_sheets(folder: Path) -> tuple[Path, Path, list[list[Any]]]:
    """Last month's sheet (the first HELD payees, each on another account) and this month's
    (ROWS rows, NGN, each payee's name its own)."""
    grid = make_rows(ROWS)
    for n, row in enumerate(grid, start=1):
        row[column("source_currency")] = "NGN"
        for name in ("recipient_name", "company_name"):
            if row[column(name)]:
                row[column(name)] = f"{row[column(name)]}{n}"
    before = [list(row) for row in grid[:HELD]]
    for n, row in enumerate(before, start=1):
        account = str(row[column("account_number")])
        row[column("account_number")] = account[:-1] + str((int(account[-1]) + 1) % 10)
        row[column("payout_ref")] = f"OCT-{n:03d}"
    last = write_grid(folder / "october.xlsx", COLUMNS, before)
    this = write_grid(folder / "november-2000.xlsx", COLUMNS, grid, constant_memory=True)
    return last, this, grid


def reviewed(desk: Desk, maker: Signed, sheet: Path, seconds: float = 240) -> str:
    """The sheet uploaded by `maker` and reviewed (a large review goes on after the press)."""
    batch = batch_id(maker.upload(sheet))
    assert maker.post(f"/batches/{batch}/review").status_code == 303
    batches = desk.app.state.console.batches
    deadline = time.monotonic() + seconds
    while batches.get(batch).stage == "reviewing":
        assert time.monotonic() < deadline, "the review did not end"
        time.sleep(0.5)
    assert batches.get(batch).stage == "reviewed", batches.get(batch).meta.get("review_error")
    return batch


def ids_in(text: str, grid: list[list[Any]]) -> list[str]:
    """The sheet's resident IDs and USCCs found whole in `text`."""
    ids = {str(row[column(n)]) for row in grid for n in ("company_id", "ic_number")
           if row[column(n)]}
    return sorted(i for i in ids if i in text)


def first_cells(page: Any) -> list[str]:
    table = page.get_by_role("table", name="Rows", exact=True)
    return [c.strip() for c in table.locator("tbody tr td:first-child").all_inner_texts()]


def test_the_approver_reads_2000_rows_by_pages_and_findings(
        browser: Any, desk_factory: Any, tmp_path: Path) -> None:
    from playwright.sync_api import expect

    desk: Desk = desk_factory(require_approval=True)
    last, this, grid = month_sheets(tmp_path)
    maker, approver = desk.client("mia"), desk.client("abe")
    october = reviewed(desk, maker, last)
    assert approver.press(october, "approve").status_code == 303
    assert maker.press(october, "pay").status_code == 303
    assert dict(wait_final(maker, october)["counts"]) == {"COMPLETED": HELD}
    batch = reviewed(desk, maker, this)

    with serving(desk) as served:
        page = browser.new_context(viewport={"width": 1200, "height": 900}).new_page()
        page.goto(served.login_link("abe"))
        page.goto(f"{served.url}/batches/{batch}")
        rows = page.get_by_role("table", name="Rows", exact=True)
        expect(rows.locator("tbody tr")).to_have_count(PAGE_SIZE)
        assert first_cells(page) == [str(n) for n in range(2, 2 + PAGE_SIZE)]  # sheet rows
        expect(rows.locator("caption")).to_contain_text("rows 1–100 of 2,000")
        first = grid[0]
        expect(rows.locator("tbody tr").first).to_contain_text(str(first[column("payout_ref")]))
        expect(rows.locator("tbody tr").first).to_contain_text(
            masked(first[column("account_number")]))
        expect(rows.locator("tbody tr").first).to_contain_text("held")
        expect(page.get_by_role("table", name="Payee summary")).to_contain_text("1,997")
        assert not ids_in(page.content(), grid)

        started = time.monotonic()
        page.get_by_role("link", name="Next page").click()
        expect(rows.locator("caption")).to_contain_text("rows 101–200 of 2,000")
        seconds = time.monotonic() - started
        assert first_cells(page) == [str(n) for n in range(102, 102 + PAGE_SIZE)]
        row_101 = grid[PAGE_SIZE]
        expect(rows.locator("tbody tr").first).to_contain_text(str(row_101[column("payout_ref")]))
        expect(rows.locator("tbody tr").first).to_contain_text(
            str(row_101[column("recipient_name")]))
        assert not ids_in(page.content(), grid)
        page.get_by_role("link", name="Previous page").click()
        expect(rows.locator("caption")).to_contain_text("rows 1–100 of 2,000")
        print(f"Next page at {ROWS:,} rows: {seconds:.2f} s")  # noqa: T201 - the figure

        page.get_by_label("Finding").select_option("held")
        page.get_by_role("button", name="Show rows").click()
        expect(rows.locator("tbody tr")).to_have_count(HELD)
        findings = rows.locator("tbody tr td:last-child").all_inner_texts()
        assert findings == ["held"] * HELD
        assert first_cells(page) == [str(n) for n in range(2, 2 + HELD)]
        expect(page.get_by_role("link", name="Next page")).to_have_count(0)
        shot(page.locator("#review"), "console-rows-held", tmp_path)

        # no ID whole on any page the approver or the auditor opens
        for user in ("abe", "ada"):
            reader = browser.new_context().new_page()
            reader.goto(served.login_link(user))
            for path in ("/", f"/batches/{batch}", f"/batches/{batch}?page=20",
                         f"/batches/{october}", "/history", "/payees"):
                reader.goto(served.url + path)
                assert not ids_in(reader.content(), grid), (user, path)
            reader.context.close()
        page.context.close()

        read_back(browser, served, grid, tmp_path)

        # on a 375 px phone the table Rows and a held payee's read-back scroll in their box
        phone = browser.new_context(viewport={"width": 375, "height": 740},
                                    is_mobile=True).new_page()
        phone.goto(served.login_link("mia"))
        for path in (f"/batches/{batch}", f"/batches/{batch}?finding=held", "/payees"):
            phone.goto(served.url + path)
            width = phone.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
            assert width[0] <= width[1], (path, width)
        phone.context.close()
    assert len(sandbox_payouts(desk.sandbox.url)) == HELD  # reviews pay nothing


def read_back(browser: Any, served: Served, grid: list[list[Any]], tmp_path: Path) -> None:
    """The maker's Payees page: each held payee before → after, the new account in full,
    a confirm form named by the payee; the auditor's page shows neither in full."""
    from playwright.sync_api import expect

    held = grid[0]
    name = str(held[column("recipient_name")])
    new = str(held[column("account_number")])
    old = new[:-1] + str((int(new[-1]) + 1) % 10)
    payee = str(held[column("company_id")] or held[column("ic_number")])

    page = browser.new_context(viewport={"width": 1200, "height": 900}).new_page()
    page.goto(served.login_link("mia"))
    page.goto(served.url + "/payees")
    changes = page.get_by_role("table", name=f"{name}: before and after")
    account = changes.get_by_role("row").filter(has_text="account")
    expect(account).to_contain_text(masked(old))
    expect(account).to_contain_text(new)  # the new account, whole, to read back
    expect(changes.get_by_role("row").filter(has_text="ID")).to_contain_text(payee)
    article = page.locator("article.held").filter(has_text=name)
    expect(article.locator("strong.account")).to_have_text(new)
    shot(article, "console-payees-read-back", tmp_path)
    page.get_by_label(f"Last 4 digits of {name}'s new account").fill(new[-4:])
    page.get_by_label(f"How {name} confirmed").select_option("phone")
    page.get_by_role("button", name=f"Confirm {name}'s new account").click()
    expect(page.get_by_role("status")).to_contain_text(f"account ending {new[-4:]}")
    page.context.close()

    auditor = browser.new_context().new_page()
    auditor.goto(served.login_link("ada"))
    auditor.goto(served.url + "/payees")
    text = auditor.content()
    assert new not in text and payee not in text and masked_id(payee) in text
    assert not re.search(r"Confirm .*'s new account", text)
    auditor.context.close()

