"""The sandbox: a faithful fake of the payout service (README, "The sandbox") plus its
/_sandbox/ extensions.

Every request outside /_sandbox/ goes through the gate, in this order: API key (401) →
rate-limit windows (429 with Retry-After) → injected server error (500, nothing done) → the
endpoint. With a latency L, every answer leaves L after its request arrived, the sandbox's
own work included (asyncio.sleep for the rest, so other requests go on meanwhile): L is the
service's response time. The drop dice are rolled for every payout request; a picked one
that the service accepts is committed, and then its connection is closed with no HTTP
response at all, as when a network or a proxy loses the answer (a refused one is answered
as usual). Every response carries `X-Batchpay-Sandbox: 1`. Requests are counted by
"METHOD /path/template status"; a dropped payout counts under the status "dropped".

The payout list is held to its documented contract: `state`, `page` and `size` are all
required (400 naming the one missing), `state` is COMPLETED, PENDING, FAILED or REFUNDED,
and PENDING also lists the payouts in PROCESSING (none goes unlisted on its way). Started
with `payout_list=False` (`--no-payout-list`) the list is absent: 404, as on a service
whose current API no longer offers it; a payout is then read only by its id.
"""

from __future__ import annotations

import asyncio
import hmac
import math
import time
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from contextlib import asynccontextmanager
from decimal import Decimal, InvalidOperation
from typing import Any

from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Match, Route

from batchpay.sandbox import banks, rates
from batchpay.sandbox.checks import Refusal, check_payout_request, check_quote_request
from batchpay.sandbox.config import SandboxConfig
from batchpay.sandbox.faults import retry_after_header
from batchpay.sandbox.state import LISTABLE_STATES, SandboxState
from batchpay.sandbox.webhooks_out import WebhookDispatcher
from batchpay.sandbox.wire import (
    CLIENT_WINDOWS_HEADER,
    SANDBOX_HEADER,
    JSONBody,
    Payout,
    Quote,
    bare,
    failed,
    loads,
    success,
)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

FLAGS = "batchpay.sandbox.flags"  # scope key: what the endpoint tells the gate
MAX_PAGE_SIZE = 100
MAX_BODY_BYTES = 1_000_000


class SandboxApp(Starlette):
    """Starlette with the gate outermost: it alone sees uvicorn's own `send`."""

    gate: Gate

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await super().__call__(scope, receive, send)
            return
        await self.gate(scope, receive, send, super().__call__)


class Gate:
    """Latency, key, windows and injected failures before the endpoints; counters after."""

    def __init__(self, config: SandboxConfig, state: SandboxState, routes: list[Route]) -> None:
        self.config = config
        self.state = state
        self.routes = routes
        self.key = config.api_key.encode("utf-8")

    def template(self, scope: Scope) -> str:
        for route in self.routes:
            match, _ = route.matches(scope)
            if match is not Match.NONE:
                return route.path
        return str(scope["path"])

    def refusal(self, scope: Scope, template: str) -> Response | None:
        key = Headers(scope=scope).get("x-api-key")
        if key is None or not hmac.compare_digest(key.encode("utf-8"), self.key):
            return bare(401, "Invalid API key") if template == "/v1/bank" else failed(401, "Invalid API key")
        wait = self.state.limiter.admit(time.monotonic())
        if wait is not None:
            return failed(429, "API rate limit exceeded", {"Retry-After": retry_after_header(wait)})
        if self.state.dice.roll(self.config.error_rate):
            return failed(500, "Internal server error")
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send, app: ASGIApp) -> None:
        flags = {"drop": False}
        scope[FLAGS] = flags
        statuses: list[int] = []

        async def send_marked(message: Message) -> None:
            if message["type"] == "http.response.start" and latency:
                # the answer leaves `latency` after the request arrived, the work included
                await asyncio.sleep(max(0.0, arrived + latency - time.monotonic()))
            if flags["drop"]:
                if message["type"] == "http.response.start":
                    drop_connection(send)
                return
            if message["type"] == "http.response.start":
                statuses.append(message["status"])
                marks = [SANDBOX_HEADER, CLIENT_WINDOWS_HEADER] if self.config.client_windows \
                    else [SANDBOX_HEADER]
                message = {**message, "headers": [*message.get("headers", ()), *marks]}
            await send(message)

        arrived = time.monotonic()
        if scope["path"].startswith("/_sandbox/"):
            latency = 0.0
            await app(scope, receive, send_marked)
            return
        latency = self.config.latency_ms / 1000
        self.state.traffic.arrived(arrived)
        template = self.template(scope)
        try:
            refusal = self.refusal(scope, template)
            await (refusal or app)(scope, receive, send_marked)
        finally:
            outcome = "dropped" if flags["drop"] else str(statuses[0]) if statuses else "none"
            self.state.traffic.answered(f"{scope['method']} {template} {outcome}")


def drop_connection(server_send: Send) -> None:
    """Close the connection without a response. uvicorn's `send` is a bound method of the
    request cycle, which holds the socket's transport; marking the cycle disconnected stops
    uvicorn from answering 500 for the response the app never started."""
    cycle = getattr(server_send, "__self__", None)
    transport = getattr(cycle, "transport", None)
    if transport is None:
        raise RuntimeError("this server does not let the sandbox drop a connection")
    cycle.disconnected = True  # type: ignore[union-attr]
    transport.close()


def _refusals_as_responses(
    endpoint: Callable[[Request], Awaitable[Response]],
) -> Callable[[Request], Awaitable[Response]]:
    async def answer(request: Request) -> Response:
        try:
            return await endpoint(request)
        except Refusal as refusal:
            return failed(refusal.status_code, refusal.message)

    answer.__name__ = endpoint.__name__
    return answer


async def _json_body(request: Request) -> Any:
    try:
        return loads(await request.body())
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise Refusal(400, "Request body must be JSON") from None
    except ClientDisconnect:  # the client went away mid-request (a killed runner): nothing done
        raise Refusal(400, "Request body was not received") from None


def _whole_number(request: Request, name: str, minimum: int) -> int:
    text = request.query_params.get(name, "").strip()
    if not text.isdigit() or int(text) < minimum:
        raise Refusal(400, f"{name} must be a whole number of at least {minimum}")
    return int(text)


def _retrieved(what: str, record: Quote | Payout | None) -> Response:
    """A quote or a transaction read by its id, as the service answers it (404: none)."""
    if record is None:
        return failed(404, f"{what} not found")
    return success(f"{what} retrieved successfully", record)


def _currency(text: str | None) -> str | None:
    return text.strip().upper() or None if text is not None else None


def create_app(config: SandboxConfig) -> Starlette:
    """The sandbox as an ASGI app; `app.state.sandbox` holds its books."""
    state = SandboxState(config)
    webhooks = WebhookDispatcher(state)

    async def bank_list(request: Request) -> Response:
        params = {name: request.query_params.get(name, "").strip() for name in ("country", "currency")}
        missing = [name for name, value in params.items() if not value]
        if missing:
            plural = "s" if len(missing) > 1 else ""
            return bare(400, f"Missing required parameter{plural}: {', '.join(missing)}")
        found = banks.bank_list(params["country"], params["currency"])
        if found is None:
            return bare(400, "Bank list not available for the specified country and currency")
        return success(*found)

    async def create_quote(request: Request) -> Response:
        quote = state.create_quote(*check_quote_request(await _json_body(request)))
        return success("Quote created successfully", quote)

    async def read_quote(request: Request) -> Response:
        return _retrieved("Quote", state.read_quote(request.path_params["id"]))

    async def create_payout(request: Request) -> Response:
        drop = state.dice.roll(config.drop_rate)  # drawn for every payout request
        record = state.create_payout(check_payout_request(await _json_body(request)))
        webhooks.wake()
        request.scope[FLAGS]["drop"] = drop  # committed above; now the answer may be lost
        return success("Payout initiated successfully", record)

    async def read_transaction(request: Request) -> Response:
        return _retrieved("Transaction", state.read_payout(request.path_params["id"]))

    async def list_transactions(request: Request) -> Response:
        for name in ("state", "page", "size"):  # all three required, as documented
            if not request.query_params.get(name, "").strip():
                raise Refusal(400, f"{name} is required")
        wanted = request.query_params["state"].strip().upper()
        if wanted not in LISTABLE_STATES:
            raise Refusal(400, f"Invalid state: use one of {', '.join(LISTABLE_STATES)}")
        page = _whole_number(request, "page", 0)
        size = min(_whole_number(request, "size", 1), MAX_PAGE_SIZE)
        records, total = state.list_payouts(wanted, page, size)
        return JSONBody({
            "message": "Transactions retrieved successfully", "status": "success",
            "data": records, "page": page, "size": size, "totalPages": math.ceil(total / size),
        })

    async def read_wallets(request: Request) -> Response:
        wallets = state.wallets(_currency(request.query_params.get("currency")))
        return success("Wallets retrieved successfully", wallets)

    async def sandbox_payouts(request: Request) -> Response:
        return JSONBody({"data": state.inspection_list()})

    async def sandbox_stats(request: Request) -> Response:
        return JSONBody(state.traffic.snapshot())

    async def sandbox_reset(request: Request) -> Response:
        state.reset()
        return JSONBody({"message": "Sandbox reset", "status": "success"})

    async def sandbox_wallet(request: Request) -> Response:
        body = await _json_body(request)
        currency = _currency(body.get("currency")) if isinstance(body, dict) else None
        if currency not in rates.UNITS_PER_USD:
            raise Refusal(400, "currency must be a currency code the sandbox knows, e.g. NGN")
        balance = body.get("balance")
        try:
            if isinstance(balance, bool) or balance is None:
                raise InvalidOperation
            amount = Decimal(balance)
        except (InvalidOperation, TypeError, ValueError):
            raise Refusal(400, "balance must be a number") from None
        if not amount.is_finite() or amount < 0:
            raise Refusal(400, "balance must be 0 or more")
        state.set_wallet(currency, amount)
        return success("Wallet set", state.wallets(currency))

    async def sandbox_rate(request: Request) -> Response:
        """Move a pair's rate by a fraction of its seeded value from the next quote on."""
        body = await _json_body(request)
        pair = [_currency(body.get(k)) if isinstance(body, dict) else None
                for k in ("source", "target")]
        if any(c not in rates.UNITS_PER_USD for c in pair):
            raise Refusal(400, "source and target must be currency codes the sandbox knows")
        try:
            moved = Decimal(str(body.get("moved")))
        except (InvalidOperation, TypeError, ValueError):
            raise Refusal(400, "moved must be a number, e.g. 0.05 for 5% up") from None
        if not moved.is_finite() or not -0.5 < moved < 0.5:
            raise Refusal(400, "moved must be between -0.5 and 0.5")
        state.drift.set(pair[0], pair[1], moved)  # type: ignore[arg-type]
        return success("Rate moved", {"source": pair[0], "target": pair[1],
                                      "moved": str(moved)})

    endpoints = [
        ("/v1/bank", bank_list, "GET"),
        ("/v1/quote", create_quote, "POST"),
        ("/v1/quote/{id}", read_quote, "GET"),
        ("/v2/payout", create_payout, "POST"),
        ("/v1/transaction/{id}", read_transaction, "GET"),
        *([("/v1/transaction", list_transactions, "GET")] if config.payout_list else []),
        ("/v1/wallet", read_wallets, "GET"),
        ("/_sandbox/payouts", sandbox_payouts, "GET"),
        ("/_sandbox/stats", sandbox_stats, "GET"),
        ("/_sandbox/reset", sandbox_reset, "POST"),
        ("/_sandbox/wallet", sandbox_wallet, "PUT"),
        ("/_sandbox/rate", sandbox_rate, "PUT"),
    ]
    routes = [Route(path, _refusals_as_responses(func), methods=[method]) for path, func, method in endpoints]

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        webhooks.start()
        try:
            yield
        finally:
            webhooks.stop()
            state.close()

    async def http_error(request: Request, exc: Exception) -> Response:
        status = exc.status_code if isinstance(exc, HTTPException) else 500
        return failed(status, "Not found" if status == 404 else str(getattr(exc, "detail", exc)))

    app = SandboxApp(routes=routes, lifespan=lifespan, max_body_size=MAX_BODY_BYTES,
                     exception_handlers={HTTPException: http_error})
    app.gate = Gate(config, state, routes)
    app.state.sandbox = state
    app.state.webhooks = webhooks
    return app
