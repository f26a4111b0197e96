"""Who a payee is and what counts as the same bank details, whatever the spreadsheet did.

A payee is its `payee_id`, else its company code (BUSINESS rows), its ID number, or its
name as read. Spreadsheet noise never makes details differ: spaces and hyphens in account
numbers, case and surrounding white space in names.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

BANK_FIELDS = ("recipient_name", "account_number", "bank_name", "bank_city", "sort_code")

_NOISE = str.maketrans("", "", " \t\n\r\f\v\u00a0\u3000-")


@lru_cache(maxsize=1 << 16)  # bank names and cities repeat on every row
def account_text(value: Any) -> str:
    return "" if value is None else str(value).translate(_NOISE)


@lru_cache(maxsize=1 << 16)
def fold(value: Any) -> str:
    return " ".join(str(value).split()).casefold() if value else ""


def cleaned(name: str, value: Any) -> str:
    return account_text(value) if name == "account_number" else fold(value)


def bank_details(values: dict[str, Any]) -> dict[str, str]:
    """The bank details of a payout, without spreadsheet noise."""
    get = values.get
    return {"recipient_name": fold(get("recipient_name")),
            "account_number": account_text(get("account_number")),
            "bank_name": fold(get("bank_name")), "bank_city": fold(get("bank_city")),
            "sort_code": fold(get("sort_code"))}


def natural_key(values: dict[str, Any]) -> tuple[str, str]:
    if str(values.get("recipient_type") or "").upper() == "BUSINESS" and values.get("company_id"):
        return ("company", str(values["company_id"]).strip().upper())
    if values.get("ic_number"):
        return ("ic", str(values["ic_number"]).strip().upper())
    return ("name", cleaned("recipient_name", values.get("recipient_name")))


def keys_of(values: dict[str, Any]) -> list[tuple[str, str]]:
    keys = [natural_key(values)]
    if values.get("payee_id"):
        keys.insert(0, ("id", str(values["payee_id"]).strip()))
    return keys


def payee_values(row: Any) -> dict[str, Any]:
    """What the register needs of a valid row (a PayoutRow)."""
    return {name: getattr(row, name, None) for name in (
        "payee_id", "recipient_type", "recipient_name", "company_id", "ic_number", *BANK_FIELDS)}


def masked(account: str) -> str:
    return f"{account[:4]}…{account[-4:]}" if len(account) > 8 else account
