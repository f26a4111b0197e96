"""Reading the payout list state by state, in whichever order the service lists: the pages
asked for, what counts as complete, and the window's holds. A small fake service
(httpx.MockTransport) lists payouts newest first, oldest first or in no order."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from batchpay.engine.payout_list import EVERY_STATE, PAID_STATES, read_list
from batchpay.engine.service_ledger import read_service_ledger
from batchpay.engine.tracking import scan
from batchpay.journal.store import Journal
from batchpay.provider.client import PayoutClient
from batchpay.provider.errors import PayoutListAbsent

NOW = datetime(2026, 3, 31, 12, tzinfo=UTC)


def payout(n: int, state: str, *, days_ago: float, remark: str = "") -> dict[str, Any]:
    created = (NOW - timedelta(days=days_ago)).isoformat(timespec="milliseconds")
    return {"id": f"p-{state}-{n}", "referenceNumber": f"REF{n:010d}", "state": state,
            "remark": remark, "created": created.replace("+00:00", "Z"),
            "quote": {"id": f"q-{state}-{n}", "source": {"amount": 100000, "currency": "NGN"},
                      "target": {"amount": 434.78, "currency": "CNY"}},
            "recipient": {"account": {"accountNumber": f"62220{n:014d}"}}}


class FakeList:
    """The list of each state in a given order, counting the pages asked for."""

    def __init__(self, by_state: dict[str, list[dict[str, Any]]], order: str) -> None:
        self.by_state = by_state
        self.order = order
        self.asked: list[tuple[str, int]] = []

    def handler(self, request: httpx.Request) -> httpx.Response:
        params = request.url.params
        if any(name not in params for name in ("state", "page", "size")):
            return httpx.Response(400, json={"message": "state is required", "status": "failed"})
        state, page, size = params["state"], int(params["page"]), int(params["size"])
        self.asked.append((state, page))
        items = sorted(self.by_state.get(state, []), key=lambda p: p["created"],
                       reverse=self.order == "newest")
        if self.order == "shuffled":  # no order: oldest, newest, next oldest, next newest...
            ends = zip(items[:len(items) // 2], reversed(items[len(items) // 2:]), strict=False)
            items = [p for pair in ends for p in pair] + (
                [items[len(items) // 2]] if len(items) % 2 else [])
        total = -(-len(items) // size)
        return httpx.Response(200, json={"message": "ok", "status": "success", "page": page,
                                         "size": size, "totalPages": total,
                                         "data": items[page * size:(page + 1) * size]})

    def client(self) -> PayoutClient:
        return PayoutClient("http://fake", "k", transport=httpx.MockTransport(self.handler))


def run(scenario: Callable[[PayoutClient], Any], fake: FakeList) -> Any:
    async def go() -> Any:
        async with fake.client() as client:
            return await scenario(client)
    return asyncio.run(go())


def history(days: int, per_day: int, state: str = "COMPLETED") -> list[dict[str, Any]]:
    """`per_day` payouts a day over `days` days, the newest first made 0.01 days ago."""
    count = days * per_day
    return [payout(n, state, days_ago=0.01 + n / per_day) for n in range(count)]


@pytest.mark.parametrize(("order", "expected"), [
    # 10 pages; the window (30 of 100 days) is the newest 3 pages and a page reaching past it
    ("newest", [0, 1, 2, 3]),
    ("oldest", [0, 9, 8, 7, 6]),
    ("shuffled", list(range(10))),  # the order cannot be told: every page
])
def test_the_window_is_read_from_its_newest_end_whatever_the_order(
        order: str, expected: list[int]) -> None:
    completed = history(100, 10)  # 1,000 payouts over 100 days
    completed[0]["remark"] = "Invoice ref:R-0001"  # the newest one carries the row's ref
    fake = FakeList({"COMPLETED": completed}, order)

    with Journal(":memory:") as journal:
        journal.bind_service("embedded")
        ledger = run(lambda c: read_service_ledger(c, journal, days=30, repeat_days=0,
                                                   max_pages=200, now=NOW), fake)
    assert [page for state, page in fake.asked if state == "COMPLETED"] == expected
    assert [state for state, _ in fake.asked][:1] == ["PENDING"]  # PENDING read first
    assert ledger.complete and ledger.unread == []
    assert [o.payout_id for o in ledger.by_ref["R-0001"]] == [completed[0]["id"]]


@pytest.mark.parametrize("order", ["newest", "oldest", "shuffled"])
def test_a_window_cut_by_the_cap_is_incomplete_and_names_the_state(order: str) -> None:
    fake = FakeList({"PENDING": history(1, 30, "PENDING"), "COMPLETED": history(100, 10)},
                    order)
    with Journal(":memory:") as journal:
        journal.bind_service("embedded")
        ledger = run(lambda c: read_service_ledger(c, journal, days=30, repeat_days=0,
                                                   max_pages=3, now=NOW), fake)
    assert len(fake.asked) == 3
    assert not ledger.complete and ledger.unread == ["COMPLETED"]
    assert "COMPLETED payouts since 2026-03-01" in ledger.unchecked_message("R-1")


def test_a_scan_reads_every_state_and_proves_absence_only_when_all_were_read() -> None:
    fake = FakeList({state: history(1, 150, state) for state in EVERY_STATE}, "oldest")
    found = run(lambda c: scan(c, quote_ids=["nowhere"], max_pages=200), fake)
    assert found.complete and found.by_quote_id == {}
    # two pages each, the first read again at the end: 3 per state
    assert [s for s, _ in fake.asked] == [s for s in EVERY_STATE for _ in range(3)]

    fake.asked.clear()
    capped = run(lambda c: scan(c, quote_ids=["nowhere"], max_pages=11), fake)
    assert not capped.complete and capped.pages == 11

    fake.asked.clear()
    wanted = fake.by_state["FAILED"][-1]["quote"]["id"]
    early = run(lambda c: scan(c, quote_ids=[wanted], max_pages=200), fake)
    assert early.complete and wanted in early.by_quote_id
    assert [s for s, _ in fake.asked].count("COMPLETED") == 3 and "REFUNDED" not in {
        s for s, _ in fake.asked}


def test_the_paid_states_are_pending_and_completed_and_a_404_is_the_list_absent() -> None:
    assert PAID_STATES == ("PENDING", "COMPLETED")

    def absent(request: httpx.Request) -> httpx.Response:
        return httpx.Response(404, json={"message": "Not found", "status": "failed"})

    async def go() -> None:
        transport = httpx.MockTransport(absent)
        async with PayoutClient("http://fake", "k", transport=transport) as client:
            await read_list(client, EVERY_STATE, max_pages=10, on_page=lambda s, i: None)

    with pytest.raises(PayoutListAbsent) as caught:
        asyncio.run(go())
    assert caught.value.status == 404 and "GET /v1/transaction" in caught.value.message
