"""The client's own HTTP/1.1 connections (provider.wire): answers read whole, connections
kept and reused, and every failure told as never sent (definite) or answer lost (in doubt),
as with httpx. Against the real sandbox, and against a raw socket server that answers in
the ways a service or a proxy in front of it may."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from decimal import Decimal
from typing import Any

import pytest

from batchpay.provider.client import PayoutClient
from batchpay.provider.errors import ConnectFailed, ResponseLost, ServiceError
from tests.support.e2e import sandbox_payouts, sandbox_stats
from tests.support.sandbox_calls import payout_request

ENVELOPE = b'{"message":"ok","status":"success","data":[]}'
Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


async def read_request(reader: asyncio.StreamReader) -> bytes:
    head = await reader.readuntil(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    return head + (await reader.readexactly(length) if length else b"")


def answered(*answers: bytes, then_close: bool = False) -> tuple[Handler, list[int]]:
    """A handler that answers each request on a connection with the next of `answers`, and
    counts the connections it was given."""
    connections: list[int] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(1)
        try:
            for answer in answers:
                await read_request(reader)
                writer.write(answer)
                await writer.drain()
            if not then_close:
                await reader.read()  # keep the connection until the client leaves
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    return handle, connections


async def with_server(handle: Handler, calls: Callable[[PayoutClient], Awaitable[Any]],
                      **client: Any) -> Any:
    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        async with PayoutClient(f"http://127.0.0.1:{port}", "key", **client) as c:
            assert c._wire is not None  # these requests take the client's own connections
            return await calls(c)
    finally:
        server.close()


def run(handle: Handler, calls: Callable[[PayoutClient], Awaitable[Any]], **client: Any) -> Any:
    return asyncio.run(with_server(handle, calls, **client))


def ok(body: bytes = ENVELOPE, *extra: bytes) -> bytes:
    return (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" + b"".join(extra)
            + b"Content-Length: %d\r\n\r\n" % len(body) + body)


def test_the_sandbox_is_paid_on_kept_connections(sandbox: Any) -> None:
    async def main() -> None:
        async with PayoutClient(sandbox.url, sandbox.api_key, concurrency=4) as client:
            assert client._wire is not None

            async def one() -> None:
                quote = await client.create_quote(source_amount=Decimal("100000.50"),
                                                  source_currency="NGN", source_country="NG")
                await client.submit_payout(payout_request(quote.id))

            await asyncio.gather(*(one() for _ in range(12)))
            assert client.is_sandbox

    asyncio.run(main())
    assert len(sandbox_payouts(sandbox.url)) == 12
    assert sandbox_stats(sandbox.url)["requests"]["POST /v2/payout 200"] == 12


def test_one_connection_serves_request_after_request() -> None:
    handle, connections = answered(ok(), ok(), ok())

    async def calls(client: PayoutClient) -> None:
        for _ in range(3):
            assert await client.wallets() == []

    run(handle, calls, concurrency=1)
    assert len(connections) == 1


def test_a_connection_the_service_closed_is_not_used_again() -> None:
    handle, connections = answered(ok(), then_close=True)

    async def calls(client: PayoutClient) -> None:
        await client.wallets()
        await asyncio.sleep(0.1)  # the service's close arrives while the connection is idle
        await client.wallets()

    run(handle, calls, concurrency=1)
    assert len(connections) == 2


def test_chunked_and_interim_answers_and_connection_close() -> None:
    chunked = (b"HTTP/1.1 100 Continue\r\n\r\n"
               b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
               b"10\r\n" + ENVELOPE[:16] + b"\r\n"
               + b"%x\r\n" % (len(ENVELOPE) - 16) + ENVELOPE[16:] + b"\r\n0\r\nX-T: 1\r\n\r\n")
    to_the_end = b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n" + ENVELOPE
    handle, connections = answered(chunked, to_the_end, then_close=True)

    async def calls(client: PayoutClient) -> None:
        assert await client.wallets() == []
        assert await client.wallets() == []

    run(handle, calls, concurrency=1)
    assert len(connections) == 1


def test_a_refused_connection_sent_nothing() -> None:
    async def main() -> None:
        server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        server.close()
        await server.wait_closed()
        async with PayoutClient(f"http://127.0.0.1:{port}", "key") as client:
            with pytest.raises(ConnectFailed) as caught:
                await client.submit_payout(payout_request("q-1"))
            assert caught.value.definite

    asyncio.run(main())


@pytest.mark.parametrize("answer", [
    b"",  # closed without a word
    b"HTTP/1.1 200 OK\r\nContent-Length: 500\r\n\r\n{\"message\"",  # closed mid-body
    b"garbage\r\n\r\n",  # not HTTP
    b"HTTP/1.1 200 OK\r\nContent-Length: 5x\r\n\r\n{}",  # a malformed Content-Length
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n40\r\n{\"message\"",  # mid-chunk
    b"HTTP/1.1 100 Continue\r\n\r\n",  # only the interim answer
])
def test_a_payout_whose_answer_is_lost_is_in_doubt(answer: bytes) -> None:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(answer)
        await writer.drain()
        writer.close()

    async def calls(client: PayoutClient) -> None:
        with pytest.raises(ResponseLost) as caught:
            await client.submit_payout(payout_request("q-1"))
        assert not caught.value.definite

    run(handle, calls)


def test_a_head_that_never_ends_is_refused_without_waiting_out_the_timeout() -> None:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nX-Long: " + b"a" * 70_000)
        await writer.drain()
        await asyncio.sleep(2)
        writer.close()

    async def calls(client: PayoutClient) -> None:
        with pytest.raises(ResponseLost) as caught:
            await client.submit_payout(payout_request("q-1"))
        assert not caught.value.definite and "RemoteProtocolError" in caught.value.message

    run(handle, calls, read_timeout=1.5)


def test_bytes_beyond_the_answer_leave_the_connection_unused() -> None:
    """Bytes nobody asked for would be taken for the next request's answer."""
    handle, connections = answered(ok() + ok(b'{"stray":1}'), then_close=False)

    async def calls(client: PayoutClient) -> None:
        assert await client.wallets() == []
        assert await client.wallets() == []

    run(handle, calls, concurrency=1)
    assert len(connections) == 2


def test_no_answer_within_the_read_timeout_is_in_doubt() -> None:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        await asyncio.sleep(2)
        writer.close()

    async def calls(client: PayoutClient) -> None:
        with pytest.raises(ResponseLost) as caught:
            await client.submit_payout(payout_request("q-1"))
        assert not caught.value.definite and "ReadTimeout" in caught.value.message

    run(handle, calls, read_timeout=0.2)


def test_the_request_is_what_httpx_would_send() -> None:
    """The same method, path, query, key header and exact body bytes, Host first."""
    seen: list[bytes] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen.append(await read_request(reader))
        writer.write(b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n")
        await writer.drain()
        writer.close()

    async def calls(client: PayoutClient) -> None:
        with pytest.raises(ServiceError):
            await client.submit_payout({"quoteId": "q 1", "amount": Decimal("1.10")})
        with pytest.raises(ServiceError):
            await client.list_payouts(state="PENDING", page=0)

    run(handle, calls, retry=None)
    payout, listing = seen[0], seen[-1]
    host = payout.split(b"\r\n")[1]
    assert host.startswith(b"Host: 127.0.0.1:") and host[16:].isdigit()
    common = host + b"\r\nAccept: application/json\r\nUser-Agent: batchpay\r\nX-API-KEY: key\r\n"
    assert payout == (b"POST /v2/payout HTTP/1.1\r\n" + common
                      + b"Content-Type: application/json\r\nContent-Length: 31\r\n\r\n"
                      + b'{"quoteId":"q 1","amount":1.10}')
    assert listing == (b"GET /v1/transaction?state=PENDING&page=0&size=100 HTTP/1.1\r\n"
                       + common + b"\r\n")
