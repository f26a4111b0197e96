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

import contextlib
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
from batchpay.notify import EVERY as NOTIFY_EVERY
from batchpay.serving import ServerThread
from tests.console.conftest import PASSWORD, SAMPLES, Desk
from tests.support.e2e import sandbox_payouts
from tests.support.receivers import SmtpServer
from tests.support.timing import until

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


@contextlib.contextmanager
def serving(desk: Desk, follow_seconds: float = 60.0,
            notify_seconds: float = NOTIFY_EVERY) -> Iterator[Served]:
    """The desk's console served over HTTP on loopback, its follower and its delivery of
    notifications on."""
    holder = Later()
    server = ServerThread(holder, what="console")
    port = int(server.url.rsplit(":", 1)[1])
    holder.app = create_app(desk.settings, allowed_hosts=allowed_hosts("127.0.0.1", port, None),
                            https=False, follow_seconds=follow_seconds,
                            notify_seconds=notify_seconds)
    with server:
        yield Served(server.url, desk, holder.app)


@pytest.fixture
def served(desk_factory) -> Iterator[Served]:  # type: ignore[no-untyped-def]
    # payouts settle after 3 s at the sandbox: long enough to see (and reload) the progress
    desk = desk_factory(require_approval=True, sandbox={"settle_seconds": 3})
    with serving(desk) as served:
        yield served


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


# --------------------------------------------------------------------------- the month, on


def pay_on(page: Any) -> None:
    """The maker ticks "Yes, pay ..." beside the totals and presses Pay."""
    page.get_by_role("checkbox", name=re.compile(r"^Yes, pay ")).check()
    page.get_by_role("button", name="Pay").click()


def approve_as_abe(served: Served, page: Any) -> None:
    """abe (an approver) approves the batch open on `page`, over the console's forms."""
    batch = page.url.split("/batches/")[1].split("#")[0]
    assert served.desk.client("abe").press(batch, "approve").status_code == 303


def test_continue_without_the_invalid_rows_in_a_browser(browser: Any, served: Served) -> None:
    from playwright.sync_api import expect

    page = browser.new_context(viewport={"width": 1200, "height": 900}).new_page()
    page.goto(served.login_link("mia"))
    page.get_by_label("Payout sheet", exact=True).set_input_files(
        SAMPLES / "november-payouts-mistakes.xlsx")
    page.get_by_role("button", name="Check").click()
    expect(page.get_by_role("table", name="Errors")).to_be_visible()
    page.get_by_role("button", name="Continue without the invalid rows").click()
    expect(page.get_by_text("Continuing without the 10 invalid row(s)")).to_be_visible()
    page.get_by_role("button", name="Review").click()
    expect(page.get_by_role("table", name="Rows that cannot be paid")
           .get_by_role("row")).to_have_count(11)
    approve_as_abe(served, page)
    page.reload()
    pay_on(page)
    expect(page.locator("#progress-state")).to_contain_text("Final", timeout=60_000)
    expect(page.get_by_role("link", name="Results workbook")).to_be_visible()
    assert len(sandbox_payouts(served.desk.sandbox.url)) == 2  # the two valid rows only
    page.context.close()


def test_the_approver_is_mailed_when_a_batch_made_in_a_browser_waits(
        browser: Any, desk_factory: Any) -> None:
    from playwright.sync_api import expect

    smtp = SmtpServer().start()
    try:
        desk = desk_factory(require_approval=True, own_settings=(
            f'notify = ["approver={smtp.url("cfo@acme.example")}"]\n'))
        with serving(desk, notify_seconds=0.5) as served:
            page = browser.new_context(viewport={"width": 1200, "height": 900}).new_page()
            page.goto(served.login_link("mia"))
            page.get_by_label("Payout sheet", exact=True).set_input_files(
                SAMPLES / "november-payouts.xlsx")
            page.get_by_role("button", name="Check").click()
            page.get_by_role("button", name="Review").click()
            expect(page.get_by_role("region", name="Approval")).to_contain_text(
                "Not approved yet", timeout=60_000)
            assert until(lambda: bool(smtp.inbox.to("cfo@acme.example")), seconds=30)
            page.context.close()
    finally:
        smtp.stop()
    [mail] = smtp.inbox.to("cfo@acme.example")
    text = smtp.inbox.text(mail)
    assert text.startswith("Batch waits for approval: november-payouts.xlsx"), text
    assert "mia reviewed november-payouts.xlsx" in text


def test_no_page_is_wider_than_a_375_px_screen(browser: Any, served: Served,
                                              tmp_path: Path) -> None:
    """Every page at 375 px: document.scrollWidth within the window (tables scroll inside
    their own box), the header's links still there."""
    from playwright.sync_api import expect

    context = browser.new_context(viewport={"width": 375, "height": 740}, is_mobile=True)
    page = context.new_page()
    seen: list[str] = []

    def fits(name: str) -> None:
        width = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
        assert width[0] <= width[1], (name, width)
        seen.append(name)

    page.goto(served.url + "/login")
    fits("login")
    page.goto(served.login_link("max"))
    fits("batches")
    expect(page.get_by_role("link", name="History and audit")).to_be_visible()
    page.get_by_label("Payout sheet", exact=True).set_input_files(
        SAMPLES / "november-payouts-mistakes.xlsx")
    page.get_by_role("button", name="Check").click()
    expect(page.get_by_role("table", name="Errors")).to_be_visible()
    fits("check with errors")
    shot(page, "console-375-check", tmp_path)
    page.goto(served.url + "/")
    page.get_by_label("Payout sheet", exact=True).set_input_files(
        SAMPLES / "november-payouts-corrected.xlsx")
    page.get_by_role("button", name="Check").click()
    page.get_by_role("button", name="Review").click()
    expect(page.get_by_role("table", name="Cost per currency")).to_be_visible()
    fits("review")
    page.get_by_role("button", name="Approve").click()  # the maker's own: refused
    fits("refused")
    page.go_back()
    approve_as_abe(served, page)
    page.reload()
    pay_on(page)
    expect(page.locator("#progress-rows tbody tr")).to_have_count(12, timeout=15_000)
    fits("payment")
    expect(page.locator("#progress-state")).to_contain_text("Final", timeout=60_000)
    fits("paid")
    shot(page, "console-375-paid", tmp_path)
    for path in ("/history", "/payees", "/batches/20260101-000000-abcdef"):
        page.goto(served.url + path)
        fits(path)
    assert len(seen) == 10
    context.close()


def test_a_refund_followed_and_the_row_repaid_reconcile_in_a_browser(
        browser: Any, desk_factory: Any, tmp_path: Path) -> None:
    """FAILED → REFUNDED (the console's follower, nobody pressing anything) → fixed in the
    results workbook → uploaded, reviewed, approved, paid: the statement's wallet movement
    minus its net debit is 0."""
    from playwright.sync_api import expect

    from tests.console.test_statuses import statement_gap, with_a_failing_row
    from tests.support.e2e import by_ref, edit_results

    desk = desk_factory(require_approval=True, sandbox={"settle_seconds": 0.5})
    with serving(desk, follow_seconds=0.5) as served:
        page = browser.new_context(accept_downloads=True).new_page()
        page.goto(served.login_link("mia"))
        page.get_by_label("Payout sheet", exact=True).set_input_files(
            with_a_failing_row(tmp_path))
        page.get_by_role("button", name="Check").click()
        page.get_by_role("button", name="Review").click()
        approve_as_abe(served, page)
        page.reload()
        pay_on(page)
        state = page.locator("#progress-state")
        expect(state).to_contain_text("Final", timeout=60_000)
        counts = page.locator("#progress-counts")
        for _ in range(60):  # the follower asks the service; the page shows it on reload
            if "REFUNDED" in counts.inner_text():
                break
            page.wait_for_timeout(500)
            page.reload()
        expect(counts).to_contain_text("REFUNDED")
        expect(page.get_by_role("button", name="Refresh statuses")).to_have_count(0)
        with page.expect_download() as download:
            page.get_by_role("link", name="Results workbook").click()
        results = tmp_path / "november-results.xlsx"
        download.value.save_as(results)
        assert by_ref(results)["NOV26-M01"]["status"] == "REFUNDED"

        edit_results(results, "NOV26-M01", remark=None, account_number="6222020000012420000")
        page.goto(served.url + "/")
        page.get_by_label("Payout sheet", exact=True).set_input_files(results)
        page.get_by_role("button", name="Check").click()
        page.get_by_role("button", name="Review").click()
        approve_as_abe(served, page)
        page.reload()
        pay_on(page)
        expect(state).to_contain_text("Final", timeout=60_000)
        expect(page.locator("#progress-counts")).to_contain_text("COMPLETED")
        page.context.close()
    paid = sandbox_payouts(desk.sandbox.url)
    assert len(paid) == 13 and [p["accountNumber"] for p in paid].count(
        "6222020000012420000") == 1
    gap = statement_gap(desk)
    assert gap["refunds"] == 1 and gap["NGN"][0] == 0, gap


def test_a_payment_killed_with_serve_is_resumed_once_in_a_browser(
        browser: Any, desk_factory: Any, tmp_path: Path) -> None:
    """`batchpay serve` killed mid-payment: the next `serve` says the batch stopped, its
    index lists it, Resume payment goes on, and the sandbox holds one payout per row."""
    import signal
    import subprocess
    import sys
    import time

    from playwright.sync_api import expect

    from batchpay.sheet.columns import COLUMN_NAMES
    from tests.benchmarks.bench_intake import make_rows
    from tests.support.e2e import set_wallet
    from tests.support.processes import journaled_attempts
    from tests.support.sheets import write_grid

    rows = 60
    desk = desk_factory(sandbox={"latency_ms": 60, "settle_seconds": 0.2})
    set_wallet(desk.sandbox.url, "NGN", "1000000000000")
    grid = make_rows(rows)
    at = list(COLUMN_NAMES).index("source_currency")
    for row in grid:
        row[at] = "NGN"
    sheet = write_grid(tmp_path / "payouts-60.xlsx", list(COLUMN_NAMES), grid)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}

    def serve(log: Path) -> tuple[subprocess.Popen[bytes], str]:
        with log.open("w") as err:
            # mia, a maker, pays: the owner only administers. The console has users with
            # passwords (a team's), so its link is in a file of its own, never printed
            proc = subprocess.Popen([sys.executable, "-m", "batchpay", "serve", "--port", "0",
                                     "--user", "mia"], env=env, stdout=err, stderr=err)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            said = log.read_text()
            found = re.search(r"Sign in as mia: .* is in (\S+), readable", said)
            if found and "Ctrl-C" in said:
                assert "/login/" not in said
                return proc, Path(found.group(1)).read_text().strip()
            time.sleep(0.05)
        raise AssertionError(log.read_text())

    first, link = serve(tmp_path / "serve-1.log")
    try:
        page = browser.new_context(accept_downloads=True).new_page()
        page.goto(link)
        page.get_by_label("Payout sheet", exact=True).set_input_files(sheet)
        page.get_by_role("button", name="Check").click()
        page.get_by_role("button", name="Review").click()
        expect(page.get_by_role("table", name="Cost per currency")).to_be_visible(
            timeout=60_000)
        pay_on(page)
        deadline = time.monotonic() + 60
        while journaled_attempts(desk.settings.journal) < rows // 4:
            assert time.monotonic() < deadline and first.poll() is None
            time.sleep(0.01)
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait(30)
    sent = len(sandbox_payouts(desk.sandbox.url))
    assert 0 < sent < rows, sent
    page.context.close()

    second, link = serve(tmp_path / "serve-2.log")
    try:
        assert "stopped before it ended" in (tmp_path / "serve-2.log").read_text()
        page = browser.new_context(accept_downloads=True).new_page()
        page.goto(link)
        stopped = page.get_by_role("region", name="Payments that stopped")
        expect(stopped).to_be_visible()
        stopped.get_by_role("link").first.click()
        expect(page.locator("#progress-state")).to_contain_text("Stopped")
        shot(page.locator("#progress"), "console-stopped", tmp_path)
        page.get_by_role("button", name="Resume payment").click()
        expect(page.locator("#progress-state")).to_contain_text("Final", timeout=120_000)
        expect(page.get_by_role("link", name="Results workbook")).to_be_visible()
        page.context.close()
    finally:
        second.terminate()
        second.wait(30)
    paid = sandbox_payouts(desk.sandbox.url)
    assert len(paid) == rows and len({p["quoteId"] for p in paid}) == rows
    assert len({p["accountNumber"] for p in paid}) == len({r[list(COLUMN_NAMES).index(
        "account_number")] for r in grid})
