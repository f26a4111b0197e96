"""How a sandbox runs: where it listens, the key it accepts, the faults it injects.

Its own module so that the app and the state both read it without importing each other."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from batchpay.errors import UsageError
from batchpay.sandbox import rates
from batchpay.sandbox.faults import parse_rate_limit


@dataclass
class SandboxConfig:
    """How a sandbox runs: where it listens, the key it accepts, the faults it injects."""

    host: str = "127.0.0.1"
    port: int = 8787
    api_key: str = "sandbox-key"
    latency_ms: float = 0
    error_rate: float = 0
    drop_rate: float = 0
    rate_limit: str | None = None  # "100/min,1000/hour"
    # answers carry X-Batchpay-Sandbox-Windows: on, so that clients keep the provider's
    # windows (their rate_limit setting) as against a real service, to try them here
    client_windows: bool = False
    webhook_url: str | None = None
    webhook_secret: str | None = None
    settle_seconds: float = 2.0
    quote_ttl: float = 600
    seed: int = 0
    state_path: Path | None = None
    rounding: str = "half-up"  # of the quote's target amount: half-up | half-even | down | up
    rate_drift: float = 0  # a pair's rate moves by up to this fraction every few quotes
    payout_list: bool = True  # False: GET /v1/transaction answers 404, as if the service had none

    def __post_init__(self) -> None:
        if self.state_path is not None:
            self.state_path = Path(self.state_path)
        problems = []
        if not 0 <= self.port <= 65535:
            problems.append(f"port {self.port} is not 0-65535")
        if not self.api_key:
            problems.append("the API key is empty")
        for name in ("error_rate", "drop_rate"):
            if not 0 <= getattr(self, name) <= 1:
                problems.append(f"{name} {getattr(self, name)} is not between 0 and 1")
        for name in ("latency_ms", "settle_seconds"):
            if not getattr(self, name) >= 0:
                problems.append(f"{name} {getattr(self, name)} is negative")
        if self.rounding not in rates.ROUNDING_MODES:
            problems.append(f"rounding {self.rounding!r} is not one of "
                            f"{', '.join(rates.ROUNDING_MODES)}")
        if not 0 <= self.rate_drift <= 0.1:
            problems.append(f"rate drift {self.rate_drift} is not between 0 and 0.1")
        if not self.quote_ttl > 0:
            problems.append(f"quote_ttl {self.quote_ttl} must be above 0")
        if self.webhook_url is not None and not self.webhook_url.startswith(("http://", "https://")):
            problems.append(f"webhook URL {self.webhook_url!r} does not start with http:// or https://")
        if self.rate_limit:
            try:
                parse_rate_limit(self.rate_limit)
            except ValueError as exc:
                problems.append(str(exc))
        if problems:
            raise UsageError("Cannot start the sandbox: " + "; ".join(problems) + ".",
                             hint="Fix the option and start it again.")
