"""The auditor's Statement page in a real browser (Debian's headless Chromium driven by
Playwright, as in test_browser.py), on a phone's width: the link "Statement", the fields
"From" and "To", the button "Show statement", the table "Totals per currency" and the link
"Statement workbook", with no page wider than the screen."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import openpyxl
import pytest

from tests.console.conftest import SAMPLES
from tests.console.test_browser import Served, browser, served, shot  # noqa: F401 - fixtures
from tests.console.test_statement_page import FROM, TO
from tests.support.e2e import batchpay, sandbox_payouts

pytestmark = pytest.mark.slow

OVERFLOW = "document.documentElement.scrollWidth <= window.innerWidth"


def pay_the_sample(served: Served, tmp_path: Path) -> None:  # noqa: F811
    """The month paid by the command, on the console's journal (in a thread of its own:
    Playwright's loop runs in this one): 25 payouts at the sandbox."""
    with ThreadPoolExecutor(1) as other:
        paying = other.submit(batchpay, "run", str(SAMPLES / "november-payouts.xlsx"), "--out",
                              str(tmp_path / "results.xlsx"), "--wait", "10").result()
    assert paying.exit_code == 0, paying
    assert len(sandbox_payouts(served.desk.sandbox.url)) == 25


def statement_on_a_phone(browser: Any, served: Served) -> Any:  # noqa: F811
    """Ada's Statement page from FROM to TO, shown on a 375 px screen."""
    phone = browser.new_context(accept_downloads=True, viewport={"width": 375, "height": 800})
    page = phone.new_page()
    page.goto(served.login_link("ada"))
    page.get_by_role("link", name="Statement", exact=True).click()
    page.get_by_label("From").fill(FROM)
    page.get_by_label("To", exact=True).fill(TO)
    page.get_by_role("button", name="Show statement").click()
    return page


def test_the_auditor_shows_a_statement_on_a_phone(browser: Any, served: Served,  # noqa: F811
                                                   tmp_path: Path) -> None:
    from playwright.sync_api import expect

    pay_the_sample(served, tmp_path)
    with ThreadPoolExecutor(1) as other:  # the statement as the command prints it
        printed = other.submit(batchpay, "statement", "--from", FROM, "--to", TO, "--out",
                               str(tmp_path / "by-the-command.xlsx"),
                               env={"COLUMNS": "300"}).result()
    assert printed.exit_code == 0, printed

    page = statement_on_a_phone(browser, served)
    totals = page.get_by_role("table", name="Totals per currency")
    expect(totals).to_be_visible()
    line = totals.get_by_role("row").nth(1)
    expect(line).to_contain_text("NGN")
    cells = line.get_by_role("cell").all_inner_texts()
    assert cells[1] == "25"  # payouts
    # net debit, as the command prints it (the page names the currency after it)
    assert cells[4].endswith(" NGN") and cells[4][:-4] in " ".join(printed.stderr.split())
    assert page.evaluate(OVERFLOW), page.evaluate("document.documentElement.scrollWidth")
    shot(page, "console-statement", tmp_path)

    with page.expect_download() as download:
        page.get_by_role("link", name="Statement workbook").click()
    saved = tmp_path / download.value.suggested_filename
    download.value.save_as(saved)
    assert saved.name == f"statement-{FROM}-{TO}.xlsx"
    book = openpyxl.load_workbook(saved, read_only=True)
    rows = list(book["Statement"].iter_rows(values_only=True))
    book.close()
    assert len(rows) == 26 and rows[0][0] == "payout_ref"

    # History on the same phone: its period and its CSV link, nothing wider than the screen
    page.get_by_role("link", name="History and audit").click()
    expect(page.get_by_role("link", name="History CSV")).to_be_visible()
    assert page.evaluate(OVERFLOW), page.evaluate("document.documentElement.scrollWidth")
    page.context.close()
