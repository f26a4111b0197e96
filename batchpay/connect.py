"""Open the payout service a command talks to: the configured one, or the embedded sandbox.

With no base URL set, commands start the sandbox in-process on loopback, its state kept
beside the journal, so that a later `run`, `sync` or `report` sees the same payouts and
no real money can move by accident. A run on the embedded sandbox also gets a webhook
listener of its own (`listen=True`): statuses arrive by signed webhooks, as from the real
service. The engine is handed `lambda: open_service(...)` and calls it where it needs the
service; it builds none of this.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from batchpay.errors import ConfigError
from batchpay.files import private_dir
from batchpay.service import Service
from batchpay.settings.model import Settings

if TYPE_CHECKING:
    from batchpay.sandbox.server import RunningSandbox

SANDBOX_STATE_FILE = "sandbox-state.sqlite3"


@contextmanager
def open_service(settings: Settings, *, listen: bool = False) -> Iterator[Service]:
    if not settings.embedded:
        if not settings.api_key:
            raise ConfigError(
                f"No API key for {settings.base_url}.",
                hint="Set BATCHPAY_API_KEY (or api_key in your own settings file, readable by you "
                "only).",
            )
        yield Service(str(settings.base_url).rstrip("/"), settings.api_key, embedded=False)
        return

    from batchpay.sandbox.config import SandboxConfig
    from batchpay.sandbox.server import start_in_thread

    state = private_dir(settings.local_folder) / SANDBOX_STATE_FILE
    running = start_in_thread(SandboxConfig(port=0, state_path=state))
    try:
        service = Service(running.url, running.api_key, embedded=True)
        if not listen:
            yield service
            return
        with _listener(settings, running, service):
            yield service
    finally:
        running.stop()


@contextmanager
def _listener(settings: Settings, running: RunningSandbox, service: Service) -> Iterator[None]:
    """A webhook listener writing to the run's journal (confirming failures with the
    sandbox), and the sandbox pointed at it."""
    from batchpay.serving import ServerThread
    from batchpay.webhooks import SignatureCheck, confirming_listener, random_secret

    secret = random_secret()
    app = confirming_listener(settings, SignatureCheck(secret, settings.headers,
                                                       settings.signature_algorithms), service)
    with ServerThread(app, what="webhook listener") as listener:
        running.state.set_webhook(listener.url + "/webhook", secret)
        try:
            yield
        finally:
            running.state.set_webhook(None, None)
