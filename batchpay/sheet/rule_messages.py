"""What a finance person reads when a cell breaks a rule: what is wrong, and how to fix it
("check character is wrong — expected 3 ...")."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from batchpay.sheet.china_ids import (
    USCC_ALPHABET,
    resident_id_birth_date,
    resident_id_check_digit,
    uscc_check_char,
)
from batchpay.sheet.columns import Column

Message = Callable[[Any, int], str]  # (failing value, frame position) → message
REF_PATTERN = r"[A-Za-z0-9._/\-]{1,64}"
ACCOUNT_PATTERN = r"[0-9]{8,30}"  # ASCII digits: full-width and other digits are refused
AMOUNT_PATTERN = r"[0-9]+(?:\.[0-9]+)?"
# an address a mail server takes: ASCII local part (dot-atom) @ a domain of two or more
# labels; no display name, no spaces, no comments. A typo that still fits is not caught here
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
EMAIL_PATTERN = (r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*"
                 rf"@{_LABEL}(?:\.{_LABEL})*\.[A-Za-z]{{2,63}}")
_SHORTENED_NUMBER = re.compile(r"[+-]?\d+(?:\.\d+)?[eE][+-]?\d+")


def account_message(value: Any, _: int) -> str:
    text = str(value)
    if _SHORTENED_NUMBER.fullmatch(text):
        return (f"{text} is a number the spreadsheet shortened; format the column as Text "
                "and type the full account number again")
    if text.isdigit() and not text.isascii():
        return (f"has digits other than 0-9 ({text!r}, e.g. full-width digits): type the "
                "account number again with plain digits")
    if not text.isdigit():
        return f"must be digits only (spaces and hyphens are allowed), got {text!r}"
    return f"has {len(text)} digits; an account number has 8 to 30"


def uscc_message(value: Any, _: int) -> str:
    text = str(value)
    if len(text) != 18:
        return f"must be 18 characters (the unified social credit code), got {len(text)}: {text!r}"
    bad = sorted({ch for ch in text if ch not in USCC_ALPHABET})
    if bad:
        return (f"contains {', '.join(bad)}, which a unified social credit code never has "
                "(no I, O, S, V, Z); check the code on the business licence")
    return (f"check character is wrong — expected {uscc_check_char(text[:17])}, the code ends "
            f"in {text[17]}; check the code on the business licence")


def resident_id_message(value: Any, _: int) -> str:
    text = str(value)
    if len(text) != 18:
        return f"must be 18 characters (resident ID number), got {len(text)}: {text!r}"
    if not (text[:17].isascii() and text[:17].isdigit()) or text[17] not in "0123456789X":
        return "must be 17 digits followed by a digit or X"
    if resident_id_birth_date(text) is None:
        return f"digits 7–14 ({text[6:14]}) are not a real date of birth"
    return (f"check digit is wrong — expected {resident_id_check_digit(text[:17])}, the number "
            f"ends in {text[17]}; check the ID card")


def amount_message(value: Any, _: int) -> str:
    text = str(value)
    if re.fullmatch(r"-\s*" + AMOUNT_PATTERN, text):
        return f"must be more than 0, got {text}"
    if _SHORTENED_NUMBER.fullmatch(text):
        return f"write the amount as a plain number, not {text}"
    if "," in text:
        return (f"must be a number like 1250000.50 (a point for decimals, no thousands "
                f"separators), got {text!r}; if the file writes decimal commas (1.250.000,00), "
                "run with --decimal-comma")
    return f"must be a number like 1250000.50 (no currency signs or letters), got {text!r}"


def choice_message(column: Column) -> Message:
    allowed = " or ".join(column.choices)
    return lambda v, _: f"must be {allowed}, got {v!r}"


def currency_message(value: Any, _: int) -> str:
    return f"{value!r} is not an ISO 4217 currency code (like NGN, USD, CNY)"


CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")  # C0 and C1 control characters, NUL too
CONTROL_NAMES = {"\x00": "a NUL character", "\t": "a tab", "\n": "a line break",
                  "\r": "a carriage return", "\x1b": "an escape character"}


def control_message(value: Any, _: int) -> str:
    text = str(value)
    found = CONTROL.search(text)
    at = found.start() if found else 0
    what = CONTROL_NAMES.get(text[at], f"the control character U+{ord(text[at]):04X}")
    return (f"contains {what} at character {at + 1}, which a bank field cannot carry; "
            "type the cell again (paste as plain text)")


def email_message(value: Any, _: int) -> str:
    text = str(value)
    if "@" not in text:
        return f"{text!r} is not an e-mail address (no @); write it as name@example.cn"
    if any(ch.isspace() for ch in text) or "<" in text or "," in text or ";" in text:
        return (f"{text!r} must be one plain address (name@example.cn): no spaces, no name "
                "in <>, no list")
    return f"{text!r} is not an e-mail address a mail server takes; check it (name@example.cn)"
