"""HTTP/1.1 to the payout service on kept-alive connections, with little CPU per request.

httpx's own pool (httpcore over anyio) costs about 1.5 ms of CPU per request: each request
checks every idle connection's socket, opens several cancel scopes and parses its URL and
cookies again. A run makes two small requests per payout to one host, so the client
(provider.client) sends them here instead: one asyncio protocol per connection, kept for
the next request unless the service closes it.

The protocol is spoken here, in the few forms an answer to a client may take (RFC 9112):
a status line and headers (at most 64 KiB), interim 1xx answers skipped, then a body framed
by chunked transfer coding, by Content-Length, or by the connection's close; no body for
204 and 304. Anything else (a malformed status line, header or length, two different
lengths, a chunk cut short) is a broken answer. A connection is kept for the next request
only when both sides may go on: HTTP/1.1, no `Connection: close`, a framed body, and not
one byte beyond the answer. Written by hand, this costs a third of what h11 (httpcore's
parser, which checks every event against its state machine) costs per request.

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
import re
import ssl
from collections.abc import Callable, Sequence
from urllib.parse import quote, urlsplit

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


class ProtocolError(Exception):
    """The bytes are not an HTTP/1.1 answer."""


_STATUS_LINE = re.compile(rb"HTTP/1\.([01]) ([0-9]{3})(?: ([^\r\n]*))?")
_TOKEN = re.compile(rb"[-!#$%&'*+.^_`|~0-9A-Za-z]+")
_FIELD_VALUE = re.compile(rb"[^\x00-\x08\x0a-\x1f\x7f]*")
_CHUNK_SIZE = re.compile(rb"([0-9A-Fa-f]{1,16})[ \t]*(?:;[^\r\n]*)?")
_TARGET = re.compile(r"[\x21-\x7e]+")


def request_bytes(method: str, target: bytes, headers: Sequence[HeaderPair],
                  body: bytes | None) -> bytes:
    """The request's bytes; httpx.LocalProtocolError (nothing sent) for a method, target or
    header that is not one."""
    if not _TOKEN.fullmatch(method.encode("ascii", "replace")):
        raise httpx.LocalProtocolError(f"Illegal method {method!r}.")
    if not _TARGET.fullmatch(target.decode("latin-1")):
        raise httpx.LocalProtocolError("Illegal target characters.")
    lines = [b"%s %s HTTP/1.1\r\n" % (method.encode("ascii"), target)]
    for name, value in headers:
        if not _TOKEN.fullmatch(name) or not _FIELD_VALUE.fullmatch(value) \
                or value != value.strip(b" \t"):
            raise httpx.LocalProtocolError(f"Illegal header {name!r}.")
        lines.append(b"%s: %s\r\n" % (name, value))
    lines.append(b"\r\n")
    if body:
        lines.append(body)
    return b"".join(lines)


class _Answer:
    """An answer being read: its head once whole, then its body as its framing says."""

    __slots__ = ("status", "reason", "headers", "framing", "length", "keeps")

    def __init__(self, status: int, reason: bytes, headers: list[HeaderPair],
                 version: int) -> None:
        self.status, self.reason, self.headers = status, reason, headers
        names = {name.lower(): value for name, value in headers}
        coding = names.get(b"transfer-encoding")
        lengths = {value.strip() for name, value in headers
                   if name.lower() == b"content-length"}
        self.length = 0
        if status in (204, 304):
            self.framing = "none"
        elif coding is not None:
            # chunked only as the last coding; any other coding reads to the close
            self.framing = ("chunked" if coding.split(b",")[-1].strip().lower() == b"chunked"
                            else "close")
        elif lengths:
            if len(lengths) != 1 or not next(iter(lengths)).isdigit():
                raise ProtocolError("a malformed Content-Length")
            self.framing, self.length = "length", int(next(iter(lengths)))
        else:
            self.framing = "close"
        connection = names.get(b"connection", b"").lower()
        self.keeps = (version == 1 and self.framing != "close"
                      and not any(t.strip() == b"close" for t in connection.split(b",")))


def _head(buffer: bytearray, start: int) -> tuple[_Answer, int] | None:
    """The answer's head from `start` (None: not all here yet), and where its body begins;
    interim 1xx answers are skipped."""
    while True:
        end = buffer.find(b"\r\n\r\n", start)
        if end < 0:
            if len(buffer) - start > MAX_HEAD_BYTES:
                raise ProtocolError("an answer's head longer than 64 KiB")
            return None
        if end - start > MAX_HEAD_BYTES:
            raise ProtocolError("an answer's head longer than 64 KiB")
        lines = bytes(buffer[start:end]).split(b"\r\n")
        matched = _STATUS_LINE.fullmatch(lines[0])
        if matched is None:
            raise ProtocolError("not an HTTP/1.1 status line")
        headers: list[HeaderPair] = []
        for line in lines[1:]:
            name, colon, value = line.partition(b":")
            value = value.strip(b" \t")
            if not colon or not _TOKEN.fullmatch(name) or not _FIELD_VALUE.fullmatch(value):
                raise ProtocolError("a malformed header")
            headers.append((name, value))
        status = int(matched.group(2))
        start = end + 4
        if 100 <= status < 200 and status != 101:
            continue  # interim: the answer follows
        if status == 101:
            raise ProtocolError("a protocol switch")
        return _Answer(status, matched.group(3) or b"", headers, int(matched.group(1))), start


def _chunked(buffer: bytearray, start: int) -> tuple[bytes, int] | None:
    """The chunked body from `start` and where it ends (None: not all here yet)."""
    parts: list[bytes] = []
    at = start
    while True:
        line_end = buffer.find(b"\r\n", at)
        if line_end < 0:
            if len(buffer) - at > 1024:
                raise ProtocolError("a malformed chunk size")
            return None
        size = _CHUNK_SIZE.fullmatch(bytes(buffer[at:line_end]))
        if size is None:
            raise ProtocolError("a malformed chunk size")
        length = int(size.group(1), 16)
        at = line_end + 2
        if length == 0:
            break
        if len(buffer) < at + length + 2:
            return None
        parts.append(bytes(buffer[at:at + length]))
        if buffer[at + length:at + length + 2] != b"\r\n":
            raise ProtocolError("a chunk not ended by CRLF")
        at += length + 2
    while True:  # trailers, up to the empty line
        line_end = buffer.find(b"\r\n", at)
        if line_end < 0:
            if len(buffer) - at > MAX_HEAD_BYTES:
                raise ProtocolError("trailers longer than 64 KiB")
            return None
        if line_end == at:
            return b"".join(parts), at + 2
        at = line_end + 2


def read_answer(buffer: bytearray, eof: bool) -> Answer | None:
    """The whole answer in `buffer` (None: more bytes are needed); ProtocolError when the
    bytes are not one, or the connection closed before it was whole."""
    found = _head(buffer, 0)
    if found is None:
        if eof:
            raise ProtocolError("closed before the answer's head" if buffer else "no answer")
        return None
    answer, start = found
    if answer.framing == "none":
        body, end = b"", start
    elif answer.framing == "length":
        end = start + answer.length
        if len(buffer) < end:
            if eof:
                raise ProtocolError("closed mid-body")
            return None
        body = bytes(buffer[start:end])
    elif answer.framing == "chunked":
        chunked = _chunked(buffer, start)
        if chunked is None:
            if eof:
                raise ProtocolError("closed mid-body")
            return None
        body, end = chunked
    else:  # to the close
        if not eof:
            return None
        body, end = bytes(buffer[start:]), len(buffer)
    keep_alive = answer.keeps and end == len(buffer) and not eof
    return Answer(answer.status, answer.reason, answer.headers, body, keep_alive)


class _Connection(asyncio.Protocol):
    """One connection to the service; one request on it at a time."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.waiter: asyncio.Future[Answer] | None = None
        self.buffer = bytearray()
        self.open = False
        self.eof = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport, self.open = transport, True

    def send(self, request: bytes, waiter: asyncio.Future[Answer]) -> None:
        """Write the request whole; its answer is set on `waiter`."""
        assert self.transport is not None
        self.waiter = waiter
        self.buffer.clear()
        self.transport.write(request)

    def data_received(self, data: bytes) -> None:
        if self.waiter is None:  # bytes nobody asked for: this connection is done
            self.close()
            return
        self.buffer += data
        self._check()

    def eof_received(self) -> bool | None:
        self.eof = True
        if self.waiter is not None:
            self._check()
        return False  # closes the transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.open = False
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            if exc is None and not self.eof:
                self.eof = True
                self._check()
            if not waiter.done():
                self.waiter = None
                waiter.set_exception(httpx.RemoteProtocolError(
                    f"Server disconnected without sending a response"
                    f"{f' ({exc})' if exc else ''}."))

    def _check(self) -> None:
        """The answer, once the bytes so far hold it whole, or what broke it."""
        waiter = self.waiter
        if waiter is None or waiter.done():
            return
        try:
            answer = read_answer(self.buffer, self.eof)
        except ProtocolError as exc:
            self.waiter = None
            waiter.set_exception(httpx.RemoteProtocolError(self._broken(exc)))
            self.close()
            return
        if answer is None:
            return
        self.waiter = None
        self.buffer.clear()
        waiter.set_result(answer)

    def _broken(self, exc: ProtocolError) -> str:
        if self.eof and not self.buffer:
            return "Server disconnected without sending a response."
        if self.eof:
            return f"The connection closed mid-answer ({exc})."
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
        request = request_bytes(method, self.prefix + target.encode("ascii"), lines, body)
        connection = await self._connection()
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[Answer] = loop.create_future()
        connection.send(request, waiter)
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
