"""What the sandbox checks in a payout request, as the service's compliance step would.

- Unified social credit code (GB 32100-2015): 18 characters from a 31-character alphabet
  (no I, O, Z, S, V); the 18th is a check character computed from the first 17.
- Resident ID card number (GB 11643-1999): 17 digits and an ISO 7064 MOD 11-2 check
  character (0-9 or X).
Every failed check is a `Refusal` carrying the HTTP status and the service's message.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from typing import Any, cast

from batchpay.sandbox.banks import PAYMENT_CHANNELS
from batchpay.sandbox.wire import PayoutRequest

USCC_ALPHABET = "0123456789ABCDEFGHJKLMNPQRTUWXY"
USCC_WEIGHTS = (1, 3, 9, 27, 19, 26, 16, 17, 20, 29, 25, 13, 8, 24, 10, 30, 28)
RESIDENT_ID_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
RESIDENT_ID_CHECKS = "10X98765432"
ACCOUNT_NUMBER = re.compile(r"\d{8,30}")
MAX_NAME_LENGTH = 140

# (path, required): every text field of a payout request. Required ones must be non-blank
# text; optional ones may be absent, but when present must be text (never null).
PAYOUT_TEXT_FIELDS: tuple[tuple[tuple[str, ...], bool], ...] = (
    (("quoteId",), True),
    (("reason",), False),
    (("remark",), False),
    (("recipient", "name"), True),
    (("recipient", "type"), True),
    (("recipient", "companyName"), False),
    (("recipient", "companyIdNumber"), False),
    (("recipient", "icNumber"), False),
    (("recipient", "itemCategory"), False),
    (("recipient", "paymentChannel"), True),
    (("recipient", "currency"), True),
    (("recipient", "country"), True),
    (("recipient", "account", "accountNumber"), True),
    (("recipient", "account", "bankName"), True),
    (("recipient", "account", "bankCity"), False),
    (("recipient", "account", "sortCode"), False),
)


class Refusal(Exception):
    """The service says no: an HTTP status and the message it sends."""

    def __init__(self, status_code: int, message: str) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.message = message


def uscc_check_character(first17: str) -> str:
    total = sum(USCC_ALPHABET.index(char) * weight for char, weight in zip(first17, USCC_WEIGHTS, strict=True))
    return USCC_ALPHABET[(31 - total % 31) % 31]


def is_valid_uscc(code: str) -> bool:
    """True for an 18-character unified social credit code whose check character matches."""
    if len(code) != 18 or any(char not in USCC_ALPHABET for char in code):
        return False
    return uscc_check_character(code[:17]) == code[17]


def resident_id_check_character(first17: str) -> str:
    total = sum(int(digit) * weight for digit, weight in zip(first17, RESIDENT_ID_WEIGHTS, strict=True))
    return RESIDENT_ID_CHECKS[total % 11]


def is_valid_resident_id(number: str) -> bool:
    """True for an 18-character resident ID number whose ISO 7064 MOD 11-2 check matches."""
    if len(number) != 18 or not number[:17].isascii() or not number[:17].isdigit():
        return False
    return resident_id_check_character(number[:17]) == number[17].upper()


def _lookup(body: dict[str, Any], path: tuple[str, ...]) -> tuple[bool, Any]:
    """(present, value) of a nested field; a missing parent object means absent."""
    node: Any = body
    for name in path:
        if not isinstance(node, dict) or name not in node:
            return False, None
        node = node[name]
    return True, node


def check_payout_request(body: Any) -> PayoutRequest:
    """The payout request as sent, once every field check passed; else a Refusal (400)."""
    if not isinstance(body, dict):
        raise Refusal(400, "Request body must be a JSON object")
    for parent in (("recipient",), ("recipient", "account")):
        present, value = _lookup(body, parent)
        if not present or value is None:
            raise Refusal(400, f"{'.'.join(parent)} cannot be empty")
        if not isinstance(value, dict):
            raise Refusal(400, f"{'.'.join(parent)} must be an object")
    for path, required in PAYOUT_TEXT_FIELDS:
        present, value = _lookup(body, path)
        field = ".".join(path)
        if present and not isinstance(value, str):
            raise Refusal(400, f"{field} must be text")
        if required and (not present or not value.strip()):
            raise Refusal(400, f"{field} cannot be empty")
    recipient: dict[str, Any] = body["recipient"]
    account: dict[str, Any] = recipient["account"]
    if len(recipient["name"]) > MAX_NAME_LENGTH:
        raise Refusal(400, f"recipient.name is longer than {MAX_NAME_LENGTH} characters")
    if recipient["type"] not in ("BUSINESS", "INDIVIDUAL"):
        raise Refusal(400, "recipient.type must be BUSINESS or INDIVIDUAL")
    if recipient["paymentChannel"] not in PAYMENT_CHANNELS:
        raise Refusal(400, "Invalid payment channel: only BANK_TRANSFER is supported")
    if not ACCOUNT_NUMBER.fullmatch(account["accountNumber"]):
        raise Refusal(400, "Invalid account number: 8 to 30 digits expected")
    sort_code = account.get("sortCode")
    if sort_code is not None and not (sort_code.isascii() and sort_code.isdigit()):
        raise Refusal(400, "Invalid Bank Sortcode")
    if recipient["type"] == "BUSINESS":
        for name in ("companyName", "companyIdNumber"):
            if not recipient.get(name, "").strip():
                raise Refusal(400, f"recipient.{name} cannot be empty")
        if not is_valid_uscc(recipient["companyIdNumber"]):
            raise Refusal(
                400,
                "Invalid company ID number: not an 18-character unified social credit code "
                "with a matching check character",
            )
    ic_number = recipient.get("icNumber")
    if ic_number is not None and not is_valid_resident_id(ic_number):
        raise Refusal(
            400,
            "Invalid IC number: not an 18-character resident ID number with a matching "
            "check digit",
        )
    return cast(PayoutRequest, body)  # every field of one was checked above


def _text(body: dict[str, Any], path: tuple[str, ...]) -> str:
    present, value = _lookup(body, path)
    field = ".".join(path)
    if present and value is not None and not isinstance(value, str):
        raise Refusal(400, f"{field} must be text")
    if not present or value is None or not value.strip():
        raise Refusal(400, f"{field} cannot be empty")
    return str(value).strip().upper()


def check_quote_request(body: Any) -> tuple[str, Decimal, str, str, str, str]:
    """(paymentChannel, source amount, source currency, source country, target currency,
    target country) of a well-formed quote request; else a Refusal (400)."""
    if not isinstance(body, dict):
        raise Refusal(400, "Request body must be a JSON object")
    for name in ("source", "target"):
        if not isinstance(body.get(name), dict):
            raise Refusal(400, f"{name} cannot be empty")
    channel = _text(body, ("paymentChannel",))
    if channel not in PAYMENT_CHANNELS:
        raise Refusal(400, "Invalid payment channel: only BANK_TRANSFER is supported")
    if "amount" in body["target"]:
        raise Refusal(400, "Only the source amount can be fixed: remove target.amount")
    amount = body["source"].get("amount")
    if amount is None or amount == "":
        raise Refusal(400, "source.amount cannot be empty")
    if isinstance(amount, bool) or not isinstance(amount, int | Decimal | str):
        raise Refusal(400, "source.amount must be a number")
    try:
        source_amount = Decimal(amount.strip() if isinstance(amount, str) else amount)
    except InvalidOperation:
        raise Refusal(400, "source.amount must be a number") from None
    if not source_amount.is_finite() or source_amount <= 0:
        raise Refusal(400, "source.amount must be greater than 0")
    return (
        channel,
        source_amount,
        _text(body, ("source", "currency")),
        _text(body, ("source", "country")),
        _text(body, ("target", "currency")),
        _text(body, ("target", "country")),
    )
