"""The service's endpoint paths and header names. The defaults are the provider's
documented ones; a real account may differ, and the `[paths]` and `[headers]` settings
(README, "Settings") say how. They live with the client because they describe the
service, not the user: the settings only override them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Paths:
    """Endpoint paths; the provider's documented values are the defaults."""

    bank: str = "/v1/bank"
    quote: str = "/v1/quote"
    quote_item: str = "/v1/quote/{id}"
    payout: str = "/v2/payout"
    transaction: str = "/v1/transaction/{id}"
    transactions: str = "/v1/transaction"
    wallet: str = "/v1/wallet"


@dataclass(frozen=True)
class Headers:
    """Header names: the API key, the sandbox's own, and the two webhook signatures."""

    api_key: str = "X-API-KEY"
    sandbox: str = "X-Batchpay-Sandbox"
    # a sandbox started with --client-windows: keep the provider's windows against it
    sandbox_windows: str = "X-Batchpay-Sandbox-Windows"
    signature_sha512: str = "X-Signature"
    signature_sha256: str = "X-meCash-Signature"
