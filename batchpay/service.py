"""The payout service a command talks to, as the engine receives it: opened already.

Opening one (the configured service, or the embedded sandbox with its webhook listener) is
the commands' job (`batchpay.connect`); the engine only uses the opened value.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass

EMBEDDED = "embedded"


@dataclass(frozen=True)
class Service:
    base_url: str
    api_key: str | None
    embedded: bool

    @property
    def identity(self) -> str:
        """What the journal records as its service: `embedded` whatever the port."""
        return EMBEDDED if self.embedded else self.base_url

    def __repr__(self) -> str:  # never show the key
        return f"Service(base_url={self.base_url!r}, embedded={self.embedded})"


# opens a service when it is needed, and closes it after (validate's bank-name check opens
# one only when its cache of today's bank directory misses)
Opener = Callable[[], AbstractContextManager[Service]]
