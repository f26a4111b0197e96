"""The month in a real browser: Debian's headless Chromium driven by Playwright, against
the console served over HTTP on loopback and a sandbox over real HTTP. One browser for all
of these tests, run one after the other; skipped, saying why, where Chromium is missing.

The page's stable names are what the tests use (and what the README documents): the file
input labelled "Payout sheet", the buttons "Check", "Review", "Approve", "Reject", "Pay",
the field "Short code" Approve asks for, the box "Yes, pay ..." Pay asks for, the table
"To pay", the link "Results workbook".

BATCHPAY_SCREENSHOTS=FOLDER keeps the screenshots the README shows.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import openpyxl
import pytest

from batchpay.console.app import create_app
from batchpay.console.guard import allowed_hosts
from batchpay.journal.store import Journal
from batchpay.serving import ServerThread
from tests.console.conftest import PASSWORD, SAMPLES, Desk
from tests.support.e2e import sandbox_payouts

pytestmark = pytest.mark.slow

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One Chromium for this module (Playwright's loop is closed with it, before any other
    test runs its own)."""
    if not CHROMIUM.is_file():
        pytest.skip("Debian's chromium is not installed (/usr/bin/chromium): "
                    "`apt-get install chromium` runs the browser tests")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("playwright is not installed: pip install '.[test]'")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield launched
        launched.close()


class Later:
    """An ASGI app given once the port is known (the Host check names the port)."""

    app: Any = None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await self.app(scope, receive, send)


@dataclass
class Served:
    url: str
    desk: Desk
    app: Any

    def login_link(self, user: str) -> str:
        return f"{self.url}/login/{self.app.state.console.sessions.login_link(user)}"


@pytest.fixture
def served(desk_factory) -> Iterator[Served]:  # type: ignore[no-untyped-def]
    # payouts settle after 3 s at the sandbox: long enough to see (and reload) the progress
    desk = desk_factory(require_approval=True, sandbox={"settle_seconds": 3})
    holder = Later()
    server = ServerThread(holder, what="console")
    port = int(server.url.rsplit(":", 1)[1])
    holder.app = create_app(desk.settings, allowed_hosts=allowed_hosts("127.0.0.1", port, None),
                            https=False)
    with server:
        yield Served(server.url, desk, holder.app)


def shot(target: Any, name: str, tmp_path: Path) -> None:
    """A PNG of a page section (a locator) or of a whole page."""
    path = tmp_path / f"{name}.png"
    if hasattr(target, "goto"):
        target.screenshot(path=str(path), full_page=True)
    else:
        target.screenshot(path=str(path))
    keep = os.environ.get("BATCHPAY_SCREENSHOTS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, Path(keep) / path.name)


def runs_of(served: Served, kind: str = "run") -> list[str]:
    with Journal(served.desk.settings.journal) as journal:
        return [r.id for r in journal.runs() if r.kind == kind]


def test_the_month_in_a_browser(browser: Any, served: Served, tmp_path: Path) -> None:
    from playwright.sync_api import expect

    maker = browser.new_context(accept_downloads=True, viewport={"width": 1200, "height": 900})
    page = maker.new_page()
    page.goto(served.login_link("max"))  # max makes the batch (and may approve others')
    sheet_input = page.get_by_label("Payout sheet", exact=True)

    # the mistakes sample: its errors, each with its sheet row, column and fix
    sheet_input.set_input_files(SAMPLES / "november-payouts-mistakes.xlsx")
    page.get_by_role("button", name="Check").click()
    errors = page.get_by_role("table", name="Errors")
    expect(errors).to_be_visible()
    expect(errors.get_by_role("row")).to_have_count(11)  # a header and ten rows
    first = errors.get_by_role("row").nth(1)
    expect(first).to_contain_text("3")
    expect(first).to_contain_text("account_number")
    expect(first).to_contain_text("format the column as Text")
    expect(page.get_by_role("button", name="Review")).to_have_count(0)
    shot(page.locator("#check"), "console-check-errors", tmp_path)

    # the corrected sample: checked, reviewed
    page.goto(served.url + "/")
    page.get_by_label("Payout sheet", exact=True).set_input_files(
        SAMPLES / "november-payouts-corrected.xlsx")
    page.get_by_role("button", name="Check").click()
    expect(page.get_by_text("Every row passed the check.")).to_be_visible()
    page.get_by_role("button", name="Review").click()
    costs = page.get_by_role("table", name="Cost per currency")
    expect(costs).to_contain_text("13,996,581.52")
    batch_url = page.url.split("#")[0]
    shot(page.locator("#review"), "console-review", tmp_path)

    expect(page.locator("#mode")).to_contain_text("Two-person approval on")
    code = re.search(r"short code ([0-9A-Z]{4}(?:-[0-9A-Z]{4}){4})",
                     page.locator("#review").inner_text())
    assert code, page.locator("#review").inner_text()

    # the maker's own approval is refused by the server, the right short code typed or not
    page.get_by_label("Short code").fill(code.group(1))
    page.get_by_role("button", name="Approve").click()
    expect(page.get_by_role("alert")).to_contain_text("cannot approve their own batch")

    # the approver signs in with a password and approves
    checker = browser.new_context()
    other = checker.new_page()
    other.goto(served.url + "/login")
    other.get_by_label("User name").fill("abe")
    other.get_by_label("Password").fill(PASSWORD)
    other.get_by_role("button", name="Sign in").click()
    other.goto(batch_url)
    other.get_by_label("Short code").fill("0000-0000-0000-0000-0000")  # not the plan's
    other.get_by_role("button", name="Approve").click()
    expect(other.get_by_role("alert")).to_contain_text("not this plan's")
    other.goto(batch_url)
    other.get_by_label("Short code").fill(code.group(1).lower())  # as read out, typed
    other.get_by_role("button", name="Approve").click()
    expect(other.get_by_text("Approved by abe")).to_be_visible()
    shot(other, "console-approved", tmp_path)
    checker.close()

    # pay: the totals once more, a box to tick; a double-click is one payment
    page.goto(batch_url)
    expect(page.get_by_role("table", name="To pay")).to_contain_text("13,996,581.52")
    page.get_by_role("checkbox", name=re.compile(r"^Yes, pay 13,996,581\.52 NGN")).check()
    page.get_by_role("button", name="Pay").dblclick()
    state = page.locator("#progress-state")
    expect(state).to_be_visible()
    expect(page.locator("#progress-rows tbody tr")).to_have_count(12, timeout=15_000)
    shot(page, "console-progress", tmp_path)

    # a reload during the payment shows the same payment, read from the journal
    before = page.locator("#progress-state").inner_text()
    page.reload()
    expect(page.locator("#progress-rows tbody tr")).to_have_count(12)
    after = page.locator("#progress-state").inner_text()
    run_id = re.search(r"run (\d{8}-\d{6}-[0-9a-f]{4})", after)
    assert run_id and run_id.group(1) in before + after, (before, after)
    assert "safe to close this page" in before or before.startswith("Final"), before

    # the page follows the events to the end, then offers the results
    expect(state).to_contain_text("Final", timeout=60_000)
    expect(page.locator("#progress-counts")).to_contain_text("COMPLETED")
    with page.expect_download() as download:
        page.get_by_role("link", name="Results workbook").click()
    workbook = tmp_path / "results.xlsx"
    download.value.save_as(workbook)
    shot(page.locator("#progress"), "console-paid", tmp_path)

    book = openpyxl.load_workbook(workbook, read_only=True)
    header, *rows = list(book["Results"].iter_rows(values_only=True))
    assert [r[header.index("status")] for r in rows] == ["COMPLETED"] * 12
    accounts = sorted(str(r[header.index("account_number")]) for r in rows)
    paid = sandbox_payouts(served.desk.sandbox.url)
    assert sorted(p["accountNumber"] for p in paid) == accounts  # one payout per row
    assert runs_of(served) == [run_id.group(1)]  # the double-click made one run
    maker.close()
