"""The auditor's Statement page and History's money, over HTTP with real sessions, after a
real payment through the console against a sandbox over real HTTP: the page's totals are
`batchpay statement`'s for the same period (and the sandbox's payouts), the Statement
workbook's cells are the command's, History's amounts and CSV read back, and who may read
the statement. A journal edited outside batchpay is refused on the page, never a traceback."""

from __future__ import annotations

import csv
import io
import re
import sqlite3
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import openpyxl
import pytest

from batchpay.console.statement import Span, safe_cell
from tests.console.conftest import Desk, Signed, batch_id
from tests.console.test_month import wait_final
from tests.support.e2e import batchpay, sandbox_payouts

pytestmark = pytest.mark.slow

TODAY = datetime.now(UTC).date()
# the period around the payment (a day either side: a test that runs over midnight)
FROM, TO = (TODAY - timedelta(days=1)).isoformat(), (TODAY + timedelta(days=1)).isoformat()
COLUMNS = ("currency", "payouts", "debited", "refunded", "net debit", "fees", "delivered",
           "in doubt", "wallet before", "wallet after")


@pytest.fixture
def paid(desk: Desk) -> tuple[Desk, str, str]:
    """The 25-row sample reviewed and paid by the maker (no approval asked): the desk,
    the batch and the run that paid it."""
    maker = desk.client("mia")
    batch = batch_id(maker.upload("november-payouts.xlsx"))
    assert maker.post(f"/batches/{batch}/review").status_code == 303
    assert maker.press(batch, "pay").status_code == 303
    state = wait_final(maker, batch)
    assert dict(state["counts"]) == {"COMPLETED": 25}, state
    return desk, batch, str(state["run_id"])


def cells(html: str, name: str) -> list[list[str]]:
    """The rows of the table with this accessible name, each cell's text."""
    found = re.search(rf'<table aria-label="{name}">(.*?)</table>', html, re.S)
    assert found, html[:2000]
    return [[_text(c) for c in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", row, re.S)]
            for row in re.findall(r"<tr>(.*?)</tr>", found.group(1), re.S)]


def _text(cell: str) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", cell).split())


def number(text: Any) -> Decimal:
    """A figure read back exactly: a workbook's number, or a page's money cell
    (`1,234.50 NGN`: thousands separated, its currency named)."""
    if text in (None, ""):
        return Decimal(0)
    return Decimal(re.sub(r" [A-Z]{3}$", "", str(text)).replace(",", ""))


def sheet(data: bytes | Path, name: str) -> list[tuple[Any, ...]]:
    book = openpyxl.load_workbook(io.BytesIO(data) if isinstance(data, bytes) else data,
                                  read_only=True)
    rows = [tuple(r) for r in book[name].iter_rows(values_only=True)]
    book.close()
    return rows


def test_the_page_shows_the_commands_totals_and_its_workbook(
        paid: tuple[Desk, str, str], tmp_path: Path) -> None:
    desk, _, run_id = paid
    auditor = desk.client("ada")
    home = auditor.http.get("/").text
    assert '<a href="/statement">Statement</a>' in home
    empty = auditor.http.get("/statement")
    assert empty.status_code == 200 and "Show statement" in empty.text
    assert 'name="from"' in empty.text and "Statement workbook" not in empty.text

    page = auditor.http.get(f"/statement?from={FROM}&to={TO}")
    assert page.status_code == 200, page.text
    header, *lines = cells(page.text, "Totals per currency")
    assert tuple(header) == COLUMNS
    shown = {line[0]: dict(zip(COLUMNS, line, strict=True)) for line in lines}
    assert list(shown) == ["NGN"]
    ngn = shown["NGN"]

    # the command, same journal, same period: its workbook and its printed figures
    out = tmp_path / "by-the-command.xlsx"
    made = batchpay("statement", "--from", FROM, "--to", TO, "--out", str(out),
                    env={"COLUMNS": "300"})  # the printed table on one line per currency
    assert made.exit_code == 0, made
    header_row, *total_rows = sheet(out, "Totals")
    totals = dict(zip(header_row, total_rows[0], strict=False))
    assert totals["source_currency"] == "NGN"
    for column, field in (("debited", "debited"), ("refunded", "refunded"),
                          ("net debit", "net_debit"), ("fees", "fees"),
                          ("wallet before", "wallet_before"), ("wallet after", "wallet_after")):
        assert number(ngn[column]) == number(totals[field]), column
    assert int(ngn["payouts"]) == totals["payouts"] == 25
    assert ngn["delivered"] == totals["delivered"]
    assert ngn["in doubt"] == "0"
    printed = " ".join(made.stderr.split())
    assert "25 payout_ref(s), 0 refund(s)" in printed and "25 payout_ref(s)" in page.text
    for column in ("debited", "net debit", "fees"):  # the page names the currency per figure
        assert ngn[column].endswith(" NGN") and ngn[column][:-4] in printed, column
    # and the service: 25 payouts, the recipients' money the page says
    payouts = sandbox_payouts(desk.sandbox.url)
    assert len(payouts) == 25
    delivered = sum((Decimal(str(p["targetAmount"])) for p in payouts), Decimal(0))
    assert number(ngn["delivered"]) == delivered and ngn["delivered"].endswith(" CNY")
    assert number(ngn["wallet before"]) - number(ngn["wallet after"]) == number(ngn["net debit"])

    # the workbook the link gives is the command's, cell for cell
    link = re.search(r'href="(/statement/workbook\?[^"]+)"', page.text)
    assert link and "Statement workbook" in page.text
    download = auditor.http.get(link.group(1).replace("&amp;", "&"))
    assert download.status_code == 200
    assert f"statement-{FROM}-{TO}.xlsx" in download.headers["content-disposition"]
    for name in ("Statement", "Refunds", "Totals"):
        assert sheet(download.content, name) == sheet(out, name), name
    about = dict(r[:2] for r in sheet(download.content, "About")[1:])
    assert about["journal chain head"] == dict(r[:2] for r in sheet(out, "About")[1:])[
        "journal chain head"]
    assert f"run {run_id}" in about
    assert len(sheet(download.content, "Statement")) == 26  # a header and 25 payout_refs


def test_a_period_without_payments_and_bad_dates(paid: tuple[Desk, str, str]) -> None:
    desk, _, _ = paid
    auditor = desk.client("ada")
    before = auditor.http.get("/statement?from=2020-01-01&to=2020-01-31")
    assert before.status_code == 200
    assert "No payout in this period." in before.text and "0 payout_ref(s)" in before.text
    bad = auditor.http.get("/statement?from=2026-13-01&to=2026-12-31")
    assert bad.status_code == 409 and "YYYY-MM-DD" in bad.text
    backwards = auditor.http.get(f"/statement?from={TO}&to={FROM}")
    assert backwards.status_code == 409 and "is before From" in backwards.text
    one = auditor.http.get(f"/statement?from={FROM}")
    assert one.status_code == 409 and "both From and To" in one.text


def tamper(desk: Desk) -> None:
    """Change every payout's amount in the journal's table behind its chain's back."""
    db = sqlite3.connect(desk.settings.journal)
    db.execute("UPDATE payouts SET amount = '1.00'")
    db.commit()
    db.close()


def test_a_tampered_journal_is_refused_on_the_page(paid: tuple[Desk, str, str]) -> None:
    desk, _, _ = paid
    tamper(desk)
    auditor = desk.client("ada")
    for path in ("/statement", "/statement/workbook"):
        refused = auditor.http.get(f"{path}?from={FROM}&to={TO}")
        assert refused.status_code == 409, path
        assert "changed outside batchpay" in refused.text and "No statement" in refused.text
        assert "Traceback" not in refused.text and 'role="alert"' in refused.text


@pytest.mark.parametrize(("user", "may"), [("ada", True), ("abe", True), ("max", True),
                                           ("owner", True), ("mia", False)])
def test_auditors_and_approvers_read_the_statement_a_maker_alone_does_not(
        desk: Desk, user: str, may: bool) -> None:
    signed = desk.client(user)
    assert ('<a href="/statement">Statement</a>' in signed.http.get("/").text) is may
    for path in (f"/statement?from={FROM}&to={TO}", f"/statement/workbook?from={FROM}&to={TO}"):
        answer = signed.http.get(path)
        if may:
            # no journal yet: the page says so, the workbook is refused saying why
            assert answer.status_code in (200, 409), answer.text
            assert "No journal yet" in answer.text or "no journal yet" in answer.text
        else:
            assert answer.status_code == 403 and "auditors, approvers" in answer.text
    signed.http.cookies.clear()
    assert signed.http.get("/statement", follow_redirects=False).status_code == 303


def history_csv(signed: Signed, query: str = "") -> list[dict[str, str]]:
    answer = signed.http.get(f"/history.csv{query}")
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/csv")
    assert "attachment" in answer.headers["content-disposition"]
    return list(csv.DictReader(io.StringIO(answer.content.decode("utf-8-sig"))))


def test_history_shows_amounts_per_batch_and_run_filters_and_exports(
        paid: tuple[Desk, str, str]) -> None:
    desk, batch, run_id = paid
    auditor = desk.client("ada")
    statement_page = auditor.http.get(f"/statement?from={FROM}&to={TO}").text
    ngn = dict(zip(COLUMNS, cells(statement_page, "Totals per currency")[1], strict=True))

    page = auditor.http.get("/history").text
    runs = {r[0]: r for r in cells(page, "Runs")[1:]}
    amounts = runs[run_id][-1]
    assert f"debited {ngn['net debit']} (25 payouts)" in amounts
    assert f"fees {ngn['fees']}" in amounts and f"delivered {ngn['delivered']}" in amounts
    batches = {r[0]: r for r in cells(page, "Batches")[1:]}
    assert f"debited {ngn['net debit']} (25 payouts)" in batches[batch][-1]
    assert "NGN: planned " in batches[batch][-1]
    assert "History CSV" in page

    lines = history_csv(auditor)
    run_line = next(r for r in lines if r["record"] == "run" and r["id"] == run_id)
    assert run_line["currency"] == "NGN" and run_line["payouts"] == "25"
    assert Decimal(run_line["debited"]) == number(ngn["net debit"])
    assert Decimal(run_line["fees"]) == number(ngn["fees"])
    assert Decimal(run_line["refunded"]) == 0
    batch_line = next(r for r in lines if r["record"] == "batch" and r["id"] == batch)
    assert batch_line["sheet"] == "november-payouts.xlsx" and batch_line["by"] == "mia"
    assert Decimal(batch_line["debited"]) == number(ngn["net debit"])
    assert Decimal(batch_line["planned_debit"]) > 0 and batch_line["stage_or_outcome"] == "paid"
    # the review's dry run is a run too, with no money
    assert any(r["record"] == "run" and r["kind"] == "dry-run" and r["debited"] == ""
               for r in lines)

    # a period without the month: nothing listed, on the page and in the CSV
    old = auditor.http.get("/history?from=2020-01-01&to=2020-01-31").text
    assert run_id not in old and batch not in old
    assert 'href="/history.csv?from=2020-01-01&amp;to=2020-01-31"' in old
    assert history_csv(auditor, "?from=2020-01-01&to=2020-01-31") == []
    assert {r["id"] for r in history_csv(auditor, f"?from={FROM}&to={TO}")} >= {run_id, batch}
    named = auditor.http.get(f"/history.csv?from={FROM}&to={TO}").headers["content-disposition"]
    assert f'filename="history-{FROM}-{TO}.csv"' in named
    assert auditor.http.get("/history?from=31-12-2026").status_code == 409


def test_history_csv_keeps_formula_like_text_as_text(desk: Desk) -> None:
    maker = desk.client("mia")
    assert maker.upload("november-payouts.xlsx").status_code == 303
    for name in ("=HYPERLINK(1).csv", "+1.csv", "-2.csv", "@SUM(A1).csv"):
        maker.post("/upload", files={"sheet": (name, b"payout_ref\n")})
    sheets = {r["sheet"] for r in history_csv(desk.client("ada")) if r["record"] == "batch"}
    assert {"'=HYPERLINK(1).csv", "'+1.csv", "'-2.csv", "'@SUM(A1).csv",
            "november-payouts.xlsx"} <= sheets
    assert not any(s.startswith(("=", "+", "-", "@")) for s in sheets)


def test_a_cell_is_quoted_only_when_a_spreadsheet_would_run_it() -> None:
    assert [safe_cell(v) for v in ("=1+1", "+44 20", "-x", "@A1", "\tA", "a=b", "", None)] == [
        "'=1+1", "'+44 20", "'-x", "'@A1", "'\tA", "a=b", "", ""]
    assert safe_cell(Decimal("-12.50")) == "-12.50" and safe_cell(3) == "3"


def test_historys_days_are_those_of_the_time_zone() -> None:
    # 16:00 UTC on the 30th is already 1 December in Shanghai
    november = Span(date(2026, 11, 1), date(2026, 11, 30), "Asia/Shanghai")
    assert november.holds("2026-11-30T15:59:59.000000Z")
    assert not november.holds("2026-11-30T16:00:00+00:00")
    assert november.holds("2026-10-31T16:00:00Z") and not november.holds("2026-10-31T15:59:59Z")
    assert Span(None, date(2026, 11, 30), "UTC").holds("2020-01-01T00:00:00Z")
    assert Span().holds(None) and not november.holds(None)
