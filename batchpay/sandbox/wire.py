"""JSON in and out with exact money, and the records the sandbox sends.

The standard encoder can only write a Decimal through float; `dumps` writes
`Decimal("434.78")` as the JSON number 434.78, digit for digit, and `loads` reads 434.78
back as a Decimal. The records keep the service's own (camelCase) names.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any, NotRequired, TypedDict

from starlette.responses import Response

from batchpay.money import dumps, loads

__all__ = ["CLIENT_WINDOWS_HEADER", "SANDBOX_HEADER", "AcceptedPayout", "Bank", "JSONBody",
           "Payout", "PayoutRecord", "PayoutRequest", "Quote", "Wallet", "bare", "dumps",
           "failed", "loads", "success"]

SANDBOX_HEADER = (b"x-batchpay-sandbox", b"1")
# sent by a sandbox started with --client-windows: clients keep their rate windows
CLIENT_WINDOWS_HEADER = (b"x-batchpay-sandbox-windows", b"on")


class JSONBody(Response):
    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return dumps(content).encode("utf-8")


def success(message: str, data: Any, **extra: Any) -> JSONBody:
    return JSONBody({"message": message, "status": "success", "data": data, **extra})


def failed(status_code: int, message: str, headers: dict[str, str] | None = None) -> JSONBody:
    return JSONBody({"message": message, "status": "failed"}, status_code, headers=headers)


def bare(status_code: int, message: str) -> JSONBody:
    """The bank list's error shape: a bare string (sent as a JSON string)."""
    return JSONBody(message, status_code)


class Side(TypedDict):
    """A quote's source or target: what leaves the wallet, or what the recipient receives."""

    currency: str
    country: str
    amount: Decimal


class Quote(TypedDict):
    id: str
    paymentChannel: str
    source: Side
    target: Side
    rate: Decimal
    fee: dict[str, Decimal]  # {"amount": the fee, in the source currency}
    summary: dict[str, Decimal]  # {"total": what the wallet is debited}
    rules: list[dict[str, Any]]  # the corridor's limits
    settlementTime: str
    expiresInSeconds: Decimal


class PayoutRequest(TypedDict):
    """A payout request, once every field check passed (checks.check_payout_request)."""

    quoteId: str
    recipient: dict[str, Any]  # as sent: name, type, account, ...
    reason: NotRequired[str]
    remark: NotRequired[str]


class PayoutRecord(TypedDict):
    """A payout as the sandbox keeps it: its state is derived from its age when shown."""

    id: str
    referenceNumber: str
    type: str
    reason: str | None
    remark: str | None
    quote: Quote
    recipient: dict[str, Any]
    created: str


class Payout(PayoutRecord):
    """A payout as the service shows it (built in the service's order of keys: id,
    referenceNumber, state, type, reason, remark, quote, recipient, created, processed)."""

    state: str
    processed: str


class Wallet(TypedDict):
    id: str
    balance: Decimal
    currency: str
    country: str | None  # None for a currency of no country the sandbox knows


class Bank(TypedDict):
    """A bank of the bank list (the sandbox knows no branch and leaves country empty)."""

    bankName: str
    sortCode: str
    branchCode: None
    country: None


class AcceptedPayout(TypedDict):
    """A payout as /_sandbox/payouts lists it for tests: what was accepted, to count."""

    id: str
    quoteId: str
    referenceNumber: str
    state: str
    accountNumber: str
    recipientName: str
    sourceAmount: Decimal
    sourceCurrency: str
    targetAmount: Decimal
    remark: str | None
    created: str
