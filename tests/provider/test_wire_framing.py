"""The client's reading of an HTTP/1.1 answer (provider.wire.read_answer) and writing of a
request (request_bytes): every framing an answer may use, byte by byte as it arrives, and
the answers that are not one."""

from __future__ import annotations

import httpx
import pytest

from batchpay.provider.wire import Answer, ProtocolError, read_answer, request_bytes

BODY = b'{"message":"ok","status":"success","data":[]}'


def arriving(raw: bytes, eof: bool = False) -> list[object]:
    """What read_answer says after each byte of `raw` has arrived (then at EOF, if asked)."""
    buffer = bytearray()
    said: list[object] = []
    for i in range(len(raw)):
        buffer += raw[i:i + 1]
        said.append(read_answer(buffer, False))
    if eof:
        said.append(read_answer(buffer, True))
    return said


@pytest.mark.parametrize("raw, keep", [
    (b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(BODY) + BODY, True),
    (b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nContent-Length: %d\r\n\r\n"
     % (len(BODY), len(BODY)) + BODY, True),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
     b"5;ext=1\r\n" + BODY[:5] + b"\r\n%x\r\n" % (len(BODY) - 5) + BODY[5:] + b"\r\n0\r\n\r\n",
     True),
    (b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 102 Processing\r\nX: y\r\n\r\n"
     b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(BODY) + BODY, True),
    (b"HTTP/1.1 200 OK\r\nConnection: keep-alive, close\r\nContent-Length: %d\r\n\r\n"
     % len(BODY) + BODY, False),
    (b"HTTP/1.0 200 OK\r\nContent-Length: %d\r\n\r\n" % len(BODY) + BODY, False),
])
def test_an_answer_is_read_whole_only_once_all_of_it_arrived(raw: bytes, keep: bool) -> None:
    said = arriving(raw)
    assert all(s is None for s in said[:-1])
    answer = said[-1]
    assert isinstance(answer, Answer) and answer.status == 200 and answer.body == BODY
    assert answer.keep_alive is keep


def test_a_body_to_the_close_and_an_empty_204() -> None:
    raw = b"HTTP/1.1 200 OK\r\n\r\n" + BODY
    assert all(s is None for s in arriving(raw))
    answer = read_answer(bytearray(raw), True)
    assert answer is not None and answer.body == BODY and not answer.keep_alive
    empty = read_answer(bytearray(b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n"), False)
    assert empty is not None and empty.status == 204 and empty.body == b"" and empty.keep_alive


def test_bytes_beyond_the_answer_keep_no_connection() -> None:
    raw = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}HTTP"
    answer = read_answer(bytearray(raw), False)
    assert answer is not None and answer.body == b"{}" and not answer.keep_alive


@pytest.mark.parametrize("raw", [
    b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}",
    b"HTTP/1.1 200 OK\r\nContent-Length: -2\r\n\r\n{}",
    b"HTTP/1.1 200 OK\r\nBad Header: 1\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nno colon\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nX: 1\r\n folded\r\n\r\n",
    b"HTTP/2 200 OK\r\n\r\n",
    b"HTTP/1.1 2000 OK\r\n\r\n",
    b"HTTP/1.1 101 Switching Protocols\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}XX0\r\n\r\n",
])
def test_what_is_not_an_answer_is_refused(raw: bytes) -> None:
    with pytest.raises(ProtocolError):
        read_answer(bytearray(raw), False)


@pytest.mark.parametrize("raw", [
    b"",
    b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n{}",
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{}",
    b"HTTP/1.1 200 OK\r\nContent-",
])
def test_a_close_before_the_answer_is_whole_is_a_broken_answer(raw: bytes) -> None:
    assert read_answer(bytearray(raw), False) is None
    with pytest.raises(ProtocolError):
        read_answer(bytearray(raw), True)


def test_a_head_past_64_kib_is_refused_before_it_ends() -> None:
    with pytest.raises(ProtocolError):
        read_answer(bytearray(b"HTTP/1.1 200 OK\r\nX: " + b"a" * 70_000), False)


def test_a_request_is_written_as_httpx_writes_it_and_a_bad_one_not_at_all() -> None:
    lines = [(b"Host", b"example.com"), (b"Content-Length", b"2")]
    assert request_bytes("POST", b"/v1/quote?a=1", lines, b"{}") == (
        b"POST /v1/quote?a=1 HTTP/1.1\r\nHost: example.com\r\nContent-Length: 2\r\n\r\n{}")
    for method, target, headers in [
            ("PO ST", b"/", lines), ("GET", b"/a b", lines), ("GET", b"/\r\nX: 1", lines),
            ("GET", b"/", [(b"X", b"1\r\nY: 2")]), ("GET", b"/", [(b"Bad Name", b"1")])]:
        with pytest.raises(httpx.LocalProtocolError):
            request_bytes(method, target, headers, None)
