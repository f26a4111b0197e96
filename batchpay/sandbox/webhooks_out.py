"""Webhooks the sandbox sends: every state change of a payout, signed, retried with backoff.

A background thread looks at the books every TICK_SECONDS (or sooner when woken) and
announces each state a payout went through since the last look, oldest first; a pool of
sender threads POSTs them. Events of one payout may arrive out of order, as on the real
service. Body: {"event": name, "data": <payout record in that state>}; headers:
X-Signature = hex HMAC-SHA512 of the raw body, X-meCash-Signature = "sha256=" + hex
HMAC-SHA256, both keyed with the webhook secret (an empty key when none is set).
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

import httpx

from batchpay.sandbox.wire import Payout, dumps
from batchpay.tls import verifying_context

if TYPE_CHECKING:
    from batchpay.sandbox.state import SandboxState

EVENT_NAMES = {
    "PENDING": "payout.pending",
    "PROCESSING": "payout.pending",
    "COMPLETED": "payout.completed",
    "FAILED": "payout.failed",
    "REFUNDED": "payout.failed",
}
TICK_SECONDS = 0.05
ATTEMPTS = 5
FIRST_BACKOFF_SECONDS = 0.2  # then 0.4, 0.8, 1.6: about 3 s in all, bounded
TIMEOUT_SECONDS = 10.0  # the provider gives a receiver 10 s to answer
SENDERS = 4

log = logging.getLogger("batchpay.sandbox.webhooks")


def signature_headers(body: bytes, secret: str | None) -> dict[str, str]:
    key = (secret or "").encode("utf-8")
    return {
        "X-Signature": hmac.new(key, body, hashlib.sha512).hexdigest(),
        "X-meCash-Signature": "sha256=" + hmac.new(key, body, hashlib.sha256).hexdigest(),
    }


def event_body(state: str, record: Payout) -> bytes:
    return dumps({"event": EVENT_NAMES[state], "data": record}).encode("utf-8")


class WebhookDispatcher:
    """Notices state changes and delivers them; start() once, stop() at shutdown."""

    def __init__(self, state: SandboxState) -> None:
        self.state = state
        self.delivered = 0  # counts, for tests and the shutdown line
        self.failed = 0
        self._count_lock = threading.Lock()
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._pool = ThreadPoolExecutor(SENDERS, thread_name_prefix="sandbox-webhook")
        self._client = httpx.Client(timeout=TIMEOUT_SECONDS, verify=verifying_context())
        self._thread = threading.Thread(target=self._watch, name="sandbox-webhooks", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def wake(self) -> None:
        """Look now (a payout was just created: its PENDING event should not wait)."""
        self._wake.set()

    def stop(self) -> None:
        self._stopping.set()
        self._wake.set()
        self._thread.join(timeout=5)
        self._pool.shutdown(wait=False, cancel_futures=True)
        self._client.close()

    def _watch(self) -> None:
        while not self._stopping.is_set():
            self._wake.wait(TICK_SECONDS)
            self._wake.clear()
            if self._stopping.is_set():
                return
            url, secret = self.state.webhook_target()
            if url is None:
                continue
            try:
                events = self.state.due_webhook_events()
            except Exception:  # the books closed under us at shutdown: nothing left to do
                log.exception("cannot read payouts for webhooks")
                continue
            for state, record in events:
                self._pool.submit(self._deliver, url, secret, event_body(state, record))

    def _deliver(self, url: str, secret: str | None, body: bytes) -> None:
        headers = {"Content-Type": "application/json", **signature_headers(body, secret)}
        backoff = FIRST_BACKOFF_SECONDS
        for attempt in range(1, ATTEMPTS + 1):
            try:
                response = self._client.post(url, content=body, headers=headers)
                if response.is_success:
                    with self._count_lock:
                        self.delivered += 1
                    return
            except httpx.HTTPError as exc:
                log.debug("webhook attempt %d to %s failed: %s", attempt, url, exc)
            if attempt < ATTEMPTS and self._stopping.wait(backoff):
                return
            backoff *= 2
        with self._count_lock:
            self.failed += 1
        log.warning("webhook to %s not accepted after %d attempts", url, ATTEMPTS)
