"""Webhook receiver: check the signature over the raw body, then move the journal forward.

The service signs the raw body: `X-Signature` is the hex HMAC-SHA512 and
`X-meCash-Signature` is `sha256=<hex HMAC-SHA256>` (header names and the accepted
algorithms are settings). A missing or wrong signature gets 401 and changes nothing.
What a signed event does to the journal is the engine's (engine.doubt.apply_event): the
state moves forward only, and an event about a payout the journal does not know by id is
matched by its quote against a row in doubt. A signature proves only that the sender holds
the secret: an event that says FAILED or REFUNDED (which frees a row to be paid again) is
first looked up at the service (`GET /v1/transaction/{id}`, engine.doubt.service_lookup),
and applied only as the service's own record confirms it; otherwise it is recorded as a
claim and changes no status.

A body is read only up to `MAX_BODY_BYTES` (413 beyond, before anything else is read) and
within `BODY_TIMEOUT_SECONDS` (408): a payout event is a few kilobytes, and a sender that
trickles or floods must not hold the receiver. Connections that send no request at all are
cut by the server (`batchpay.serving`).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import json
import secrets
import socket
import threading
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from batchpay.engine.doubt import PayoutLookup, apply_event, service_lookup, to_confirm
from batchpay.errors import ConfigError
from batchpay.journal.store import Journal
from batchpay.provider.endpoints import Headers
from batchpay.settings.model import JournalLocation, Settings, is_loopback_host

if TYPE_CHECKING:
    from batchpay.service import Service

ALGORITHMS = {"sha512": hashlib.sha512, "sha256": hashlib.sha256}
MAX_BODY_BYTES = 1 << 20
BODY_TIMEOUT_SECONDS = 10.0
MIN_SECRET_BYTES = 16


class _BodyRefused(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


async def read_bounded(request: Any) -> bytes:
    """The raw body, at most MAX_BODY_BYTES and within BODY_TIMEOUT_SECONDS."""
    declared = request.headers.get("content-length")
    if declared is not None and (not declared.isdigit() or int(declared) > MAX_BODY_BYTES):
        raise _BodyRefused(413, f"body larger than {MAX_BODY_BYTES} bytes")
    chunks: list[bytes] = []
    size = 0
    try:
        async with asyncio.timeout(BODY_TIMEOUT_SECONDS):
            async for chunk in request.stream():
                size += len(chunk)
                if size > MAX_BODY_BYTES:
                    raise _BodyRefused(413, f"body larger than {MAX_BODY_BYTES} bytes")
                chunks.append(chunk)
    except TimeoutError:
        raise _BodyRefused(408, "body not received in time") from None
    return b"".join(chunks)


@dataclass(frozen=True)
class SignatureCheck:
    secret: str | None  # None: --insecure-no-signature
    headers: Headers = Headers()
    algorithms: tuple[str, ...] = ("sha512", "sha256")

    def verify(self, raw: bytes, headers: Mapping[str, str]) -> bool:
        if self.secret is None:
            return True
        key = self.secret.encode()
        for algo in self.algorithms:
            name = self.headers.signature_sha512 if algo == "sha512" else self.headers.signature_sha256
            given = headers.get(name)
            if not given:
                continue
            given = given.strip()
            if algo == "sha256" and given.lower().startswith("sha256="):
                given = given[len("sha256="):]
            expected = hmac.new(key, raw, ALGORITHMS[algo]).hexdigest().encode()
            # compared as bytes: compare_digest refuses str with non-ASCII characters, and a
            # forged header must get 401, not a 500
            if hmac.compare_digest(expected, given.lower().encode("utf-8", "replace")):
                return True
        return False


def sign(raw: bytes, secret: str) -> dict[str, str]:
    """The headers the service sends (used by tests and by the sandbox's description)."""
    key = secret.encode()
    return {
        "X-Signature": hmac.new(key, raw, hashlib.sha512).hexdigest(),
        "X-meCash-Signature": "sha256=" + hmac.new(key, raw, hashlib.sha256).hexdigest(),
    }


def create_listener(journal_path: Path | str, check: SignatureCheck,
                    lookup: PayoutLookup | None = None) -> Any:
    """The Starlette app of `batchpay listen` (and of the listener embedded in `run`).
    `lookup` reads a payout's record from the service, to confirm a FAILED or REFUNDED
    before it is applied; without one, every such event stays a claim."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    # its own connection: it writes beside a run. A journal that is not there is refused: a
    # new empty one would answer 200 to every event and record nothing.
    journal = Journal.existing(journal_path)
    lock = threading.Lock()

    async def receive(request: Request) -> JSONResponse:
        try:
            raw = await read_bounded(request)
        except _BodyRefused as refused:
            return JSONResponse({"message": refused.message, "status": "failed"},
                                refused.status, headers={"Connection": "close"})
        if not check.verify(raw, request.headers):
            return JSONResponse({"message": "invalid signature", "status": "failed"}, 401)
        try:
            payload = json.loads(raw)
        except ValueError:
            return JSONResponse({"message": "body is not JSON", "status": "failed"}, 400)
        with lock:
            payout_id = to_confirm(journal, payload)
        # asked outside the lock: other deliveries go on meanwhile
        record = await lookup(payout_id) if payout_id and lookup is not None else None
        with lock:
            result = apply_event(journal, payload, record)
        return JSONResponse({"message": result, "status": "success"})

    async def health(request: Request) -> JSONResponse:
        return JSONResponse({"status": "success", "message": "listening"})

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        journal.close()

    app = Starlette(routes=[Route("/", receive, methods=["POST"]),
                            Route("/webhook", receive, methods=["POST"]),
                            Route("/health", health, methods=["GET"])],
                    lifespan=lifespan)
    app.state.journal = journal
    return app


def confirming_listener(settings: Settings, check: SignatureCheck, service: Service) -> Any:
    """The listener of `settings.journal` that confirms failures with `service`."""
    return create_listener(settings.journal, check, service_lookup(settings, service))


def listener_check(settings: Settings, *, host: str, insecure: bool) -> SignatureCheck:
    """The policy of `batchpay listen`, checked before anything is opened or bound: a secret
    long enough to sign with, and unsigned events only on loopback."""
    if insecure:
        if not is_loopback_host(host):
            raise ConfigError(
                f"--insecure-no-signature only listens on loopback, not on {host}: anyone "
                "who can reach the port could change your journal.",
                hint="Set BATCHPAY_WEBHOOK_SECRET and drop --insecure-no-signature, or "
                "listen on 127.0.0.1.")
    elif not settings.webhook_secret:
        raise ConfigError("No webhook secret: the listener would accept forged events.",
                          hint="Set BATCHPAY_WEBHOOK_SECRET to the secret the service signs "
                          "with (or, for tests only, --insecure-no-signature).")
    elif len(settings.webhook_secret.encode()) < MIN_SECRET_BYTES:
        raise ConfigError(
            f"The webhook secret is shorter than {MIN_SECRET_BYTES} bytes: signatures made "
            "with it can be guessed.",
            hint="Set a longer secret at the service and in BATCHPAY_WEBHOOK_SECRET.")
    secret = None if insecure else settings.webhook_secret
    return SignatureCheck(secret, settings.headers, settings.signature_algorithms)


@dataclass(frozen=True)
class Listening:
    """What `batchpay listen` serves: the app on its bound socket, and what to tell."""

    app: Any
    socket: socket.socket
    url: str  # where the service posts events
    journal: JournalLocation  # a file, or a database address (shown_journal prints it)
    insecure: bool  # signatures are not checked (--insecure-no-signature)


def open_listener(settings: Settings, service: Service | None = None, *, host: str | None = None,
                  port: int | None = None, insecure: bool = False) -> Listening:
    """`batchpay listen` up to serving: the secret policy (`listener_check`) before anything
    is opened, then the journal's app and its socket (host and port default to the
    settings'). A FAILED or REFUNDED is confirmed with `service` (none: every one stays a
    claim). `serving.serve_foreground(listening.app, listening.socket)` serves it."""
    from batchpay.serving import bind, url_of

    host = host or settings.listen_host
    check = listener_check(settings, host=host, insecure=insecure)
    lookup = service_lookup(settings, service) if service is not None else None
    app = create_listener(settings.journal, check, lookup)
    try:
        sock = bind(host, settings.listen_port if port is None else port, "webhook listener")
    except BaseException:
        app.state.journal.close()  # never served: its lifespan would not close it
        raise
    return Listening(app, sock, url_of(sock) + "/webhook", settings.journal, insecure)


def random_secret() -> str:
    return secrets.token_hex(32)
