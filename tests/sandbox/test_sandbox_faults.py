"""The sandbox's injected faults over real HTTP: latency, 500s, dropped answers, 429s."""

from __future__ import annotations

import asyncio
import time
from decimal import Decimal
from typing import Any

import httpx
import pytest

from batchpay.errors import UsageError
from batchpay.sandbox.config import SandboxConfig
from batchpay.sandbox.faults import parse_rate_limit
from tests.support.sandbox_calls import api, held_payouts, new_quote, payout_request, quote_request

BANKS = {"country": "NG", "currency": "NGN"}


def test_latency_delays_every_request_without_blocking_the_others(sandbox_factory: Any) -> None:
    # the bounds are the latency itself, not a guess at how fast this machine is: a busy
    # machine slows every request, but never makes an unlatent one take the latency
    running = sandbox_factory(latency_ms=500)

    async def eight_at_once() -> list[float]:
        async with httpx.AsyncClient(base_url=running.url, headers={"X-API-KEY": running.api_key}) as client:
            async def one() -> float:
                started = time.perf_counter()
                assert (await client.get("/v1/bank", params=BANKS)).status_code == 200
                return time.perf_counter() - started

            started = time.perf_counter()
            each = await asyncio.gather(*(one() for _ in range(8)))
            return [*each, time.perf_counter() - started]

    *each, together = asyncio.run(eight_at_once())
    assert min(each) >= 0.5
    assert together < 2.0  # 8 × 500 ms one after another would take 4 s
    started = time.perf_counter()
    httpx.get(f"{running.url}/_sandbox/stats")
    assert time.perf_counter() - started < 0.5  # no latency on the extensions


def test_latency_is_the_response_time_and_the_work_is_done_on_arrival(
        sandbox_factory: Any) -> None:
    """A payout request is handled when it arrives and answered `latency` later: a client
    that gives up waiting leaves a payout that exists (in doubt, as with a slow service)."""
    running = sandbox_factory(latency_ms=400)
    quote = running.state.create_quote("BANK_TRANSFER", Decimal(100000), "NGN", "NG", "CNY", "CN")
    with httpx.Client(base_url=running.url, headers={"X-API-KEY": running.api_key},
                      timeout=httpx.Timeout(5, read=0.15)) as impatient, \
            pytest.raises(httpx.ReadTimeout):
        impatient.post("/v2/payout", json=payout_request(quote["id"]))
    assert [p["quoteId"] for p in held_payouts(running)] == [quote["id"]]
    started = time.perf_counter()
    assert api(running).get("/v1/bank", params=BANKS).status_code == 200
    assert time.perf_counter() - started >= 0.4  # the answer still waits its latency


def test_error_rate_one_answers_500_and_does_nothing(sandbox_factory: Any) -> None:
    running = sandbox_factory(error_rate=1)
    quote = running.state.create_quote("BANK_TRANSFER", Decimal(100000), "NGN", "NG", "CNY", "CN")
    client = api(running)
    answer = client.post("/v2/payout", json=payout_request(quote["id"]))
    assert (answer.status_code, answer.json()) == (500, {"message": "Internal server error", "status": "failed"})
    assert answer.headers["X-Batchpay-Sandbox"] == "1"
    assert client.post("/v1/quote", json=quote_request()).status_code == 500
    assert held_payouts(running) == []
    assert running.state.wallets("NGN")[0]["balance"] == 10_000_000_000
    assert httpx.get(f"{running.url}/_sandbox/stats").json()["requests"] == {
        "POST /v2/payout 500": 1, "POST /v1/quote 500": 1,
    }


def test_error_rate_is_a_share_and_repeats_with_the_seed(sandbox_factory: Any) -> None:
    outcomes = []
    for _ in range(2):
        running = sandbox_factory(error_rate=0.3, seed=42)
        client = api(running)
        outcomes.append([client.get("/v1/bank", params=BANKS).status_code for _ in range(60)])
    assert outcomes[0] == outcomes[1]
    assert 5 <= outcomes[0].count(500) <= 35


def test_a_dropped_payout_is_committed_but_never_answered(sandbox_factory: Any) -> None:
    running = sandbox_factory(drop_rate=1)
    client = api(running)
    quote = new_quote(client)  # quotes are never dropped
    body = payout_request(quote["id"])
    with pytest.raises(httpx.RemoteProtocolError):
        client.post("/v2/payout", json=body)
    held = held_payouts(running)
    assert [payout["quoteId"] for payout in held] == [quote["id"]]
    balance = client.get("/v1/wallet", params={"currency": "NGN"}).json(parse_float=Decimal)["data"][0]["balance"]
    assert balance == 10_000_000_000 - Decimal(str(quote["summary"]["total"]))
    listed = client.get("/v1/transaction", params={"state": "PENDING", "page": 0, "size": 100}).json()["data"]
    assert [record["quote"]["id"] for record in listed] == [quote["id"]]
    resent = client.post("/v2/payout", json=body)  # the identical resend: the quote is used
    assert resent.status_code == 422
    requests = httpx.get(f"{running.url}/_sandbox/stats").json()["requests"]
    assert requests["POST /v2/payout dropped"] == 1 and requests["POST /v2/payout 422"] == 1


def test_a_refused_payout_is_answered_even_at_drop_rate_one(sandbox_factory: Any) -> None:
    running = sandbox_factory(drop_rate=1)
    answer = api(running).post("/v2/payout", json=payout_request("no-such-quote"))
    assert answer.status_code == 422


def test_rate_limit_answers_429_with_retry_after_until_the_window_has_room(sandbox_factory: Any) -> None:
    running = sandbox_factory(rate_limit="3/s,100/min")
    client = api(running)
    assert [client.get("/v1/bank", params=BANKS).status_code for _ in range(3)] == [200] * 3
    refused = client.get("/v1/bank", params=BANKS)
    assert refused.status_code == 429
    assert refused.json() == {"message": "API rate limit exceeded", "status": "failed"}
    assert refused.headers["Retry-After"] == "1" and refused.headers["X-Batchpay-Sandbox"] == "1"
    time.sleep(int(refused.headers["Retry-After"]))
    assert client.get("/v1/bank", params=BANKS).status_code == 200
    for _ in range(10):
        httpx.get(f"{running.url}/_sandbox/stats")  # not limited, not counted
    requests = httpx.get(f"{running.url}/_sandbox/stats").json()["requests"]
    assert requests == {"GET /v1/bank 200": 4, "GET /v1/bank 429": 1}


def test_retry_after_counts_to_when_the_oldest_request_leaves_a_long_window(sandbox_factory: Any) -> None:
    running = sandbox_factory(rate_limit="2/min")
    client = api(running)
    client.get("/v1/bank", params=BANKS)
    client.get("/v1/bank", params=BANKS)
    retry_after = int(client.get("/v1/bank", params=BANKS).headers["Retry-After"])
    assert 58 <= retry_after <= 60


def test_rate_limit_texts() -> None:
    windows = parse_rate_limit("100/min,1000/hour,10000/day,5/2s,3/second")
    assert [(w.limit, w.seconds) for w in windows] == [(100, 60), (1000, 3600), (10000, 86400), (5, 2), (3, 1)]
    for text in ("100", "100/fortnight", "0/min", "x/min"):
        with pytest.raises(ValueError):
            parse_rate_limit(text)


@pytest.mark.parametrize(
    "options",
    [{"error_rate": 1.5}, {"drop_rate": -0.1}, {"rate_limit": "lots"}, {"quote_ttl": 0},
     {"webhook_url": "ftp://x"}, {"port": 70000}, {"settle_seconds": -1}],
)
def test_bad_settings_are_usage_errors(options: dict[str, Any]) -> None:
    with pytest.raises(UsageError):
        SandboxConfig(**options)
