"""The typed, async client of the payout service (httpx).

One ``_call`` does everything every request needs: pacing, the API key header, the
sandbox detection, mapping each failure to one ``ProviderError`` and bounded retries.
What may be retried follows exactly-once (README, "How exactly-once works"): a request
that never left (``ConnectFailed``) and a 429 (after its wait) are resent as they are; a
5xx or a lost answer is retried for reads and quotes only. A payout POST whose outcome is unknown is
never retried here: the error goes to the engine, which looks the payout up first.

The API key is added to each request and never copied into a message, an error or a
``repr``: errors name the request by method and path template only.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from types import TracebackType
from typing import Any, Protocol, TypeVar
from urllib.parse import quote, urlencode
from urllib.request import getproxies, proxy_bypass

import httpx
import stamina

from batchpay.files import fingerprint
from batchpay.provider import jsonnum
from batchpay.provider.endpoints import Headers, Paths
from batchpay.provider.errors import (
    HINT_AMBIGUOUS,
    ConnectFailed,
    ProviderError,
    RateLimited,
    ResponseLost,
    ServiceError,
    UnexpectedResponse,
    error_from_response,
)
from batchpay.provider.models import Bank, Payout, PayoutPage, Quote, ShapeError, Wallet
from batchpay.provider.pacing import Pacer, SharedWindows
from batchpay.provider.wire import Answer, Wire
from batchpay.tls import verifying_context


class ClientSettings(Protocol):
    """The few settings a client is made from (`from_settings`). The settings read the
    provider's paths and headers, not the other way round: the client names what it needs
    instead of importing the settings."""

    @property
    def base_url(self) -> str | None: ...
    @property
    def api_key(self) -> str | None: ...
    @property
    def paths(self) -> Paths: ...
    @property
    def headers(self) -> Headers: ...
    @property
    def concurrency(self) -> int: ...
    @property
    def connect_timeout(self) -> float: ...
    @property
    def read_timeout(self) -> float: ...
    @property
    def max_rps(self) -> float: ...
    @property
    def rate_limit(self) -> str: ...
    @property
    def retry_attempts(self) -> int: ...
    @property
    def retry_seconds(self) -> float: ...

# httpx's pool slows down past a few dozen connections, and the provider's own limit
# (100 requests a minute) makes more pointless.
MAX_CONCURRENCY = 32
E = TypeVar("E", bound=ProviderError)
T = TypeVar("T")

# stamina logs each scheduled retry as a warning; without this, an application that set
# up no logging would print them raw on the terminal (logging's last-resort handler).
# Configured logging still receives them.
logging.getLogger("stamina").addHandler(logging.NullHandler())
HINT_CONNECT = (
    "Nothing was sent. Check BATCHPAY_BASE_URL, the network and any proxy, then run again."
)


@dataclass(frozen=True)
class RetryBudget:
    """How long a request may be retried: whichever of the two runs out first."""

    attempts: int = 6
    seconds: float = 60.0
    wait_initial: float = 0.2
    wait_max: float = 5.0


def compact(value: Any) -> Any:
    """The body without optional fields that have no value (None or ""), at any depth.

    The service documents these fields as strings: an absent field is fine, ``null`` is not.
    """
    if isinstance(value, Mapping):
        kept = {}
        for key, item in value.items():
            item = compact(item)
            if item is None or item == "" or (isinstance(item, dict) and not item):
                continue
            kept[key] = item
        return kept
    if isinstance(value, list | tuple):
        return [compact(item) for item in value if item is not None and item != ""]
    return value


class PayoutClient:
    """Async client of one payout service. Use ``async with`` or call ``aclose``."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None,
        *,
        paths: Paths = Paths(),  # noqa: B008 - frozen dataclass, shared safely
        headers: Headers = Headers(),  # noqa: B008
        transport: httpx.AsyncBaseTransport | None = None,
        concurrency: int = 4,
        connect_timeout: float = 5.0,
        read_timeout: float = 30.0,
        pacer: Pacer | None = None,
        retry: RetryBudget | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._api_key = api_key or ""
        self.paths = paths
        self.headers = headers
        self.concurrency = max(1, min(int(concurrency), MAX_CONCURRENCY))
        self.pacer = pacer or Pacer()
        self.retry = retry or RetryBudget()
        self.is_sandbox: bool | None = None
        # how long an answer may take: a request sent before a scan began may be committed
        # by the service up to this long after it left (engine.sending's "never received")
        self.read_timeout = read_timeout
        self.requests_sent = 0
        self._slots: asyncio.Semaphore | None = None  # made in the running loop
        tls = verifying_context()
        # the service's requests go on batchpay's own kept-alive connections (provider.wire:
        # a fraction of httpx's CPU per request); through httpx when a transport is given
        # (tests) or a proxy is set for the service, which httpx knows how to reach
        self._wire: Wire | None = None
        self._key_header = _header_line(self.headers.api_key, self._api_key)
        if transport is None and self._key_header is not None and not _proxied(self.base_url):
            self._wire = Wire(self.base_url, ssl_context=tls, connect_timeout=connect_timeout,
                              read_timeout=read_timeout, max_idle=self.concurrency,
                              user_agent="batchpay")
        self._transport = transport
        self._timeouts = (connect_timeout, read_timeout)
        self._tls = tls
        self._http_client: httpx.AsyncClient | None = None

    @property
    def _http(self) -> httpx.AsyncClient:
        """httpx's client, made when first needed (a proxy, a test's transport, a target
        the wire does not take): its pool loads httpcore and its async backends, a quarter
        of a second of a run's start that the wire does not need."""
        if self._http_client is None:
            connect_timeout, read_timeout = self._timeouts
            self._http_client = httpx.AsyncClient(
                base_url=self.base_url,
                transport=self._transport,
                limits=httpx.Limits(max_connections=self.concurrency,
                                    max_keepalive_connections=self.concurrency),
                timeout=httpx.Timeout(connect=connect_timeout, read=read_timeout,
                                      write=read_timeout, pool=connect_timeout),
                follow_redirects=False,  # a redirected POST could be sent twice
                headers={"Accept": "application/json"},
                verify=self._tls,
            )
        return self._http_client

    @classmethod
    def from_settings(
        cls,
        settings: ClientSettings,
        base_url: str | None = None,
        api_key: str | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        concurrency: int | None = None,
        shared: SharedWindows | None = None,
    ) -> PayoutClient:
        url = base_url or settings.base_url
        if not url:
            raise ValueError("from_settings needs a base URL (start the service first)")
        return cls(
            url,
            api_key if api_key is not None else settings.api_key,
            paths=settings.paths,
            headers=settings.headers,
            transport=transport,
            concurrency=concurrency or settings.concurrency,
            connect_timeout=settings.connect_timeout,
            read_timeout=settings.read_timeout,
            pacer=Pacer(settings.max_rps, settings.rate_limit, shared=shared),
            retry=RetryBudget(attempts=settings.retry_attempts, seconds=settings.retry_seconds),
        )

    def __repr__(self) -> str:
        return (f"PayoutClient(base_url={self.base_url!r}, api_key={fingerprint(self._api_key)}, "
                f"is_sandbox={self.is_sandbox}, requests_sent={self.requests_sent})")

    async def __aenter__(self) -> PayoutClient:
        # Where httpx carries the requests (a proxy, a test's transport), its pool is made
        # here, and anyio, through which httpcore reaches the network, loads its event-loop
        # backend (tens of ms): that one-off cost stays out of the first paced request,
        # which would otherwise leave late and bunch up with the next ones inside the
        # service's rate window. current_time is anyio's public API and loads the backend
        # as a side effect. The wire needs neither.
        if self._wire is None:
            import anyio

            self._http  # noqa: B018 - made here, with what it loads
            anyio.current_time()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        try:
            if self._wire is not None:
                await self._wire.aclose()
            if self._http_client is not None:
                await self._http_client.aclose()
        finally:
            self.pacer.close()

    # --- the service's operations ------------------------------------------------------

    async def banks(self, country: str, currency: str) -> list[Bank]:
        return await self._call("GET", self.paths.bank,
                                lambda data: [Bank.from_json(bank) for bank in data],
                                params={"country": country, "currency": currency})

    async def create_quote(
        self,
        *,
        source_amount: Decimal,
        source_currency: str,
        source_country: str,
        target_currency: str = "CNY",
        target_country: str = "CN",
        payment_channel: str = "BANK_TRANSFER",
    ) -> Quote:
        if not isinstance(source_amount, Decimal):
            raise TypeError("source_amount must be a Decimal")
        body = compact({
            "paymentChannel": payment_channel,
            "source": {"amount": source_amount, "country": source_country,
                       "currency": source_currency},
            "target": {"country": target_country, "currency": target_currency},
        })
        return await self._call("POST", self.paths.quote, Quote.from_json, body=body)

    async def get_quote(self, quote_id: str) -> Quote:
        return await self._call("GET", self.paths.quote_item, Quote.from_json,
                                ids={"id": quote_id})

    async def submit_payout(self, body: dict[str, Any]) -> Payout:
        """Send exactly ``body`` (built and journaled by the engine); never retried once sent."""
        return await self._call("POST", self.paths.payout, Payout.from_json, body=body,
                                payout=True)

    async def get_payout(self, payout_id: str) -> Payout:
        return await self._call("GET", self.paths.transaction, Payout.from_json,
                                ids={"id": payout_id})

    async def list_payouts(self, *, state: str, page: int, size: int = 100) -> PayoutPage:
        """One page of the payouts in one state. The service requires `state`, `page` and `size`
        all three (engine.payout_list reads the states a caller needs); a 404 is
        ``PayoutListAbsent``, the service offering no list."""
        # paging fields sit beside `data`, so this one reads the whole envelope
        return await self._call(
            "GET", self.paths.transactions,
            lambda envelope: PayoutPage.from_envelope(envelope, page=page, size=size),
            params={"state": state, "page": str(page), "size": str(size)},
            whole_envelope=True)

    async def wallets(self, currency: str | None = None) -> list[Wallet]:
        return await self._call("GET", self.paths.wallet,
                                lambda data: [Wallet.from_json(wallet) for wallet in data],
                                params=compact({"currency": currency}))

    # --- one request, with pacing, error mapping and retries ---------------------------

    async def _call(
        self,
        method: str,
        path_template: str,
        parse: Callable[[Any], T],
        *,
        ids: Mapping[str, str] | None = None,
        params: Mapping[str, str] | None = None,
        body: Any = None,
        payout: bool = False,
        whole_envelope: bool = False,
    ) -> T:
        """``parse`` applied to the success envelope's ``data`` (or the whole envelope).

        The first attempt runs on its own: most requests need no retry, and a retry context
        costs a few dozen objects per request (cycles the garbage collector then walks).
        Only a failure worth retrying enters stamina's loop, where it is replayed as the
        first attempt, so the budget, the waits and stamina's test mode are as if it had
        run there.
        """
        url = path_template.format(**{k: _path_segment(v) for k, v in (ids or {}).items()})
        content = jsonnum.dumps(body) if body is not None else None
        started = time.monotonic()

        async def once() -> T:
            response = await self._send_once(method, url, path_template, params, content,
                                             payout)
            envelope = self._envelope(response, method, path_template, payout)
            try:
                return parse(envelope if whole_envelope else envelope["data"])
            except (ShapeError, TypeError) as exc:
                raise self._unexpected(method, path_template, payout, response.status_code,
                                       str(exc)) from None

        def retryable(exc: Exception) -> bool | float:
            return self._retry_decision(exc, payout=payout, started=started)

        try:
            return await once()
        except ProviderError as exc:
            if retryable(exc) is False:
                raise
            replay: ProviderError | None = exc
        async for attempt in stamina.retry_context(
            on=retryable,
            attempts=self.retry.attempts,
            timeout=max(0.0, self.retry.seconds - (time.monotonic() - started)),
            wait_initial=self.retry.wait_initial,
            wait_max=self.retry.wait_max,
        ):
            with attempt:
                if replay is not None:
                    error, replay = replay, None
                    raise error
                return await once()
        raise AssertionError("unreachable: stamina re-raises the last error")  # pragma: no cover

    def _retry_decision(self, exc: Exception, *, payout: bool, started: float) -> bool | float:
        """True to retry with backoff, a number of seconds to wait first, False to stop."""
        if isinstance(exc, RateLimited):
            if exc.retry_after is None:
                return True
            remaining = self.retry.seconds - (time.monotonic() - started)
            # a wait beyond the budget would only end in the same error, later
            return exc.retry_after if exc.retry_after <= remaining else False
        if isinstance(exc, ConnectFailed):
            return True  # never reached the service: safe even for a payout
        if isinstance(exc, ServiceError | ResponseLost):
            return not payout
        return False

    async def _send_once(self, method: str, url: str, path_template: str,
                         params: Mapping[str, str] | None, content: bytes | None,
                         payout: bool) -> Answer:
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.concurrency)
        async with self._slots:
            await self.pacer.acquire()
            self.requests_sent += 1
            try:
                target = url + ("?" + urlencode(params, quote_via=quote) if params else "")
                if self._wire is not None and self._key_header is not None and target.isascii():
                    lines = (self._key_header, JSON_HEADER) if content is not None else (
                        self._key_header,)
                    answer = await self._wire.send(method, target, lines, content)
                else:
                    headers = {self.headers.api_key: self._api_key}
                    if content is not None:
                        headers["Content-Type"] = "application/json"
                    answer = Answer.of(await self._http.request(
                        method, url, params=params, content=content, headers=headers))
            except httpx.HTTPError as exc:
                raise self._transport_error(exc, method, path_template, payout) from None
        self._note_sandbox(answer)
        return answer

    def _note_sandbox(self, answer: Answer) -> None:
        self.is_sandbox = answer.header(self.headers.sandbox).strip() == "1"
        # the provider's windows protect a real key; the sandbox has none to protect, unless
        # it was started to try them (`batchpay sandbox --client-windows`)
        self.pacer.windows_enabled = not self.is_sandbox or answer.header(
            self.headers.sandbox_windows).strip().lower() == "on"

    def _envelope(self, response: Answer, method: str, path_template: str,
                  payout: bool) -> dict[str, Any]:
        if not response.is_success:
            raise self._redacted(error_from_response(
                response.response(), method, path_template, payout_request=payout,
                list_request=method == "GET" and path_template == self.paths.transactions))
        try:
            envelope = jsonnum.loads(response.content)
        except ValueError:
            envelope = None
        if not isinstance(envelope, dict) or "data" not in envelope:
            raise self._unexpected(method, path_template, payout, response.status_code,
                                   "the answer is not the service's JSON envelope")
        return envelope

    def _unexpected(self, method: str, path_template: str, payout: bool, status: int | None,
                    why: str) -> UnexpectedResponse:
        return self._redacted(UnexpectedResponse(
            f"Unexpected answer from the service ({method} {path_template}): {why}.",
            status=status, method=method, path=path_template, definite=not payout,
            hint=HINT_AMBIGUOUS if payout else "The service's answer changed shape; "
            "check BATCHPAY_BASE_URL and the path settings.",
        ))

    def _transport_error(self, exc: httpx.HTTPError, method: str, path_template: str,
                         payout: bool) -> ProviderError:
        """A request that got no HTTP answer: never sent (definite) or lost (in doubt)."""
        detail = self._scrub(str(exc) or type(exc).__name__)
        where = f"{method} {path_template}"
        if isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout | httpx.PoolTimeout
                      | httpx.UnsupportedProtocol):
            return ConnectFailed(
                f"Could not reach the payout service ({where}): {detail}",
                method=method, path=path_template, definite=True, hint=HINT_CONNECT)
        if isinstance(exc, httpx.DecodingError):
            return self._unexpected(method, path_template, payout, None,
                                    f"undecodable body: {detail}")
        # read/write timeout, connection closed, protocol error: it may have arrived
        return ResponseLost(
            f"The request was sent but no answer came back ({where}): "
            f"{type(exc).__name__} {detail}",
            method=method, path=path_template, definite=not payout,
            hint=HINT_AMBIGUOUS if payout else "Check the network and try again.")

    def _scrub(self, text: str) -> str:
        return text.replace(self._api_key, "[api key]") if self._api_key else text

    def _redacted(self, error: E) -> E:
        """The same error with the API key cut out, should the service echo it back."""
        if self._api_key:
            error.message = self._scrub(error.message)
            error.args = (error.message,)
            if error.service_message:
                error.service_message = self._scrub(error.service_message)
        return error


JSON_HEADER = (b"Content-Type", b"application/json")


def _header_line(name: str, value: str) -> tuple[bytes, bytes] | None:
    """`name: value` as a header (name, value); None when it cannot be one (httpx then
    refuses it with its own error, as before)."""
    text = f"{name}: {value}"
    if any(c in text for c in "\r\n\0") or not name or not text.isascii():
        return None
    return name.encode("ascii"), value.encode("ascii")


def _proxied(base_url: str) -> bool:
    """Whether the environment names a proxy for this URL (HTTPS_PROXY, ALL_PROXY, ... and
    NO_PROXY), as httpx would read it."""
    proxies = getproxies()
    scheme = base_url.split(":", 1)[0].lower()
    if not (proxies.get(scheme) or proxies.get("all")):
        return False
    host = httpx.URL(base_url).host
    return not proxy_bypass(host)


def _path_segment(value: str) -> str:
    """An id as one path segment: a slash or '?' in it cannot reach another resource."""
    return quote(str(value), safe="")
