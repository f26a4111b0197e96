"""Who a payee is and what counts as the same bank details, whatever the spreadsheet did.

A payee is its `payee_id`, else its company code (BUSINESS rows), its ID number, or its
name as read; a known company_id or ic_number is that payee whatever payee_id a row gives
it. Spreadsheet noise never makes details or ids differ: spaces and hyphens in account
numbers; in names and ids case, full-width forms (NFKC), white space (collapsed) and
characters that show as nothing: format characters (soft hyphen, zero-width, bidi
controls such as U+202E) and the Hangul fillers, letters that print blank (U+3164...).

A look-alike is caught by its `skeleton`: the folded text without spaces, punctuation and
combining marks, with Cyrillic and Greek letters that look Latin read as Latin, and 0/1 as
o/l. Two different people may share a skeleton; a row whose name or payee_id has the
skeleton of a known payee is not proven to be that payee, only held for a person to check.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from typing import Any, TypedDict, cast

from batchpay.money import plain_account

BANK_FIELDS = ("recipient_name", "account_number", "bank_name", "bank_city", "sort_code")


class PayeeValues(TypedDict, total=False):
    """What the register knows a payee by, and pays it on: of a valid row (`payee_values`),
    or of a payout's details as the ledger keeps them (which hold its amounts too)."""

    payee_id: str | None
    recipient_type: str | None
    recipient_name: str | None
    company_id: str | None
    ic_number: str | None
    account_number: str | None
    bank_name: str | None
    bank_city: str | None
    sort_code: str | None

# letters that print as blank (so no category rule finds them), and blank braille
_FILLERS = frozenset("\u3164\u115f\u1160\uffa0\u2800")
# Cyrillic and Greek letters (after casefold) that look like Latin ones, and digits like letters
_CONFUSABLE = str.maketrans({
    "а": "a", "в": "b", "е": "e", "һ": "h", "і": "i", "ј": "j", "к": "k",
    "ӏ": "l", "м": "m", "н": "h", "о": "o", "р": "p", "с": "c", "т": "t", "у": "y", "х": "x",
    "ѕ": "s", "ԁ": "d", "ԛ": "q", "ԝ": "w", "ɡ": "g",
    "α": "a", "β": "b", "ε": "e", "η": "n", "ι": "i", "κ": "k", "μ": "u", "ν": "v", "ο": "o",
    "ρ": "p", "τ": "t", "υ": "u", "χ": "x", "ω": "w",
    "0": "o", "1": "l",
})


# spaces, punctuation, symbols and combining marks: what `str.isalnum` is not
_NOT_LETTER_OR_DIGIT = re.compile(r"[\W_]+")


def shows_nothing(ch: str) -> bool:
    return ch in _FILLERS or (unicodedata.category(ch) in ("Cf", "Cc") and not ch.isspace())


@lru_cache(maxsize=1 << 16)
def fold(value: Any) -> str:
    """A name or id as compared: NFKC (full-width forms), without characters that show as
    nothing, white space collapsed, case folded."""
    if not value:
        return ""
    text = str(value)
    if not text.isascii():
        text = unicodedata.normalize("NFKC", text)
    # (printable text holds no format or control character: most names, checked fast)
    if not text.isprintable() or not _FILLERS.isdisjoint(text):
        text = "".join(ch for ch in text if not shows_nothing(ch))
    return " ".join(text.split()).casefold()


@lru_cache(maxsize=1 << 16)
def skeleton(value: Any) -> str:
    """What a name or id looks like: `fold` without spaces, punctuation and combining marks,
    letters that look Latin read as Latin ("SUР 001", with a Cyrillic Р, is "supool")."""
    text = fold(value)
    if not text.isascii():
        text = unicodedata.normalize("NFKD", text)  # accents become marks, dropped next
    return _NOT_LETTER_OR_DIGIT.sub("", text).translate(_CONFUSABLE)


def cleaned(name: str, value: Any) -> str:
    return plain_account(value) if name == "account_number" else fold(value)


def bank_details(values: PayeeValues | dict[str, str]) -> dict[str, str]:
    """The bank details of a payout, without spreadsheet noise."""
    get = values.get
    return {"recipient_name": fold(get("recipient_name")),
            "account_number": plain_account(get("account_number")),
            "bank_name": fold(get("bank_name")), "bank_city": fold(get("bank_city")),
            "sort_code": fold(get("sort_code"))}


def natural_key(values: PayeeValues) -> tuple[str, str]:
    if str(values.get("recipient_type") or "").upper() == "BUSINESS" and fold(
            values.get("company_id")):
        return ("company", fold(values["company_id"]))
    if fold(values.get("ic_number")):
        return ("ic", fold(values["ic_number"]))
    return ("name", cleaned("recipient_name", values.get("recipient_name")))


def natural_shown(values: PayeeValues) -> str:
    """A payee without payee_id as messages name it: its natural key as typed (trimmed)."""
    kind, value = natural_key(values)
    if kind == "name":
        return value
    return str(values["company_id" if kind == "company" else "ic_number"]).strip().upper()


def strong_keys(values: PayeeValues) -> list[tuple[str, str]]:
    """The registration numbers a row gives, whatever its type: each names one payee."""
    company, ic = fold(values.get("company_id")), fold(values.get("ic_number"))
    return [key for key in (("company", company), ("ic", ic)) if key[1]]


def keys_of(values: PayeeValues) -> list[tuple[str, str]]:
    keys = [natural_key(values)]
    if values.get("payee_id") and fold(values["payee_id"]):
        keys.insert(0, ("id", fold(values["payee_id"])))
    return keys


def payee_values(row: Any) -> PayeeValues:
    """What the register needs of a valid row (a PayoutRow)."""
    return cast(PayeeValues, {name: getattr(row, name, None)
                              for name in PayeeValues.__annotations__})
