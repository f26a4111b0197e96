"""Times and places on the console: with `time_zone = "Asia/Shanghai"` every time a page
shows is that zone's (eight hours after UTC) and names the zone, and every day it counts is
that zone's day (a held payee's last payout read back); a plan's expiry is shown
in the zone, so a plan that ends at local midnight ends on the next day; amounts carry
thousands separators and their currency and read back as the exact figures; the rate
says which way it counts ("NGN per CNY"). A month paid for real against the sandbox."""

from __future__ import annotations

import dataclasses
import re
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from batchpay.console.read_back import payees_page
from batchpay.engine.render import result_rows
from batchpay.journal.store import Journal
from tests.console.conftest import Desk, batch_id
from tests.console.test_month import wait_final
from tests.console.test_payees import changed_sheet
from tests.console.test_statement_page import cells
from tests.support.e2e import sandbox_payouts

pytestmark = pytest.mark.slow

ZONE = "Asia/Shanghai"
STORED = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z")
MONEY = re.compile(r"-?\d{1,3}(?:,\d{3})*\.\d\d (?P<currency>[A-Z]{3})")


def moment(at: str) -> datetime:
    """A stored time read here without the clock under test."""
    when = datetime.strptime(at, "%Y-%m-%dT%H:%M:%S.%fZ") if STORED.fullmatch(at) else (
        datetime.strptime(at, "%Y-%m-%dT%H:%M:%SZ"))
    return when.replace(tzinfo=UTC)


def in_shanghai(at: str, seconds: bool = False) -> str:
    shifted = moment(at).astimezone(ZoneInfo(ZONE))
    assert shifted.utcoffset() == timedelta(hours=8)
    return f"{shifted:%Y-%m-%d %H:%M}" + (f":{shifted:%S}" if seconds else "") + f" {ZONE}"


def in_utc(at: str) -> str:
    return f"{moment(at):%Y-%m-%d %H:%M}"


def money(text: str, currency: str) -> Decimal:
    """A money cell: separated in thousands, its currency named; the exact figure."""
    found = MONEY.fullmatch(text.strip())
    assert found and found["currency"] == currency, text
    return Decimal(text.strip().removesuffix(f" {currency}").replace(",", ""))


def test_a_month_in_shanghai_times_amounts_and_rates(desk_factory: Any, tmp_path: Path) -> None:
    desk: Desk = desk_factory(time_zone=ZONE, require_approval=True)
    maker, approver, auditor = desk.client("mia"), desk.client("abe"), desk.client("ada")
    batch = batch_id(maker.upload("november-payouts.xlsx"))

    def meta() -> dict[str, Any]:
        return dict(desk.app.state.console.batches.get(batch).meta)

    uploaded = meta()["uploaded_at"]
    assert STORED.fullmatch(uploaded)  # the clock's one stored form
    index = maker.http.get("/").text
    assert in_shanghai(uploaded) in index and in_utc(uploaded) not in index

    # ---- the review: when it was quoted, when its plan expires, its money and its rate
    assert maker.post(f"/batches/{batch}/review").status_code == 303
    review = meta()["review"]
    with Journal(desk.settings.journal) as journal:
        run = journal.run(review["run_id"])
        assert run is not None
        quoted_at = run.started_at
        quoted = [r for r in result_rows(journal, run) if r.source_currency == "NGN"]
    page = maker.http.get(f"/batches/{batch}").text
    assert f"uploaded by <strong>mia</strong> on\n  {in_shanghai(uploaded)}" in page
    assert f"Quoted {in_shanghai(quoted_at)}" in page and in_utc(quoted_at) not in page
    assert f"expires {in_shanghai(review['expires_at'])}" in page
    summary = approver.http.get(f"/batches/{batch}").text  # the approver's reading of it
    assert f"expires {in_shanghai(review['expires_at'], seconds=True)}" in summary
    assert re.search(r"NGN: 25 row\(s\), amounts [\d,]+\.\d\d NGN, quoted debit "
                     r"[\d,]+\.\d\d NGN", summary)
    header, ngn = cells(page, "Cost per currency")[:2]
    cost = dict(zip(header, ngn, strict=True))
    assert cost["currency"] == "NGN" and cost["rows"] == "25"
    assert money(cost["amount"], "NGN") == sum((r.amount or 0 for r in quoted), Decimal(0))
    assert money(cost["debit incl. fees"], "NGN") == (
        money(cost["amount"], "NGN") + money(cost["fees"], "NGN"))
    assert re.fullmatch(r"[\d,.]+( – [\d,.]+)? NGN per CNY", cost["rate"]), cost["rate"]
    delivered = money(cost["recipients get"], "CNY")
    lowest = Decimal(cost["rate"].split()[0].replace(",", ""))
    # NGN per CNY: the amount over what is delivered, near the rate (the sandbox drifts 3 %)
    assert abs(money(cost["amount"], "NGN") / delivered / lowest - 1) < Decimal("0.05")
    assert money(cost["ceiling"], "NGN") >= money(cost["debit incl. fees"], "NGN")

    # a plan that ends at Shanghai's midnight ends on the next day there
    desk.app.state.console.batches.update(batch, review={**review,
                                                         "expires_at": "2026-11-27T16:00:00Z"})
    assert "expires 2026-11-28 00:00 Asia/Shanghai" in maker.http.get(f"/batches/{batch}").text
    desk.app.state.console.batches.update(batch, review=review)

    # ---- approved and paid
    assert approver.press(batch, "approve").status_code == 303
    approved = meta()["approvals"][0]["at"]
    assert STORED.fullmatch(approved)
    page = maker.http.get(f"/batches/{batch}").text
    assert f"Approved by <strong>abe</strong> on {in_shanghai(approved)}" in page
    label = re.search(r"Yes, pay (.+?) \(plan", page)
    assert label and money(label.group(1), "NGN") == money(cost["debit incl. fees"], "NGN")
    assert maker.press(batch, "pay").status_code == 303
    assert dict(wait_final(maker, batch)["counts"]) == {"COMPLETED": 25}
    assert len(sandbox_payouts(desk.sandbox.url)) == 25
    paid_at = meta()["paid_at"]

    # ---- History: runs, batches, approvals and money in the zone and with currencies
    history = auditor.http.get("/history").text
    runs = {r[0]: r for r in cells(history, "Runs")[1:]}
    paying = next(r for r in runs.values() if r[1] == "run")
    with Journal(desk.settings.journal) as journal:
        started = next(r.started_at for r in journal.runs() if r.id == paying[0])
    assert paying[2] == in_shanghai(started)
    batches = {r[0]: r for r in cells(history, "Batches")[1:]}
    assert f"abe ({in_shanghai(approved)})" in batches[batch][4]
    assert f"mia ({in_shanghai(paid_at)})" in batches[batch][6]
    debited = re.search(r"debited (\S+ NGN) \(25 payouts\)", batches[batch][-1])
    assert debited and money(debited.group(1), "NGN") >= money(cost["amount"], "NGN")

    # ---- the Payees page: the last payout's day in the zone, the money with its currency
    payees = maker.http.get("/payees").text
    register = re.search(r'<h2 id="register-h">Register</h2>(.*?)</table>', payees, re.S)
    assert register
    today = moment(started).astimezone(ZoneInfo(ZONE)).date().isoformat()
    assert today in register.group(1)
    assert MONEY.search(register.group(1))

    # ---- a held payee read back: its last payout on Shanghai's day (the next day from 16:00 UTC)
    sheet, payee = changed_sheet(tmp_path, "december.xlsx", "DEC26-001")
    held = batch_id(maker.upload(sheet))
    assert maker.post(f"/batches/{held}/review").status_code == 303
    with Journal(desk.settings.journal) as journal:
        ref, at = next((r, a) for r, details, _, _, a in journal.sent_since("", ["COMPLETED"])
                       if payee in details)
    paid_on = moment(at).astimezone(ZoneInfo(ZONE)).date().isoformat()
    assert f"(last paid {paid_on}, {ref})" in maker.http.get("/payees").text
    # whatever the hour now: in a zone where that moment is another day than in UTC (UTC-12
    # before noon, UTC+14 after), the read-back counts that zone's day
    far = "Etc/GMT+12" if moment(at).hour < 12 else "Etc/GMT-14"
    far_day = moment(at).astimezone(ZoneInfo(far)).date()
    assert far_day != moment(at).date()
    read_back = payees_page(dataclasses.replace(desk.settings, time_zone=far), True)["held"]
    assert [h.last_paid for h in read_back] == [f"{far_day.isoformat()}, {ref}"]

    # ---- the owner's Users page: when each user was made
    users = desk.client("owner").http.get("/users").text
    mia = desk.app.state.console.accounts.get("mia")
    assert mia is not None and STORED.fullmatch(mia.created_at)
    assert in_shanghai(mia.created_at) in users


def test_records_written_before_the_one_clock_are_shown_in_the_zone(desk_factory: Any) -> None:
    """A batch recorded with `+00:00` times (as the console wrote them before) reads back
    as the same moments, shown in the zone."""
    desk: Desk = desk_factory(time_zone=ZONE)
    maker = desk.client("mia")
    batch = batch_id(maker.upload("november-payouts.xlsx"))
    desk.app.state.console.batches.update(batch, uploaded_at="2026-11-27T07:13:00+00:00")
    assert "2026-11-27 15:13 Asia/Shanghai" in maker.http.get("/").text
    assert "2026-11-27 15:13 Asia/Shanghai" in maker.http.get(f"/batches/{batch}").text
