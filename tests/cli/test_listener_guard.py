"""The webhook listener holds against hostile senders: bounded bodies, connections that say
nothing, weak secrets, unsigned events off loopback, and a journal that is not there."""

from __future__ import annotations

import contextlib
import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from batchpay import serving
from batchpay.journal.store import Journal
from batchpay.serving import ServerThread
from batchpay.webhooks import MAX_BODY_BYTES, SignatureCheck, create_listener, sign
from tests.support.e2e import TLS, batchpay
from tests.support.timing import until

SECRET = "whsec-guard-test-0123456789"


def completed_event() -> bytes:
    return json.dumps({"event": "payout.completed",
                       "data": {"id": "p1", "state": "COMPLETED", "quote": {"id": "q1"},
                                "referenceNumber": "ABCDEFGHJK123"}}).encode()


@pytest.fixture
def journal_path(tmp_path: Path) -> Path:
    path = tmp_path / "journal.sqlite3"
    with Journal(path) as j:
        attempt = j.record_intent("R1", "run-1", "{}", {"id": "q1"}, {"quoteId": "q1"},
                                  expires_at=9e9)
        j.record_answer(attempt, "accepted", status="PENDING", run_id="run-1", payout_id="p1")
    return path


@pytest.fixture
def listener(journal_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setattr(serving, "HEAD_TIMEOUT_SECONDS", 1.0)
    monkeypatch.setattr(serving, "MAX_IDLE_CONNECTIONS", 50)
    app = create_listener(journal_path, SignatureCheck(SECRET))
    with ServerThread(app, what="webhook listener") as server:
        yield server.url + "/webhook"


def status_of(journal_path: Path) -> str:
    with Journal(journal_path) as j:
        entry = j.entry("R1")
        assert entry is not None
        return entry.status


def test_an_oversized_body_is_refused_before_it_is_read(listener: str,
                                                         journal_path: Path) -> None:
    body = b'{"pad": "' + b"x" * MAX_BODY_BYTES + b'"}'
    answer = httpx.post(listener, content=body, headers=sign(body, SECRET), timeout=10, verify=TLS)
    assert answer.status_code == 413

    def chunks() -> Iterator[bytes]:  # no Content-Length: counted as it arrives
        for _ in range(20):
            yield b"x" * 65536

    answer = httpx.post(listener, content=chunks(), timeout=10, verify=TLS)
    assert answer.status_code == 413
    assert status_of(journal_path) == "PENDING"
    body = completed_event()  # the listener still serves a real delivery
    assert httpx.post(listener, content=body, headers=sign(body, SECRET), verify=TLS).status_code == 200
    assert status_of(journal_path) == "COMPLETED"


def test_a_connection_that_sends_no_complete_request_head_is_closed(listener: str) -> None:
    host, port = listener.removeprefix("http://").split("/")[0].split(":")
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(b"POST /webhook HTTP/1.1\r\nHost: x\r\n")  # and never the rest
        started = time.monotonic()
        assert sock.recv(1024) == b""  # closed by the listener
        assert time.monotonic() - started < 4


def test_idle_connections_cannot_starve_a_signed_delivery(listener: str,
                                                          journal_path: Path) -> None:
    host, port = listener.removeprefix("http://").split("/")[0].split(":")
    idle = [socket.create_connection((host, int(port)), timeout=5) for _ in range(300)]
    try:
        body = completed_event()
        started = time.monotonic()
        answer = httpx.post(listener, content=body, headers=sign(body, SECRET), timeout=10, verify=TLS)
        assert answer.status_code == 200
        assert time.monotonic() - started < 5
        assert status_of(journal_path) == "COMPLETED"
        closed: set[int] = set()

        def room_made() -> bool:  # the oldest idle connections closed by the listener
            for n, sock in enumerate(idle):
                if n not in closed:
                    sock.setblocking(False)
                    with contextlib.suppress(BlockingIOError):
                        if sock.recv(1) == b"":
                            closed.add(n)
            return len(closed) >= 250

        until(room_made, seconds=10)
        assert len(closed) >= 250  # the oldest idle connections made room (50 may stay)
    finally:
        for sock in idle:
            sock.close()


@pytest.fixture
def listen_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    for var in ("BATCHPAY_BASE_URL", "BATCHPAY_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    journal = tmp_path / "journal.sqlite3"
    monkeypatch.setenv("BATCHPAY_JOURNAL", str(journal))
    return journal


def test_listen_refuses_a_short_secret(listen_env: Path, journal_path: Path,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BATCHPAY_JOURNAL", str(journal_path))
    monkeypatch.setenv("BATCHPAY_WEBHOOK_SECRET", "short-secret")
    result = batchpay("listen", "--port", "0")
    assert result.exit_code == 2
    assert "shorter than 16 bytes" in result.stderr
    assert "short-secret" not in result.stderr + result.stdout


def test_listen_refuses_unsigned_events_off_loopback(listen_env: Path, journal_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BATCHPAY_JOURNAL", str(journal_path))
    result = batchpay("listen", "--host", "0.0.0.0", "--port", "0", "--insecure-no-signature")
    assert result.exit_code == 2
    assert "loopback" in result.stderr


def test_listen_refuses_a_journal_that_does_not_exist(listen_env: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BATCHPAY_WEBHOOK_SECRET", SECRET)
    result = batchpay("listen", "--port", "0")
    assert result.exit_code == 2
    assert "No journal at" in result.stderr
    assert not listen_env.exists()  # nothing was created
