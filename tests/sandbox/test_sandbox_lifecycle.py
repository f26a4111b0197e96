"""Payout states over time, refunds, signed webhooks, restarts and the `sandbox` command."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner

from batchpay.cli import cli
from batchpay.sandbox.webhooks_out import FIRST_BACKOFF_SECONDS
from tests.support.sandbox_calls import api, held_payouts, new_quote, pay, payout_request
from tests.support.timing import quiet_window, settled

REPO = Path(__file__).resolve().parents[2]
START_NGN = Decimal(10_000_000_000)


def ngn_balance(client: httpx.Client) -> Decimal:
    balance: Decimal = client.get("/v1/wallet", params={"currency": "NGN"}).json(parse_float=Decimal)["data"][0]["balance"]
    return Decimal(balance)


def states_seen(client: httpx.Client, payout_id: str, until: str, seconds: float) -> list[str]:
    """Every state read while polling every 20 ms, without repeats, until `until`."""
    seen: list[str] = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        state = client.get(f"/v1/transaction/{payout_id}").json()["data"]["state"]
        if not seen or seen[-1] != state:
            seen.append(state)
        if state == until:
            break
        time.sleep(0.02)
    return seen


def test_states_follow_time_since_creation(sandbox_factory: Any) -> None:
    running = sandbox_factory(settle_seconds=0.4)
    client = api(running)
    record = pay(client)
    assert record["state"] == "PENDING"
    assert states_seen(client, record["id"], "COMPLETED", 3) == ["PENDING", "PROCESSING", "COMPLETED"]
    time.sleep(quiet_window(running.url, scheduled=0.4))  # a final state moves no more
    assert client.get(f"/v1/transaction/{record['id']}").json()["data"]["state"] == "COMPLETED"


def test_a_fail_remark_ends_failed_then_refunded_and_credits_the_wallet_once(sandbox_factory: Any) -> None:
    running = sandbox_factory(settle_seconds=0.2)
    client = api(running)
    record = pay(client, remark="Fail")
    total = Decimal(str(record["quote"]["summary"]["total"]))
    assert ngn_balance(client) == START_NGN - total
    seen = states_seen(client, record["id"], "REFUNDED", 3)
    assert seen[-2:] == ["FAILED", "REFUNDED"] and seen[0] == "PENDING"
    for _ in range(3):  # however often it is looked at, the credit happened once
        client.get("/v1/transaction", params={"state": "REFUNDED", "page": 0, "size": 100})
        assert ngn_balance(client) == START_NGN
    assert held_payouts(running)[0]["state"] == "REFUNDED"


def test_state_survives_a_restart_and_refunds_stay_single(sandbox_factory: Any, tmp_path: Path) -> None:
    state_file = tmp_path / "state.sqlite3"
    first = sandbox_factory(state_path=state_file, settle_seconds=0.2)
    client = api(first)
    done = pay(client)
    failed = pay(client, remark="fail")
    httpx.put(f"{first.url}/_sandbox/wallet", json={"currency": "USD", "balance": 123.45})
    settled(first.url)  # the failed one refunded, its credit in the wallet
    assert ngn_balance(client) == START_NGN - Decimal(str(done["quote"]["summary"]["total"]))
    before = held_payouts(first)
    first.stop()

    second = sandbox_factory(state_path=state_file, settle_seconds=0.2)
    again = api(second)
    assert held_payouts(second) == before
    assert again.get(f"/v1/transaction/{done['id']}").json()["data"]["state"] == "COMPLETED"
    assert again.get(f"/v1/transaction/{failed['id']}").json()["data"]["state"] == "REFUNDED"
    assert ngn_balance(again) == START_NGN - Decimal(str(done["quote"]["summary"]["total"]))
    assert again.get("/v1/wallet", params={"currency": "USD"}).json()["data"][0]["balance"] == 123.45
    assert again.post("/v2/payout", json=payout_request(done["quote"]["id"])).status_code == 422
    completed = {"state": "COMPLETED", "page": 0, "size": 100}
    assert again.get("/v1/transaction", params=completed).json()["data"][0]["referenceNumber"] == done["referenceNumber"]


class Receiver:
    """A webhook endpoint that records every delivery and refuses the first `refuse` ones."""

    def __init__(self, refuse: int = 0) -> None:
        self.deliveries: list[tuple[dict[str, str], bytes]] = []
        self.refused = 0
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the http.server name
                body = self.rfile.read(int(self.headers["Content-Length"]))
                if receiver.refused < refuse:
                    receiver.refused += 1
                    self.send_response(500)
                else:
                    receiver.deliveries.append((dict(self.headers), body))
                    self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def events(self) -> list[tuple[str, str, str]]:
        return [(json.loads(body)["event"], json.loads(body)["data"]["id"], json.loads(body)["data"]["state"])
                for _, body in self.deliveries]

    def wait_for(self, count: int, seconds: float = 5) -> None:
        deadline = time.monotonic() + seconds
        while len(self.deliveries) < count and time.monotonic() < deadline:
            time.sleep(0.02)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    hook = Receiver(refuse=2)
    yield hook
    hook.server.shutdown()


def test_webhooks_announce_every_state_signed_and_retried(sandbox_factory: Any, receiver: Receiver) -> None:
    secret = "whsec-test"
    running = sandbox_factory(settle_seconds=0.2, webhook_url=receiver.url, webhook_secret=secret)
    client = api(running)
    done, failed = pay(client), pay(client, remark="fail")
    receiver.wait_for(7)
    # nothing more should come: not a late state, not a retry (its backoff), within a
    # window of what the sandbox has scheduled plus round trips measured now
    time.sleep(quiet_window(running.url, scheduled=0.2 + FIRST_BACKOFF_SECONDS))
    assert sorted(receiver.events()) == sorted([
        ("payout.pending", done["id"], "PENDING"),
        ("payout.pending", done["id"], "PROCESSING"),
        ("payout.completed", done["id"], "COMPLETED"),
        ("payout.pending", failed["id"], "PENDING"),
        ("payout.pending", failed["id"], "PROCESSING"),
        ("payout.failed", failed["id"], "FAILED"),
        ("payout.failed", failed["id"], "REFUNDED"),
    ])
    assert receiver.refused == 2  # and yet every event arrived: refused ones were retried
    for headers, body in receiver.deliveries:
        assert headers["X-Signature"] == hmac.new(secret.encode(), body, hashlib.sha512).hexdigest()
        sha256 = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
        assert headers["X-meCash-Signature"] == f"sha256={sha256}"
        record = json.loads(body)["data"]
        assert record["quote"]["id"] and record["referenceNumber"]


def test_set_webhook_points_later_payouts_at_a_new_receiver(sandbox_factory: Any, receiver: Receiver) -> None:
    running = sandbox_factory(settle_seconds=0)
    client = api(running)
    unseen = pay(client)
    running.state.set_webhook(receiver.url, "s3cret")
    seen = pay(client)
    receiver.wait_for(3)
    time.sleep(quiet_window(running.url, scheduled=FIRST_BACKOFF_SECONDS))  # nothing more
    assert sorted(receiver.events()) == sorted([
        ("payout.pending", seen["id"], "PENDING"),
        ("payout.pending", seen["id"], "PROCESSING"),
        ("payout.completed", seen["id"], "COMPLETED"),
    ])
    assert unseen["id"] not in {payout_id for _, payout_id, _ in receiver.events()}


def test_sandbox_command_help() -> None:
    result = CliRunner().invoke(cli, ["sandbox", "--help"])
    assert result.exit_code == 0
    for option in ("--host", "--port", "--api-key", "--latency-ms", "--error-rate", "--drop-rate",
                   "--rate-limit", "--webhook-url", "--webhook-secret", "--settle-seconds",
                   "--quote-ttl", "--seed", "--state"):
        assert option in result.output


@pytest.mark.parametrize(
    "arguments",
    [["--error-rate", "1.5"], ["--rate-limit", "10/fortnight"], ["--port", "-1"],
     ["--quote-ttl", "0"], ["--webhook-url", "nowhere"], ["--latency-ms", "abc"]],
)
def test_sandbox_command_refuses_bad_values(arguments: list[str]) -> None:
    assert CliRunner().invoke(cli, ["sandbox", *arguments]).exit_code == 2


def test_sandbox_command_serves_until_interrupted(tmp_path: Path) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "batchpay", "sandbox", "--port", "0", "--settle-seconds", "0.5",
         "--latency-ms", "1.5", "--state", str(tmp_path / "state.sqlite3")],
        cwd=REPO, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    try:
        assert process.stderr is not None
        banner = []
        for line in process.stderr:
            banner.append(line)
            if "Ctrl-C" in line:
                break
        text = "".join(banner)
        assert "SANDBOX" in text and "sandbox-key" in text
        match = re.search(r"http://127\.0\.0\.1:\d+", text)
        assert match, text
        answer = httpx.get(f"{match.group(0)}/v1/bank", params={"country": "NG", "currency": "NGN"},
                           headers={"X-API-KEY": "sandbox-key"})
        assert answer.status_code == 200 and answer.headers["X-Batchpay-Sandbox"] == "1"
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=10) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert (tmp_path / "state.sqlite3").exists()


def test_a_used_quote_needs_no_new_quote_after_restart(sandbox_factory: Any, tmp_path: Path) -> None:
    # a quote made before a restart can still pay once after it
    state_file = tmp_path / "state.sqlite3"
    first = sandbox_factory(state_path=state_file)
    quote = new_quote(api(first))
    first.stop()
    second = sandbox_factory(state_path=state_file)
    assert api(second).post("/v2/payout", json=payout_request(quote["id"])).status_code == 200
    assert [payout["quoteId"] for payout in held_payouts(second)] == [quote["id"]]
