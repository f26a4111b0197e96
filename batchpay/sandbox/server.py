"""Running the sandbox: in a background thread (tests, the embedded sandbox) or in the
foreground (`batchpay sandbox`). Port 0 picks a free port; the socket is bound before
uvicorn starts, so the URL is known and nothing else can take the port meanwhile.
"""

from __future__ import annotations

import sys

from batchpay.sandbox.app import create_app
from batchpay.sandbox.config import SandboxConfig
from batchpay.sandbox.state import SandboxState
from batchpay.serving import ServerThread, bind, serve_foreground, url_of


class RunningSandbox(ServerThread):
    """A sandbox serving in a daemon thread; stop() (or leaving the `with`) shuts it down."""

    def __init__(self, config: SandboxConfig) -> None:
        app = create_app(config)
        super().__init__(app, config.host, config.port, what="sandbox")
        self.config = config
        self.api_key = config.api_key
        self.state: SandboxState = app.state.sandbox

    def __enter__(self) -> RunningSandbox:
        return self


def start_in_thread(config: SandboxConfig) -> RunningSandbox:
    """Start a sandbox in a background thread; returns once it accepts connections."""
    return RunningSandbox(config).start()


def serve(config: SandboxConfig) -> None:
    """Serve in the foreground until Ctrl-C (or SIGTERM); the banner goes to stderr."""
    sock = bind(config.host, config.port, "sandbox")
    url = url_of(sock)
    faults = [
        f"{label} {value}" for label, value in (
            ("latency-ms", config.latency_ms), ("error-rate", config.error_rate),
            ("drop-rate", config.drop_rate), ("rate-limit", config.rate_limit),
        ) if value
    ] + ([] if config.payout_list else ["no-payout-list (GET /v1/transaction answers 404)"])
    lines = [
        "SANDBOX: a fake payout service for tests. No real money moves.",
        f"  URL:      {url}",
        f"  API key:  {config.api_key}   (test key: export BATCHPAY_BASE_URL={url} BATCHPAY_API_KEY={config.api_key})",
        f"  state:    {config.state_path or 'in memory (lost when it stops)'}",
        f"  settle:   {config.settle_seconds:g} s   quote TTL: {config.quote_ttl:g} s   seed: {config.seed}",
        f"  rates:    target amounts rounded {config.rounding}, drift "
        f"{f'up to {config.rate_drift:g} every 8 quotes' if config.rate_drift else 'none'}",
        f"  faults:   {', '.join(faults) or 'none'}",
        f"  webhooks: {config.webhook_url or 'off'}",
        "  Ctrl-C stops it.",
    ]
    print("\n".join(lines), file=sys.stderr, flush=True)
    serve_foreground(create_app(config), sock)
    print("SANDBOX stopped.", file=sys.stderr, flush=True)
