"""Which payout service a command talks to: the configured one, or the embedded sandbox.

With no base URL set, commands start the sandbox in-process on loopback, its state kept
beside the journal, so that a later `run`, `sync` or `report` sees the same payouts and
no real money can move by accident.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from batchpay.config import Settings
from batchpay.errors import ConfigError
from batchpay.files import private_dir

EMBEDDED = "embedded"
SANDBOX_STATE_FILE = "sandbox-state.sqlite3"


@dataclass
class Service:
    base_url: str
    api_key: str | None
    embedded: bool
    sandbox: Any = None  # the RunningSandbox when embedded

    @property
    def identity(self) -> str:
        """What the journal records as its service: `embedded` whatever the port."""
        return EMBEDDED if self.embedded else self.base_url

    def __repr__(self) -> str:  # never show the key
        return f"Service(base_url={self.base_url!r}, embedded={self.embedded})"


@contextmanager
def open_service(settings: Settings, *, settle_seconds: float | None = None) -> Iterator[Service]:
    if not settings.embedded:
        if not settings.api_key:
            raise ConfigError(
                f"No API key for {settings.base_url}.",
                hint="Set BATCHPAY_API_KEY (or api_key in a batchpay.toml readable by you only).",
            )
        yield Service(str(settings.base_url).rstrip("/"), settings.api_key, embedded=False)
        return

    from batchpay.sandbox.app import SandboxConfig
    from batchpay.sandbox.server import start_in_thread

    state = private_dir(settings.journal.parent) / SANDBOX_STATE_FILE
    config = SandboxConfig(port=0, state_path=state)
    if settle_seconds is not None:
        config = dataclasses.replace(config, settle_seconds=settle_seconds)
    running = start_in_thread(config)
    try:
        yield Service(running.url, running.api_key, embedded=True, sandbox=running)
    finally:
        running.stop()
