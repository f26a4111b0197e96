"""The provider client against small configurable fake handlers (httpx.MockTransport).

Each test scripts the service's answers (statuses, bodies, transport exceptions) and then
checks the error class, its definite/ambiguous flag, and how many requests the fake saw:
the count is what proves that a payout in doubt is never sent twice.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import traceback
from collections.abc import Callable, Coroutine, Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from email.utils import format_datetime
from typing import Any, TypeVar

import httpx
import pytest
import stamina

from batchpay.files import fingerprint
from batchpay.provider import jsonnum
from batchpay.provider.client import MAX_CONCURRENCY, PayoutClient, RetryBudget, compact
from batchpay.provider.endpoints import Headers, Paths
from batchpay.provider.errors import (
    AuthError,
    ConnectFailed,
    InsufficientBalance,
    InvalidQuote,
    ProviderError,
    QuoteExpired,
    RateLimited,
    RequestRejected,
    ResponseLost,
    ServiceError,
    UnexpectedResponse,
    error_from_response,
    service_message,
)
from batchpay.provider.models import Bank, Payout, PayoutPage, Quote, Wallet
from batchpay.provider.pacing import Pacer
from batchpay.settings.model import Settings

T = TypeVar("T")
Step = Callable[[httpx.Request], httpx.Response]

BASE_URL = "http://payouts.test"
SANDBOX_HEADER = {"X-Batchpay-Sandbox": "1"}

# literal bytes, so that the test does not depend on the encoder it is testing
QUOTE_JSON = (
    b'{"id":"6f1c2a9e-0000-4000-8000-000000000001","paymentChannel":"BANK_TRANSFER",'
    b'"source":{"currency":"NGN","country":"NG","amount":100000},'
    b'"target":{"currency":"CNY","country":"CN","amount":434.78},'
    b'"rate":230,"fee":{"amount":1500.50},"summary":{"total":101500.50},'
    b'"rules":[{"category":"LIMIT","appliedCurrency":"CNY",'
    b'"transaction":{"minimum":10,"maximum":500000}}],'
    b'"settlementTime":"T+1","expiresInSeconds":600}'
)
PAYOUT_JSON = (
    b'{"id":"p-1","referenceNumber":"ABCDEF1234567","state":"INITIATED","type":"SEND",'
    b'"reason":"salary","remark":"march","quote":{"id":"q-1"},'
    b'"created":"2026-03-01T10:00:00Z","processed":null}'
)


def envelope(data_json: bytes) -> bytes:
    return b'{"message":"ok","status":"success","data":' + data_json + b"}"


def ok(data: Any = None, *, raw: bytes | None = None, headers: dict[str, str] | None = None,
       top: dict[str, Any] | None = None) -> Step:
    """A 200 success envelope around ``data`` (or around the literal JSON ``raw``)."""
    def answer(request: httpx.Request) -> httpx.Response:
        if raw is not None:
            content = envelope(raw)
        else:
            content = jsonnum.dumps({"message": "ok", "status": "success", "data": data,
                                     **(top or {})})
        return httpx.Response(200, content=content, headers=headers or {})
    return answer


def status(code: int, *, text: str | None = None, json_body: Any = None,
           headers: dict[str, str] | None = None) -> Step:
    """An answer with ``code`` and a body given as plain text or as JSON."""
    def answer(request: httpx.Request) -> httpx.Response:
        if json_body is not None:
            return httpx.Response(code, content=jsonnum.dumps(json_body), headers=headers or {})
        return httpx.Response(code, content=(text or "").encode(), headers=headers or {})
    return answer


def fails(exc_type: type[httpx.TransportError], text: str = "boom") -> Step:
    """The transport raises ``exc_type`` (a fresh exception on each request)."""
    def answer(request: httpx.Request) -> httpx.Response:
        raise exc_type(text, request=request)
    return answer


class FakeService:
    """Answers requests with the given steps in order; the last step repeats forever."""

    def __init__(self, *steps: Step) -> None:
        assert steps
        self.steps = list(steps)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        request.read()
        self.requests.append(request)
        step = self.steps.pop(0) if len(self.steps) > 1 else self.steps[0]
        return step(request)

    @property
    def bodies(self) -> list[bytes]:
        return [request.content for request in self.requests]

    def client(self, *, api_key: str = "test-key", attempts: int = 6, seconds: float = 60.0,
               **kwargs: Any) -> PayoutClient:
        return PayoutClient(BASE_URL, api_key, transport=httpx.MockTransport(self),
                            retry=RetryBudget(attempts=attempts, seconds=seconds,
                                              wait_initial=0.01, wait_max=0.05),
                            **kwargs)


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


async def call(client: PayoutClient, what: str) -> Any:
    """One request of the kind named: a read, a quote or a payout."""
    async with client:
        if what == "read":
            return await client.get_payout("p-1")
        if what == "quote":
            from decimal import Decimal

            return await client.create_quote(source_amount=Decimal("100000"),
                                             source_currency="NGN", source_country="NG")
        if what == "payout":
            return await client.submit_payout({"quoteId": "q-1", "reason": "salary"})
        raise ValueError(what)


@pytest.fixture(autouse=True)
def no_waiting() -> Iterator[None]:
    """Retries keep their attempt budget but do not sleep (stamina's test mode)."""
    with stamina.set_testing(True, attempts=1000, cap=True):
        yield


# --- one mapping from status to error ------------------------------------------------

@pytest.mark.parametrize("kind", ["read", "quote", "payout"])
@pytest.mark.parametrize(
    ("answer", "error_class", "service_text"),
    [
        (status(401, json_body="Invalid API key"), AuthError, "Invalid API key"),
        (status(403, json_body={"message": "Forbidden", "status": "failed"}), AuthError,
         "Forbidden"),
        (status(400, json_body={"message": "Quotes only last for 10 minutes",
                                "status": "failed"}), QuoteExpired,
         "Quotes only last for 10 minutes"),
        (status(422, json_body={"message": "Invalid quote ID provided", "status": "failed"}),
         InvalidQuote, "Invalid quote ID provided"),
        (status(400, json_body={"message": "Insufficient wallet balance for transaction",
                                "status": "error"}), InsufficientBalance,
         "Insufficient wallet balance for transaction"),
        (status(400, text="Invalid Bank Sortcode"), RequestRejected, "Invalid Bank Sortcode"),
        (status(404, json_body={"message": "Not found", "status": "failed"}), RequestRejected,
         "Not found"),
    ],
)
def test_refusals_are_definite_whatever_the_request(kind: str, answer: Step,
                                                     error_class: type[ProviderError],
                                                     service_text: str) -> None:
    fake = FakeService(answer)
    with pytest.raises(error_class) as caught:
        run(call(fake.client(), kind))
    error = caught.value
    assert type(error) is error_class
    assert error.definite is True
    assert error.service_message == service_text
    assert service_text in str(error)
    assert error.status == answer(httpx.Request("GET", BASE_URL)).status_code
    assert len(fake.requests) == 1, "a refusal is never retried"


@pytest.mark.parametrize(("kind", "definite", "retried"),
                         [("read", True, True), ("quote", True, True), ("payout", False, False)])
@pytest.mark.parametrize("code", [500, 502, 503])
def test_5xx_is_ambiguous_only_for_the_payout_post(kind: str, definite: bool, retried: bool,
                                                   code: int) -> None:
    fake = FakeService(status(code, json_body={"message": "Internal error", "status": "error"}))
    with pytest.raises(ServiceError) as caught:
        run(call(fake.client(attempts=3), kind))
    assert caught.value.definite is definite
    assert caught.value.status == code
    assert len(fake.requests) == (3 if retried else 1)


def test_error_carries_method_and_path_template_never_the_url() -> None:
    fake = FakeService(status(500, text="oops"))

    async def scenario() -> None:
        async with fake.client(attempts=1) as client:
            await client.get_payout("secret-id-42")

    with pytest.raises(ServiceError) as caught:
        run(scenario())
    error = caught.value
    assert (error.method, error.path) == ("GET", "/v1/transaction/{id}")
    assert error.request == "GET /v1/transaction/{id}"
    assert "secret-id-42" not in str(error) and BASE_URL not in str(error)


def test_429_maps_to_rate_limited_with_retry_after_seconds_or_date() -> None:
    request = httpx.Request("GET", BASE_URL)
    in_seconds = status(429, json_body={"message": "API rate limit exceeded"},
                        headers={"Retry-After": "7"})(request)
    error = error_from_response(in_seconds, "GET", "/v1/bank")
    assert isinstance(error, RateLimited) and error.definite and error.retry_after == 7

    later = datetime.now(UTC) + timedelta(seconds=90)
    as_date = status(429, headers={"Retry-After": format_datetime(later, usegmt=True)})(request)
    error = error_from_response(as_date, "POST", "/v2/payout")
    assert isinstance(error, RateLimited) and error.definite
    assert error.retry_after is not None and 80 <= error.retry_after <= 91

    without = error_from_response(status(429)(request), "GET", "/v1/bank")
    assert isinstance(without, RateLimited) and without.retry_after is None


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (status(400, json_body="Missing required parameter: country"),
         "Missing required parameter: country"),
        (status(400, text="Missing required parameter: currency"),
         "Missing required parameter: currency"),
        (status(400, json_body={"message": "Invalid country or currency ISO code",
                                "status": "failed"}), "Invalid country or currency ISO code"),
        (status(502, text="<html><body><h1>502 Bad Gateway</h1>" + "x" * 5000 + "</body></html>"),
         "Bad Gateway"),
        (status(503, text=""), "Service Unavailable"),
    ],
)
def test_service_message_from_every_body_shape(answer: Step, expected: str) -> None:
    response = answer(httpx.Request("GET", BASE_URL))
    assert service_message(response) == expected


def test_payout_path_is_inferred_when_not_told() -> None:
    response = status(500)(httpx.Request("POST", BASE_URL))
    assert error_from_response(response, "POST", "/v2/payout").definite is False
    assert error_from_response(response, "POST", "/v1/quote").definite is True
    assert error_from_response(response, "GET", "/v2/payout").definite is True
    assert error_from_response(response, "POST", "/custom", payout_request=True).definite is False


def test_auth_hints_say_what_to_check() -> None:
    request = httpx.Request("GET", BASE_URL)
    unauthorised = error_from_response(status(401, json_body="Invalid API key")(request),
                                       "GET", "/v1/bank")
    forbidden = error_from_response(status(403, text="Forbidden")(request), "GET", "/v1/bank")
    assert "BATCHPAY_API_KEY" in (unauthorised.hint or "")
    assert "allow-list" in (forbidden.hint or "")


# --- transport failures: never sent vs sent and lost ----------------------------------

@pytest.mark.parametrize("kind", ["read", "quote", "payout"])
@pytest.mark.parametrize("exc_type", [httpx.ConnectError, httpx.ConnectTimeout,
                                      httpx.PoolTimeout])
def test_connect_failures_are_definite_for_every_request(kind: str, exc_type: type) -> None:
    fake = FakeService(fails(exc_type))
    with pytest.raises(ConnectFailed) as caught:
        run(call(fake.client(attempts=2), kind))
    assert caught.value.definite is True
    assert caught.value.status is None
    assert len(fake.requests) == 2, "never sent, so retried even for a payout"


@pytest.mark.parametrize(("kind", "definite", "requests"),
                         [("read", True, 3), ("quote", True, 3), ("payout", False, 1)])
@pytest.mark.parametrize("exc_type", [httpx.ReadTimeout, httpx.WriteTimeout,
                                      httpx.RemoteProtocolError, httpx.ReadError,
                                      httpx.WriteError, httpx.NetworkError])
def test_lost_answers_are_ambiguous_only_for_the_payout_post(kind: str, definite: bool,
                                                             requests: int,
                                                             exc_type: type) -> None:
    fake = FakeService(fails(exc_type, "Server disconnected without sending a response."))
    with pytest.raises(ResponseLost) as caught:
        run(call(fake.client(attempts=3), kind))
    assert caught.value.definite is definite
    assert len(fake.requests) == requests


@pytest.mark.parametrize(("kind", "definite"),
                         [("read", True), ("quote", True), ("payout", False)])
@pytest.mark.parametrize("body", [b"<html>ok</html>", b'{"status":"success"}', b"[1,2]",
                                  envelope(b'{"unexpected":"shape"}')])
def test_a_200_that_cannot_be_read(kind: str, definite: bool, body: bytes) -> None:
    fake = FakeService(lambda request: httpx.Response(200, content=body))
    with pytest.raises(UnexpectedResponse) as caught:
        run(call(fake.client(), kind))
    assert caught.value.definite is definite
    assert len(fake.requests) == 1, "an unreadable answer is never retried"


def test_a_redirect_is_not_followed_and_a_payout_stays_in_doubt() -> None:
    fake = FakeService(lambda request: httpx.Response(307, headers={"Location": "/elsewhere"}))
    with pytest.raises(UnexpectedResponse) as caught:
        run(call(fake.client(), "payout"))
    assert caught.value.definite is False
    assert len(fake.requests) == 1


# --- retries ---------------------------------------------------------------------------

def test_connect_errors_are_retried_then_succeed() -> None:
    fake = FakeService(fails(httpx.ConnectError), fails(httpx.ConnectTimeout),
                       ok(raw=PAYOUT_JSON))
    payout = run(call(fake.client(), "payout"))
    assert payout.id == "p-1"
    assert len(fake.requests) == 3
    assert len(set(fake.bodies)) == 1


def test_429_waits_for_retry_after_and_resends_the_identical_payout() -> None:
    fake = FakeService(status(429, json_body={"message": "API rate limit exceeded",
                                              "status": "failed"},
                              headers={"Retry-After": "0.4"}),
                       ok(raw=PAYOUT_JSON))
    body = {"quoteId": "q-1", "reason": "salary",
            "recipient": {"name": "张三", "account": {"accountNumber": "6222021234567890"}}}

    async def scenario() -> tuple[float, Any]:
        async with fake.client() as client:
            started = time.monotonic()
            payout = await client.submit_payout(body)
            return time.monotonic() - started, payout

    with stamina.set_testing(False):  # really wait, to measure the wait
        elapsed, payout = run(scenario())
    assert payout.reference_number == "ABCDEF1234567"
    assert elapsed >= 0.4
    assert len(fake.requests) == 2
    assert fake.bodies[0] == fake.bodies[1] == jsonnum.dumps(body)


def test_429_without_retry_after_backs_off_and_resends() -> None:
    fake = FakeService(status(429), status(429), ok(raw=QUOTE_JSON))
    quote = run(call(fake.client(), "quote"))
    assert quote.target_amount == Decimal("434.78")
    assert len(fake.requests) == 3


def test_429_asking_to_wait_beyond_the_budget_is_raised_at_once() -> None:
    fake = FakeService(status(429, headers={"Retry-After": "120"}), ok(raw=QUOTE_JSON))
    with pytest.raises(RateLimited) as caught:
        run(call(fake.client(seconds=60), "quote"))
    assert caught.value.retry_after == 120
    assert len(fake.requests) == 1


def test_5xx_on_a_read_is_retried_within_the_budget_then_succeeds() -> None:
    fake = FakeService(status(503), status(500), ok(raw=PAYOUT_JSON))
    payout = run(call(fake.client(), "read"))
    assert payout.state == "PENDING"
    assert len(fake.requests) == 3


def test_5xx_on_a_payout_is_never_retried() -> None:
    fake = FakeService(status(500, json_body={"message": "Internal error", "status": "error"}),
                       ok(raw=PAYOUT_JSON))
    with pytest.raises(ServiceError) as caught:
        run(call(fake.client(attempts=6), "payout"))
    assert caught.value.ambiguous
    assert "sync" in (caught.value.hint or "")
    assert len(fake.requests) == 1


def test_retries_stop_at_the_attempt_budget() -> None:
    fake = FakeService(status(503))
    with pytest.raises(ServiceError):
        run(call(fake.client(attempts=4), "read"))
    assert len(fake.requests) == 4


def test_a_first_answer_needs_no_retry_loop_and_a_first_failure_counts_in_the_budget(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import batchpay.provider.client as client_module

    fake = FakeService(ok(raw=PAYOUT_JSON))
    with monkeypatch.context() as patched:
        patched.setattr(client_module.stamina, "retry_context", None)  # would fail if used
        assert run(call(fake.client(), "read")).state == "PENDING"
    failing = FakeService(status(503))
    with pytest.raises(ServiceError):
        run(call(failing.client(attempts=1), "read"))
    assert len(failing.requests) == 1


def test_retries_stop_at_the_time_budget() -> None:
    fake = FakeService(fails(httpx.ConnectError))

    async def scenario() -> None:
        async with fake.client(attempts=10_000, seconds=0.3) as client:
            await client.banks("NG", "NGN")

    started = time.monotonic()
    with stamina.set_testing(False), pytest.raises(ConnectFailed):
        run(scenario())
    assert time.monotonic() - started < 1.5
    assert 2 <= len(fake.requests) < 100


def test_auth_errors_are_never_retried() -> None:
    fake = FakeService(status(401, json_body="Invalid API key"))
    with pytest.raises(AuthError):
        run(call(fake.client(), "read"))
    assert len(fake.requests) == 1


def test_requests_sent_counts_every_attempt() -> None:
    fake = FakeService(status(503), ok(raw=PAYOUT_JSON))

    async def scenario() -> int:
        async with fake.client() as client:
            await client.get_payout("p-1")
            await client.get_payout("p-1")
            return client.requests_sent

    assert run(scenario()) == 3


# --- what goes out, what comes back ----------------------------------------------------

def test_quote_amount_travels_as_the_exact_json_number() -> None:
    fake = FakeService(ok(raw=QUOTE_JSON))

    async def scenario() -> Quote:
        async with fake.client() as client:
            return await client.create_quote(source_amount=Decimal("434.78"),
                                             source_currency="NGN", source_country="NG")

    quote = run(scenario())
    sent = fake.requests[0]
    assert b'"amount":434.78' in sent.content
    assert sent.headers["Content-Type"] == "application/json"
    assert json.loads(sent.content, parse_float=Decimal)["source"] == {
        "amount": Decimal("434.78"), "country": "NG", "currency": "NGN"}
    # and back: the service's 434.78 is exactly Decimal("434.78"), not a float's neighbour
    assert quote.target_amount.as_tuple() == Decimal("434.78").as_tuple()
    assert quote.fee == Decimal("1500.50") and str(quote.fee) == "1500.50"
    assert quote.source_amount == Decimal(100000) and isinstance(quote.source_amount, Decimal)
    assert quote.rate == Decimal(230) and isinstance(quote.rate, Decimal)
    assert quote.total == Decimal("101500.50")
    assert quote.expires_in_seconds == 600
    assert quote.rules[0]["transaction"]["maximum"] == 500000
    assert quote.raw["settlementTime"] == "T+1"


def test_float_amount_is_refused_before_anything_is_sent() -> None:
    fake = FakeService(ok(raw=QUOTE_JSON))

    async def scenario() -> None:
        async with fake.client() as client:
            await client.create_quote(source_amount=434.78,  # type: ignore[arg-type]
                                      source_currency="NGN", source_country="NG")

    with pytest.raises(TypeError):
        run(scenario())
    assert fake.requests == []


def test_submit_payout_sends_exactly_the_given_body() -> None:
    fake = FakeService(ok(raw=PAYOUT_JSON))
    body = {"quoteId": "q-1", "reason": "货款", "recipient": {"name": "上海某某有限公司",
            "type": "BUSINESS", "account": {"accountNumber": "6222021234567890123",
                                            "bankName": "中国工商银行"}}}

    async def scenario() -> Payout:
        async with fake.client() as client:
            return await client.submit_payout(body)

    payout = run(scenario())
    assert fake.requests[0].method == "POST"
    assert fake.requests[0].url.path == "/v2/payout"
    assert fake.requests[0].content == jsonnum.dumps(body)
    assert payout.state == "PENDING"  # INITIATED, normalized
    assert payout.quote_id == "q-1"
    assert payout.created == "2026-03-01T10:00:00Z" and payout.processed is None


def test_optional_fields_without_value_are_omitted() -> None:
    body = compact({"quoteId": "q-1", "remark": "", "reason": "salary",
                    "recipient": {"name": "Li", "icNumber": None, "itemCategory": "",
                                  "account": {"accountNumber": "123456789", "sortCode": None,
                                              "bankCity": ""}},
                    "extra": {"empty": None}})
    assert body == {"quoteId": "q-1", "reason": "salary",
                    "recipient": {"name": "Li", "account": {"accountNumber": "123456789"}}}
    assert b"null" not in jsonnum.dumps(body)

    fake = FakeService(ok(data=[], top={"page": 0, "size": 50, "totalPages": 0}))

    async def scenario() -> PayoutPage:
        async with fake.client() as client:
            return await client.list_payouts(state="PENDING", page=0, size=50)

    page = run(scenario())
    assert dict(fake.requests[0].url.params) == {"state": "PENDING", "page": "0", "size": "50"}
    assert page.items == [] and page.last


def test_list_payouts_reads_paging_beside_data() -> None:
    items = [{"id": f"p-{n}", "referenceNumber": f"REF{n:010d}", "state": "completed",
              "quote": {"id": f"q-{n}"}} for n in range(3)]
    fake = FakeService(ok(data=items, top={"page": 1, "size": 3, "totalPages": 4}))

    async def scenario() -> PayoutPage:
        async with fake.client() as client:
            return await client.list_payouts(state="COMPLETED", page=1, size=3)

    page = run(scenario())
    assert dict(fake.requests[0].url.params) == {"state": "COMPLETED", "page": "1", "size": "3"}
    assert (page.page, page.size, page.total_pages, page.last) == (1, 3, 4, False)
    assert [p.quote_id for p in page.items] == ["q-0", "q-1", "q-2"]
    assert {p.state for p in page.items} == {"COMPLETED"}


def test_banks_and_wallets_are_typed() -> None:
    banks = [{"bankName": "Access Bank", "sortCode": "044", "branchCode": None,
              "country": None}]
    fake = FakeService(ok(data=banks),
                       ok(raw=b'[{"id":"w1","balance":1000000.00,"currency":"NGN",'
                              b'"country":"NG"},{"id":"w2","balance":25,"currency":"USD",'
                              b'"country":"US"}]'))

    async def scenario() -> tuple[list[Bank], list[Wallet]]:
        async with fake.client() as client:
            return await client.banks("NG", "NGN"), await client.wallets("NGN")

    found, wallets = run(scenario())
    assert found == [Bank("Access Bank", "044", None, None)]
    assert dict(fake.requests[0].url.params) == {"country": "NG", "currency": "NGN"}
    assert fake.requests[0].url.path == "/v1/bank"
    assert dict(fake.requests[1].url.params) == {"currency": "NGN"}
    assert wallets[0].balance == Decimal("1000000.00") and str(wallets[0].balance) == "1000000.00"
    assert wallets[1].balance == Decimal(25) and isinstance(wallets[1].balance, Decimal)


def test_ids_cannot_escape_their_path_segment() -> None:
    fake = FakeService(ok(raw=QUOTE_JSON))

    async def scenario() -> None:
        async with fake.client() as client:
            await client.get_quote("../v2/payout?x=1")

    run(scenario())
    assert fake.requests[0].url.raw_path == b"/v1/quote/..%2Fv2%2Fpayout%3Fx%3D1"


def test_paths_and_header_names_come_from_settings() -> None:
    fake = FakeService(ok(data=[]))
    settings = Settings(base_url=BASE_URL, api_key="k-1",
                        paths=Paths(bank="/api/banks"), headers=Headers(api_key="Api-Key"),
                        concurrency=500, max_rps=2.5, rate_limit="7/min")

    async def scenario() -> PayoutClient:
        async with PayoutClient.from_settings(settings, transport=httpx.MockTransport(fake)) \
                as client:
            await client.banks("NG", "NGN")
            return client

    client = run(scenario())
    assert fake.requests[0].url.path == "/api/banks"
    assert fake.requests[0].headers["Api-Key"] == "k-1"
    assert client.concurrency == MAX_CONCURRENCY
    assert client.pacer.max_rps == 2.5
    assert [(w.limit, w.seconds) for w in client.pacer.windows] == [(7, 60.0)]


# --- the API key never shows ------------------------------------------------------------

CANARY = "canary-Key-7Qz9-DO-NOT-LEAK"


@pytest.mark.parametrize(
    "answer",
    [
        status(401, json_body=f"Invalid API key {CANARY}"),
        status(400, text=f"bad header X-API-KEY: {CANARY}"),
        status(500, json_body={"message": f"crash for {CANARY}", "status": "error"}),
        fails(httpx.ConnectError, f"cannot connect, key={CANARY}"),
        fails(httpx.ReadTimeout, f"timed out with {CANARY}"),
        lambda request: httpx.Response(200, content=f"garbage {CANARY}".encode()),
    ],
)
@pytest.mark.parametrize("kind", ["read", "payout"])
def test_the_api_key_never_appears_in_errors_or_reprs(
        kind: str, answer: Step, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    fake = FakeService(answer)
    client = fake.client(api_key=CANARY, attempts=2)
    assert CANARY not in repr(client)
    with pytest.raises(ProviderError) as caught:
        run(call(client, kind))
    error = caught.value
    assert fake.requests[0].headers["X-API-KEY"] == CANARY  # it was sent, as a header
    shown = " ".join([str(error), repr(error), error.hint or "", error.service_message or "",
                      "".join(traceback.format_exception(error)), repr(client), caplog.text])
    assert CANARY not in shown


def test_key_fingerprint_is_what_repr_shows() -> None:
    client = FakeService(ok(data=[])).client(api_key=CANARY)
    assert fingerprint(CANARY) in repr(client)
    run(client.aclose())


# --- the sandbox header -----------------------------------------------------------------

def test_is_sandbox_is_learnt_from_the_first_answer() -> None:
    fake = FakeService(ok(data=[], headers=SANDBOX_HEADER))

    async def scenario() -> tuple[bool | None, bool | None, bool]:
        async with fake.client(pacer=Pacer(windows="100/min")) as client:
            before = client.is_sandbox
            await client.banks("NG", "NGN")
            return before, client.is_sandbox, client.pacer.windows_enabled

    assert run(scenario()) == (None, True, False)


def test_a_real_service_keeps_the_windows() -> None:
    fake = FakeService(status(401, json_body="Invalid API key"))

    async def scenario() -> tuple[bool | None, bool]:
        async with fake.client(pacer=Pacer(windows="100/min")) as client:
            with pytest.raises(AuthError):
                await client.banks("NG", "NGN")
            return client.is_sandbox, client.pacer.windows_enabled

    assert run(scenario()) == (False, True)


def test_sandbox_header_on_an_error_answer_counts_too() -> None:
    fake = FakeService(status(400, json_body="Missing required parameter: country",
                              headers=SANDBOX_HEADER))

    async def scenario() -> bool | None:
        async with fake.client() as client:
            with pytest.raises(RequestRejected):
                await client.banks("", "NGN")
            return client.is_sandbox

    assert run(scenario()) is True


def test_concurrent_requests_stay_within_the_concurrency() -> None:
    in_flight = 0
    peak = 0

    async def handler(request: httpx.Request) -> httpx.Response:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await asyncio.sleep(0.01)
        in_flight -= 1
        return ok(raw=PAYOUT_JSON)(request)

    async def scenario() -> None:
        async with PayoutClient(BASE_URL, "k", transport=httpx.MockTransport(handler),
                                concurrency=3) as client:
            await asyncio.gather(*(client.get_payout(str(n)) for n in range(12)))

    run(scenario())
    assert peak == 3
