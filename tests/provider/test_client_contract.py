"""Contract tests: the client against the real sandbox over real HTTP.

The sandbox is an independent implementation of the service (it imports nothing from
``batchpay.provider``), so the two agreeing on every answer here proves the contract, and
the sandbox's own inspection list (``/_sandbox/payouts``) says what really happened.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Coroutine
from decimal import Decimal
from typing import Any, TypeVar

import httpx
import pytest
import stamina

from batchpay.provider.client import PayoutClient, RetryBudget, compact
from batchpay.provider.errors import (
    AuthError,
    InvalidQuote,
    RequestRejected,
    ResponseLost,
    ServiceError,
)
from batchpay.provider.models import Quote
from batchpay.sandbox.server import RunningSandbox

T = TypeVar("T")
# the fixtures `sandbox` and `sandbox_factory` (tests/conftest.py) serve it for real


def client_for(sandbox: RunningSandbox, api_key: str | None = None,
               attempts: int = 1) -> PayoutClient:
    return PayoutClient(sandbox.url, api_key or sandbox.api_key,
                        retry=RetryBudget(attempts=attempts))


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


def payouts_at_the_sandbox(sandbox: RunningSandbox) -> list[dict[str, Any]]:
    answer = httpx.get(f"{sandbox.url}/_sandbox/payouts")
    answer.raise_for_status()
    return list(answer.json()["data"])


def payout_body(quote: Quote, n: int = 1) -> dict[str, Any]:
    return compact({
        "quoteId": quote.id,
        "reason": "Supplier invoice",
        "remark": None,
        "recipient": {
            "name": "张三", "type": "INDIVIDUAL", "paymentChannel": "BANK_TRANSFER",
            "currency": "CNY", "country": "CN", "itemCategory": "",
            "account": {"accountNumber": f"62220212345678{n:04d}", "bankName": "中国工商银行",
                        "bankCity": "上海"},
        },
    })


async def quote(client: PayoutClient, amount: str = "100000.00") -> Quote:
    return await client.create_quote(source_amount=Decimal(amount), source_currency="NGN",
                                     source_country="NG")


def test_banks_ng_ngn(sandbox: RunningSandbox) -> None:
    async def scenario() -> tuple[list[Any], bool | None]:
        async with client_for(sandbox) as client:
            return await client.banks("NG", "NGN"), client.is_sandbox

    banks, is_sandbox = run(scenario())
    assert is_sandbox is True
    assert len(banks) >= 10
    assert all(bank.bank_name and (bank.sort_code or "").isdigit() for bank in banks)


def test_banks_refusals(sandbox: RunningSandbox) -> None:
    async def scenario() -> None:
        async with client_for(sandbox, api_key="not-the-key") as client:
            with pytest.raises(AuthError) as auth:
                await client.banks("NG", "NGN")
            assert auth.value.status == 401 and auth.value.service_message
        async with client_for(sandbox) as client:
            with pytest.raises(RequestRejected) as missing:
                await client.banks("", "NGN")  # an empty parameter is omitted, hence missing
            assert missing.value.status == 400 and missing.value.definite

    run(scenario())


def test_quote_then_payout_then_read_back(sandbox: RunningSandbox) -> None:
    async def scenario() -> tuple[Quote, Any, Any]:
        async with client_for(sandbox) as client:
            q = await quote(client, "43478.25")
            payout = await client.submit_payout(payout_body(q))
            return q, payout, await client.get_payout(payout.id)

    q, payout, read_back = run(scenario())
    assert q.source_amount.as_tuple() == Decimal("43478.25").as_tuple()
    assert q.total == q.source_amount + q.fee
    assert isinstance(q.target_amount, Decimal) and q.target_amount > 0
    assert payout.quote_id == q.id and payout.state == "PENDING"
    assert re.fullmatch(r"[A-Z0-9]{13}", payout.reference_number or "")
    assert read_back.id == payout.id and read_back.quote_id == q.id
    held = payouts_at_the_sandbox(sandbox)
    assert [(p["id"], p["quoteId"]) for p in held] == [(payout.id, q.id)]
    assert Decimal(str(held[0]["sourceAmount"])) == Decimal("43478.25")


def test_a_used_quote_is_refused_with_422(sandbox: RunningSandbox) -> None:
    async def scenario() -> InvalidQuote:
        async with client_for(sandbox) as client:
            q = await quote(client)
            await client.submit_payout(payout_body(q))
            with pytest.raises(InvalidQuote) as caught:
                await client.submit_payout(payout_body(q))
            return caught.value

    error = run(scenario())
    assert error.status == 422 and error.definite
    assert len(payouts_at_the_sandbox(sandbox)) == 1


def test_list_payouts_pages_through_everything(sandbox: RunningSandbox) -> None:
    async def scenario() -> tuple[set[str], list[Any]]:
        async with client_for(sandbox) as client:
            made = set()
            for n in range(5):
                q = await quote(client)
                made.add((await client.submit_payout(payout_body(q, n))).id)
            pages = []
            page = 0
            while True:
                pages.append(await client.list_payouts(state="PENDING", page=page, size=2))
                if pages[-1].last or page > 10:
                    break
                page += 1
            return made, pages

    made, pages = run(scenario())
    assert pages[0].total_pages == 3
    assert [len(p.items) for p in pages] == [2, 2, 1]
    assert {item.id for p in pages for item in p.items} == made


def test_wallets_hold_decimal_balances(sandbox: RunningSandbox) -> None:
    async def scenario() -> list[Any]:
        async with client_for(sandbox) as client:
            return await client.wallets("NGN")

    wallets = run(scenario())
    assert [w.currency for w in wallets] == ["NGN"]
    assert isinstance(wallets[0].balance, Decimal)


# --- faults: what the client concludes, checked against what the sandbox holds ----------

def test_a_dropped_payout_answer_is_ambiguous_and_not_resent(sandbox_factory: Any) -> None:
    running = sandbox_factory(drop_rate=1.0)

    async def scenario() -> tuple[str, ResponseLost]:
        async with client_for(running, attempts=6) as client:
            q = await quote(client)
            with pytest.raises(ResponseLost) as caught:
                await client.submit_payout(payout_body(q))
            return q.id, caught.value

    quote_id, error = run(scenario())
    assert error.ambiguous
    # the sandbox committed it although no answer came: exactly one, never a second
    assert [p["quoteId"] for p in payouts_at_the_sandbox(running)] == [quote_id]


def test_5xx_on_quotes_is_definite_and_retried_within_the_budget(sandbox_factory: Any) -> None:
    running = sandbox_factory(error_rate=1.0)

    async def scenario() -> ServiceError:
        async with client_for(running, attempts=3) as client:
            with pytest.raises(ServiceError) as caught:
                await quote(client)
            return caught.value

    with stamina.set_testing(True, attempts=100, cap=True):  # keep the budget, skip the waits
        error = run(scenario())
    assert error.definite and error.status == 500
    stats = httpx.get(f"{running.url}/_sandbox/stats").json()["requests"]
    assert stats.get("POST /v1/quote 500") == 3
