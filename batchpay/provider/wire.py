"""HTTP/1.1 to the payout service on kept-alive connections, with little CPU per request.

httpx's own pool (httpcore over anyio) costs about 1.5 ms of CPU per request: each request
checks every idle connection's socket, opens several cancel scopes and parses its URL and
cookies again. A run makes two small requests per payout to one host, so the client
(provider.client) sends them here instead: one asyncio protocol per connection, kept for
the next request unless the service closes it.

The protocol itself is h11's, the parser httpcore uses too: it writes each request and
reads each answer (status line, headers, Content-Length or chunked bodies, interim 1xx
answers, keep-alive or close, and what breaks the protocol), one h11.Connection per
connection. This module only moves bytes between h11 and the socket, keeps connections
for reuse and says what went wrong.

What can go wrong is said with httpx's exceptions, so that the client tells a request that
never left from one whose answer was lost exactly as it does with httpx:
- no connection (refused, DNS, TLS handshake, connect timeout): ConnectError / ConnectTimeout
  (definite: nothing was sent);
- sent, then no complete answer (timeout, connection closed or reset, garbled answer):
  ReadTimeout / RemoteProtocolError (ambiguous: the service may have acted on it).

A connection the service closed while it sat idle is seen closed by its protocol at once,
and not used again. Proxies are httpx's business: the client uses httpx where one is set.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Callable, Sequence
from urllib.parse import quote, urlsplit

import h11
import httpx

MAX_HEAD_BYTES = 64 * 1024  # a status line and headers longer than this are not an answer
HeaderPair = tuple[bytes, bytes]


class Answer:
    """One complete HTTP answer: status, reason, headers (as sent) and the body's bytes.

    The client reads a successful answer's status, two headers and its JSON body straight
    from here; an httpx.Response (a third of a request's CPU to make) is made only for an
    answer httpx must read: an error the client maps (errors.error_from_response), a body
    the service compressed unasked. An answer that came through httpx itself (a proxy, a
    test's transport) keeps its response (`original`)."""

    __slots__ = ("status", "reason", "headers", "body", "keep_alive", "_response")

    def __init__(self, status: int, reason: bytes, headers: list[HeaderPair],
                 body: bytes, keep_alive: bool, original: httpx.Response | None = None) -> None:
        self.status, self.reason, self.headers = status, reason, headers
        self.body, self.keep_alive = body, keep_alive
        self._response = original

    @classmethod
    def of(cls, response: httpx.Response) -> Answer:
        """An answer httpx has read."""
        return cls(response.status_code, response.reason_phrase.encode("latin-1", "replace"),
                   list(response.headers.raw), response.content, False, response)

    @property
    def status_code(self) -> int:
        return self.status

    @property
    def is_success(self) -> bool:
        return 200 <= self.status < 300

    def header(self, name: str) -> str:
        """The first value of header `name` (any case), "" when absent."""
        wanted = name.lower().encode("latin-1")
        for key, value in self.headers:
            if key.lower() == wanted:
                return value.decode("latin-1")
        return ""

    @property
    def content(self) -> bytes:
        """The body, decoded as httpx decodes it should the service have compressed it."""
        if self._response is None and self.header("content-encoding").strip().lower() in (
                "", "identity"):
            return self.body
        return self.response().content

    def response(self) -> httpx.Response:
        """The answer as an httpx.Response (the body decoded as httpx decodes it, should
        the service compress it unasked)."""
        if self._response is None:
            self._response = httpx.Response(
                self.status, headers=self.headers, content=self.body,
                extensions={"reason_phrase": self.reason, "http_version": b"HTTP/1.1"})
        return self._response


class _Connection(asyncio.Protocol):
    """One connection to the service and its h11 state; one request on it at a time."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.h11 = h11.Connection(h11.CLIENT, max_incomplete_event_size=MAX_HEAD_BYTES)
        self.waiter: asyncio.Future[Answer] | None = None
        self.head: h11.Response | None = None
        self.body: list[bytes] = []
        self.open = False
        self.eof = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport, self.open = transport, True

    def send(self, request: h11.Request, body: bytes | None,
             waiter: asyncio.Future[Answer]) -> None:
        """Write the request whole; its answer is set on `waiter`. Raises
        httpx.LocalProtocolError, with nothing written, if h11 will not send it."""
        assert self.transport is not None
        try:
            data = self.h11.send(request)
            if body:
                data += self.h11.send(h11.Data(data=body))
            data += self.h11.send(h11.EndOfMessage())
        except h11.LocalProtocolError as exc:
            raise httpx.LocalProtocolError(str(exc)) from None
        self.waiter, self.head, self.body = waiter, None, []
        self.transport.write(data)

    def data_received(self, data: bytes) -> None:
        if self.waiter is None:  # bytes nobody asked for: this connection is done
            self.close()
            return
        self.h11.receive_data(data)
        self._check()

    def eof_received(self) -> bool | None:
        self.eof = True
        if self.waiter is not None:
            self.h11.receive_data(b"")
            self._check()
        return False  # closes the transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.open = False
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            if exc is None and not self.eof:
                self.eof = True
                self.h11.receive_data(b"")
                self._check()
            if not waiter.done():
                self.waiter = None
                waiter.set_exception(httpx.RemoteProtocolError(
                    f"Server disconnected without sending a response"
                    f"{f' ({exc})' if exc else ''}."))

    def _check(self) -> None:
        """Read h11's events so far; set the answer once it is whole, or what broke it."""
        waiter = self.waiter
        if waiter is None or waiter.done():
            return
        connection = self.h11
        try:
            while True:
                event = connection.next_event()
                if isinstance(event, h11.Data):
                    self.body.append(event.data)
                elif isinstance(event, h11.Response):
                    self.head = event
                elif isinstance(event, h11.EndOfMessage):
                    break
                elif event is h11.NEED_DATA:
                    return
                elif not isinstance(event, h11.InformationalResponse):  # 1xx: the answer follows
                    raise h11.RemoteProtocolError(f"Unexpected {event!r} mid-answer.")
        except h11.RemoteProtocolError as exc:
            self.waiter = None
            waiter.set_exception(httpx.RemoteProtocolError(self._broken(exc)))
            self.close()
            return
        head = self.head
        assert head is not None
        # kept only when both sides may go on and nothing came beyond the answer (no bytes
        # were asked for: they would be taken for the next request's answer)
        keep_alive = (connection.our_state is h11.DONE and connection.their_state is h11.DONE
                      and not connection.trailing_data[0] and not self.eof)
        if keep_alive:
            connection.start_next_cycle()
        self.waiter = None
        waiter.set_result(Answer(head.status_code, head.reason, head.headers.raw_items(),
                                 b"".join(self.body), keep_alive))

    def _broken(self, exc: h11.RemoteProtocolError) -> str:
        if self.eof and self.head is None:
            return "Server disconnected without sending a response."
        if self.eof:
            return "The connection closed mid-answer."
        return f"A malformed answer: {exc}."

    def close(self) -> None:
        self.open = False
        if self.transport is not None:
            self.transport.close()


class Wire:
    """Kept-alive HTTP/1.1 connections to one service (its scheme, host and port)."""

    def __init__(self, base_url: str, *, ssl_context: ssl.SSLContext | None,
                 connect_timeout: float, read_timeout: float, max_idle: int,
                 user_agent: str) -> None:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {base_url!r}")
        self.host = parts.hostname
        self.port = parts.port or (443 if parts.scheme == "https" else 80)
        self.ssl = ssl_context if parts.scheme == "https" else None
        # a base URL's own path comes before each path, percent-encoded as httpx would
        self.prefix = quote(parts.path.rstrip("/"), safe="/%:@!$&'()*+,;=~").encode("ascii")
        default_port = self.port == (443 if self.ssl else 80)
        host = f"[{self.host}]" if ":" in self.host else self.host
        if not host.isascii():  # an international name goes out as its ASCII form
            host = host.encode("idna").decode("ascii")
        self.fixed_headers: list[HeaderPair] = [
            (b"Host", f"{host}{'' if default_port else f':{self.port}'}".encode("ascii")),
            (b"Accept", b"application/json"),
            (b"User-Agent", user_agent.encode("ascii"))]
        self.connect_timeout, self.read_timeout = connect_timeout, read_timeout
        self.max_idle = max_idle
        self._idle: list[_Connection] = []
        self._closed = False

    async def send(self, method: str, target: str, headers: Sequence[HeaderPair],
                   body: bytes | None) -> Answer:
        """`method target` with these headers (name, value) and body; its answer."""
        lines = [*self.fixed_headers, *headers]
        if body is not None:
            lines.append((b"Content-Length", b"%d" % len(body)))
        try:  # h11 checks the request before anything is sent
            request = h11.Request(method=method.encode("ascii"),
                                  target=self.prefix + target.encode("ascii"), headers=lines)
        except h11.LocalProtocolError as exc:
            raise httpx.LocalProtocolError(str(exc)) from None
        connection = await self._connection()
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[Answer] = loop.create_future()
        try:
            connection.send(request, body, waiter)
        except httpx.LocalProtocolError:
            connection.close()
            raise
        timer = loop.call_later(self.read_timeout, _expire, waiter)
        try:
            answer = await waiter
        except BaseException:  # timed out, closed, cancelled: the connection's state is unknown
            connection.close()
            raise
        finally:
            timer.cancel()
        if answer.keep_alive and connection.open and not self._closed:
            if len(self._idle) < self.max_idle:
                self._idle.append(connection)
            else:
                connection.close()
        else:
            connection.close()
        return answer

    async def _connection(self) -> _Connection:
        while self._idle:
            connection = self._idle.pop()
            if connection.open and not connection.eof:
                return connection
            connection.close()
        loop = asyncio.get_running_loop()
        factory: Callable[[], _Connection] = _Connection
        try:
            async with asyncio.timeout(self.connect_timeout):
                _, connection = await loop.create_connection(
                    factory, self.host, self.port, ssl=self.ssl,
                    server_hostname=self.host if self.ssl else None)
        except TimeoutError:
            raise httpx.ConnectTimeout(
                f"No connection to {self.host}:{self.port} within {self.connect_timeout:g} s."
            ) from None
        except (OSError, ssl.SSLError) as exc:
            raise httpx.ConnectError(str(exc) or type(exc).__name__) from None
        return connection

    async def aclose(self) -> None:
        self._closed = True
        while self._idle:
            self._idle.pop().close()


def _expire(waiter: asyncio.Future[Answer]) -> None:
    if not waiter.done():
        waiter.set_exception(httpx.ReadTimeout("No answer within the read timeout."))
