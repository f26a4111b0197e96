"""Typed records of the payout service's answers, money as ``Decimal``.

Each ``from_json`` takes the ``data`` part of a success envelope, as parsed by
``jsonnum.loads`` (so fractions are already ``Decimal``), and raises ``ShapeError`` when
a field the client relies on is missing or of the wrong type. ``raw`` keeps the whole
record for the journal.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

from batchpay.statuses import FINAL, SERVICE_ALIASES


class ShapeError(ValueError):
    """A success answer whose body lacks a field the client needs."""


def normalize_state(state: str) -> str:
    """Upper-case, trimmed, with the service's old names mapped to the current ones."""
    name = state.strip().upper()
    return SERVICE_ALIASES.get(name, name)


@dataclass(frozen=True)
class Bank:
    bank_name: str
    sort_code: str | None
    branch_code: str | None
    country: str | None

    @classmethod
    def from_json(cls, data: Any) -> Bank:
        record = _object(data, "bank")
        return cls(
            bank_name=_text(record, "bankName"),
            sort_code=_optional_text(record, "sortCode"),
            branch_code=_optional_text(record, "branchCode"),
            country=_optional_text(record, "country"),
        )

    def to_json(self) -> dict[str, str | None]:
        """The service's own field names, for `banks --json`."""
        return {
            "bankName": self.bank_name,
            "sortCode": self.sort_code,
            "branchCode": self.branch_code,
            "country": self.country,
        }


@dataclass(frozen=True)
class Quote:
    id: str
    rate: Decimal
    fee: Decimal
    source_amount: Decimal
    source_currency: str
    source_country: str
    target_amount: Decimal
    target_currency: str
    target_country: str
    total: Decimal  # source amount + fee, in the source currency
    expires_in_seconds: int | None
    payment_channel: str | None
    rules: tuple[dict[str, Any], ...] = ()
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, data: Any) -> Quote:
        record = _object(data, "quote")
        source = _object(record.get("source"), "quote.source")
        target = _object(record.get("target"), "quote.target")
        fee = record.get("fee")
        fee_amount = _money(fee, "amount", "quote.fee") if isinstance(fee, dict) else None
        if fee_amount is None:  # some answers give the fee as a bare number
            fee_amount = _money(record, "fee", "quote")
        summary = _object(record.get("summary"), "quote.summary")
        rules = record.get("rules") or []
        if not isinstance(rules, list):
            raise ShapeError("quote.rules is not a list")
        expires = record.get("expiresInSeconds")
        return cls(
            id=_text(record, "id"),
            rate=_money(record, "rate", "quote"),
            fee=fee_amount,
            source_amount=_money(source, "amount", "quote.source"),
            source_currency=_text(source, "currency"),
            source_country=_text(source, "country"),
            target_amount=_money(target, "amount", "quote.target"),
            target_currency=_text(target, "currency"),
            target_country=_text(target, "country"),
            total=_money(summary, "total", "quote.summary"),
            expires_in_seconds=int(expires) if isinstance(expires, int | Decimal) else None,
            payment_channel=_optional_text(record, "paymentChannel"),
            rules=tuple(rule for rule in rules if isinstance(rule, dict)),
            raw=record,
        )


@dataclass(frozen=True)
class Payout:
    id: str
    reference_number: str | None
    state: str  # normalized: upper-case, INITIATED -> PENDING
    quote_id: str | None
    created: str | None  # ISO 8601 as the service wrote it
    processed: str | None
    remark: str | None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def final(self) -> bool:
        return self.state in FINAL

    @classmethod
    def from_json(cls, data: Any) -> Payout:
        record = _object(data, "payout")
        quote = record.get("quote")
        # the record carries a copy of the quote used; matching on quote.id is how a
        # payout whose answer was lost is found again
        quote_id = quote.get("id") if isinstance(quote, dict) else None
        quote_id = quote_id or record.get("quoteId")
        return cls(
            id=_text(record, "id"),
            reference_number=_optional_text(record, "referenceNumber"),
            state=normalize_state(_text(record, "state")),
            quote_id=str(quote_id) if quote_id else None,
            created=_optional_text(record, "created"),
            processed=_optional_text(record, "processed"),
            remark=_optional_text(record, "remark"),
            raw=record,
        )


@dataclass(frozen=True)
class PayoutPage:
    items: list[Payout]
    page: int
    size: int
    total_pages: int

    @property
    def last(self) -> bool:
        return self.page + 1 >= self.total_pages

    @classmethod
    def from_envelope(cls, envelope: Any, *, page: int, size: int) -> PayoutPage:
        """From the whole envelope: paging fields sit beside ``data``, not inside it."""
        body = _object(envelope, "payout list")
        data = body.get("data")
        if isinstance(data, dict) and isinstance(data.get("content"), list):
            body, data = data, data["content"]  # tolerate a nested page object
        if not isinstance(data, list):
            raise ShapeError("payout list: data is not a list")
        total = body.get("totalPages")
        return cls(
            items=[Payout.from_json(item) for item in data],
            page=_int(body.get("page"), page),
            size=_int(body.get("size"), size),
            total_pages=_int(total, 1 if data else 0),
        )


@dataclass(frozen=True)
class Wallet:
    id: str
    balance: Decimal
    currency: str
    country: str | None

    @classmethod
    def from_json(cls, data: Any) -> Wallet:
        record = _object(data, "wallet")
        return cls(
            id=str(record.get("id") or ""),
            balance=_money(record, "balance", "wallet"),
            currency=_text(record, "currency"),
            country=_optional_text(record, "country"),
        )


# --- field readers: strict about what the client relies on ----------------------------

def _object(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ShapeError(f"{what} is not an object")
    return value


def _text(record: dict[str, Any], key: str) -> str:
    value = record.get(key)
    if isinstance(value, bool) or value is None or isinstance(value, dict | list):
        raise ShapeError(f"field {key!r} is missing or not text")
    text = str(value).strip()
    if not text:
        raise ShapeError(f"field {key!r} is empty")
    return text


def _optional_text(record: dict[str, Any], key: str) -> str | None:
    value = record.get(key)
    if value is None or isinstance(value, dict | list):
        return None
    return str(value)


def _money(record: dict[str, Any], key: str, what: str) -> Decimal:
    """A JSON number (int or Decimal) or numeric text as Decimal; a float is a bug upstream."""
    value = record.get(key)
    if isinstance(value, bool) or not isinstance(value, int | Decimal | str):
        raise ShapeError(f"{what}.{key} is missing or not a number")
    try:
        amount = Decimal(value)
    except InvalidOperation:
        raise ShapeError(f"{what}.{key} is not a number: {value!r}") from None
    if not amount.is_finite():
        raise ShapeError(f"{what}.{key} is not a finite number")
    return amount


def _int(value: Any, default: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | Decimal | str):
        return default
    try:
        return int(value)
    except (ValueError, ArithmeticError):
        return default
