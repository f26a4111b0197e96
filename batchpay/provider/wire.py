"""HTTP/1.1 to the payout service on kept-alive connections, with little CPU per request.

httpx's own pool (httpcore over anyio) costs about 1.5 ms of CPU per request: each request
checks every idle connection's socket, opens several cancel scopes and parses its URL and
cookies again. A run makes two small requests per payout to one host, so the client
(provider.client) sends them here instead: one asyncio protocol per connection, the
request written as bytes, the answer read by Content-Length or chunks, and the connection
kept for the next request unless the service closes it.

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
from collections.abc import Callable
from urllib.parse import urlsplit

import httpx

MAX_HEAD_BYTES = 64 * 1024  # a status line and headers longer than this are not an answer
Head = tuple[int, bytes, list[tuple[bytes, bytes]]]


class Answer:
    """One complete HTTP answer: status, reason, headers (as sent) and the body's bytes."""

    __slots__ = ("status", "reason", "headers", "body", "keep_alive")

    def __init__(self, status: int, reason: bytes, headers: list[tuple[bytes, bytes]],
                 body: bytes, keep_alive: bool) -> None:
        self.status, self.reason, self.headers = status, reason, headers
        self.body, self.keep_alive = body, keep_alive

    def response(self) -> httpx.Response:
        """The answer as the httpx.Response the rest of the client reads (the body decoded
        as httpx decodes it, should the service compress it unasked)."""
        return httpx.Response(self.status, headers=self.headers, content=self.body,
                              extensions={"reason_phrase": self.reason,
                                          "http_version": b"HTTP/1.1"})


class _Reader:
    """Parses one answer from the bytes received so far (None while it is incomplete)."""

    def __init__(self) -> None:
        self.buffer = bytearray()
        self.head: Head | None = None
        self.body_at = 0

    def answer(self, eof: bool) -> Answer | None:
        buffer = self.buffer
        while self.head is None:
            end = buffer.find(b"\r\n\r\n")
            if end < 0:
                if eof:
                    raise httpx.RemoteProtocolError(
                        "Server disconnected without sending a response.")
                if len(buffer) > MAX_HEAD_BYTES:
                    raise httpx.RemoteProtocolError("The answer's head is too long.")
                return None
            head = _parse_head(bytes(buffer[:end]))
            if 100 <= head[0] < 200:  # an interim answer (100 Continue): the real one follows
                del buffer[:end + 4]
                continue
            self.head, self.body_at = head, end + 4
        status, reason, headers = self.head
        length: int | None = None
        chunked, close = False, False
        for name, value in headers:
            lowered = name.lower()
            if lowered == b"content-length":
                try:
                    length = int(value)
                except ValueError:
                    raise httpx.RemoteProtocolError("A malformed Content-Length.") from None
            elif lowered == b"transfer-encoding":
                chunked = b"chunked" in value.lower()
            elif lowered == b"connection":
                close = b"close" in value.lower()
        start = self.body_at
        if chunked:
            found = _chunks(buffer, start)
            if found is None:
                if eof:
                    raise httpx.RemoteProtocolError("The connection closed mid-answer.")
                return None
            body, end = found
        elif status in (204, 304):
            body, end = b"", start
        elif length is not None:
            end = start + length
            if len(buffer) < end:
                if eof:
                    raise httpx.RemoteProtocolError("The connection closed mid-answer.")
                return None
            body = bytes(buffer[start:end])
        else:  # no length: the body runs to the end of the connection
            if not eof:
                return None
            body, end, close = bytes(buffer[start:]), len(buffer), True
        # bytes beyond the answer (none were asked for) leave the connection unusable
        return Answer(status, reason, headers, body, keep_alive=not close and end == len(buffer))


def _parse_head(raw: bytes) -> Head:
    lines = raw.split(b"\r\n")
    parts = lines[0].split(b" ", 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or not parts[1].isdigit():
        raise httpx.RemoteProtocolError("The answer is not HTTP/1.1.")
    headers = []
    for line in lines[1:]:
        name, colon, value = line.partition(b":")
        if not colon:
            raise httpx.RemoteProtocolError("A malformed header line.")
        headers.append((name.strip(), value.strip()))
    return int(parts[1]), parts[2] if len(parts) > 2 else b"", headers


def _chunks(buffer: bytearray, at: int) -> tuple[bytes, int] | None:
    """A chunked body from `at`: (its bytes, where the answer ends), None while incomplete."""
    pieces: list[bytes] = []
    while True:
        line_end = buffer.find(b"\r\n", at)
        if line_end < 0:
            return None
        try:
            size = int(bytes(buffer[at:line_end]).split(b";")[0].strip(), 16)
        except ValueError:
            raise httpx.RemoteProtocolError("A malformed chunk size.") from None
        if size == 0:  # the last chunk; then trailer lines, up to an empty line
            at = line_end + 2
            while True:
                line_end = buffer.find(b"\r\n", at)
                if line_end < 0:
                    return None
                if line_end == at:
                    return b"".join(pieces), at + 2
                at = line_end + 2
        data_end = line_end + 2 + size
        if len(buffer) < data_end + 2:
            return None
        pieces.append(bytes(buffer[line_end + 2:data_end]))
        at = data_end + 2


class _Connection(asyncio.Protocol):
    """One connection to the service; one request on it at a time."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.reader = _Reader()
        self.waiter: asyncio.Future[Answer] | None = None
        self.open = False
        self.eof = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport, self.open = transport, True

    def send(self, data: bytes, waiter: asyncio.Future[Answer]) -> None:
        assert self.transport is not None
        self.reader, self.waiter = _Reader(), waiter
        self.transport.write(data)

    def data_received(self, data: bytes) -> None:
        if self.waiter is None:  # bytes nobody asked for: this connection is done
            self.close()
            return
        self.reader.buffer += data
        self._check()

    def eof_received(self) -> bool | None:
        self.eof = True
        self._check()
        return False  # closes the transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.open = False
        if self.waiter is not None and not self.waiter.done():
            if exc is None:
                self.eof = True
                self._check()
            if not self.waiter.done():
                self.waiter.set_exception(httpx.RemoteProtocolError(
                    f"Server disconnected without sending a response"
                    f"{f' ({exc})' if exc else ''}."))

    def _check(self) -> None:
        waiter = self.waiter
        if waiter is None or waiter.done():
            return
        try:
            answer = self.reader.answer(self.eof)
        except httpx.RemoteProtocolError as exc:
            waiter.set_exception(exc)
            self.close()
            return
        if answer is not None:
            self.waiter = None
            waiter.set_result(answer)

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
        self.prefix = parts.path.rstrip("/")  # a base URL's own path comes before each path
        default_port = self.port == (443 if self.ssl else 80)
        host = f"[{self.host}]" if ":" in self.host else self.host
        self.fixed_headers = (f"Host: {host}{'' if default_port else f':{self.port}'}\r\n"
                              f"Accept: application/json\r\nUser-Agent: {user_agent}\r\n"
                              ).encode("latin-1")
        self.connect_timeout, self.read_timeout = connect_timeout, read_timeout
        self.max_idle = max_idle
        self._idle: list[_Connection] = []
        self._closed = False

    async def send(self, method: str, target: str, headers: bytes,
                   body: bytes | None) -> Answer:
        """`method target` with these header lines (each ending CRLF) and body; its answer."""
        head = f"{method} {self.prefix}{target} HTTP/1.1\r\n".encode("latin-1")
        if body is not None:
            headers += b"Content-Length: %d\r\n" % len(body)
        data = b"".join((head, self.fixed_headers, headers, b"\r\n", body or b""))
        connection = await self._connection()
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[Answer] = loop.create_future()
        timer = loop.call_later(self.read_timeout, _expire, waiter)
        connection.send(data, waiter)
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
