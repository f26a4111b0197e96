"""Money's small rules, in one place for every part of batchpay (the sheet, the engine, the
client and the sandbox alike, so this module imports nothing of batchpay's own).

- The minor unit of a currency: how many decimals an amount may carry (NGN 2, JPY 0, KWD 3)
  and the step amounts are rounded to. Funds codes without a minor unit (precious metals,
  XDR, test codes) are left out on purpose: nobody pays in them.
- An account number as typed and as compared: without the spaces and hyphens a
  spreadsheet or a person puts in it, and as messages show it (masked).
- JSON with exact numbers: `Decimal` in, the same digits out, and back. The standard
  module can only write a Decimal as a string or by way of float (434.78 would leave as
  434.779999...); money travels as a JSON *number* with exactly the digits typed.
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Mapping
from decimal import Decimal
from functools import lru_cache
from typing import Any

_BY_EXPONENT: dict[int, str] = {
    0: "BIF CLP DJF GNF ISK JPY KMF KRW PYG RWF UGX UYI VND VUV XAF XOF XPF",
    2: (
        "AED AFN ALL AMD ANG AOA ARS AUD AWG AZN BAM BBD BDT BGN BMD BND BOB BOV BRL BSD BTN "
        "BWP BYN BZD CAD CDF CHE CHF CHW CNY COP COU CRC CUP CVE CZK DKK DOP DZD EGP ERN ETB "
        "EUR FJD FKP GBP GEL GHS GIP GMD GTQ GYD HKD HNL HTG HUF IDR ILS INR IRR JMD KES KGS "
        "KHR KPW KYD KZT LAK LBP LKR LRD LSL MAD MDL MGA MKD MMK MNT MOP MRU MUR MVR MWK MXN "
        "MXV MYR MZN NAD NGN NIO NOK NPR NZD PAB PEN PGK PHP PKR PLN QAR RON RSD RUB SAR SBD "
        "SCR SDG SEK SGD SHP SLE SOS SRD SSP STN SVC SYP SZL THB TJS TMT TOP TRY TTD TWD TZS "
        "UAH USD USN UYU UZS VED VES WST XCD XCG YER ZAR ZMW ZWG"
    ),
    3: "BHD IQD JOD KWD LYD OMR TND",
    4: "CLF UYW",
}

EXPONENTS: dict[str, int] = {
    code: exp for exp, codes in _BY_EXPONENT.items() for code in codes.split()
}


def is_currency(code: object) -> bool:
    """True for an ISO 4217 code (any case, surrounding spaces ignored)."""
    return isinstance(code, str) and code.strip().upper() in EXPONENTS


DEFAULT_EXPONENT = 2  # for a currency code that is not ISO 4217 (an INVALID row's typo)


def currency_exponent(code: str) -> int:
    return EXPONENTS.get(code.strip().upper(), DEFAULT_EXPONENT)


_MINOR_UNITS: dict[str, Decimal] = {code: Decimal(1).scaleb(-exp)
                                    for code, exp in EXPONENTS.items()}
_DEFAULT_UNIT = Decimal(1).scaleb(-DEFAULT_EXPONENT)


def minor_unit(code: str) -> Decimal:
    """The smallest amount of `code` (0.01 NGN, 1 JPY, 0.001 KWD); 0.01 for a non-ISO code."""
    return _MINOR_UNITS.get(code.strip().upper(), _DEFAULT_UNIT)


def in_minor_units(amount: Decimal, currency: str) -> Decimal:
    """`amount` rounded (half even) to the currency's minor unit: 1234.5 NGN -> 1234.50."""
    return amount.quantize(minor_unit(currency))


def shown_amount(amount: Decimal | int | str | None, currency: str = "") -> str:
    """An amount as a page or a summary shows it: thousands separated, the currency after
    it, never rounded (`1,234,567.89 NGN`). Zeros are added up to the currency's minor unit
    (1000 NGN -> 1,000.00 NGN) and no digit is ever taken away. Empty for no amount; text
    that is not a number is shown as it is."""
    if amount is None or amount == "":
        return ""
    try:
        value = amount if isinstance(amount, Decimal) else Decimal(str(amount).strip())
    except ArithmeticError:
        return str(amount)
    if not value.is_finite():
        return str(amount)
    code = currency.strip().upper()
    if code:
        unit = minor_unit(code)
        if int(value.as_tuple().exponent) > int(unit.as_tuple().exponent):
            value = value.quantize(unit)  # only zeros are added: exact
    text = format(value, ",f")
    return f"{text} {code}" if code else text


def rate_direction(rate: Decimal, source: tuple[Decimal, str], target: tuple[Decimal, str]
                   ) -> str:
    """Which way the service's rate counts ("NGN per CNY" or "CNY per USD"): it quotes the
    weaker currency's units per one of the stronger, so the direction is told from the
    quote's own amounts (`source` and `target`, each amount and currency) - whichever
    reading of `rate` comes nearer to turning one into the other."""
    (paid, source_code), (got, target_code) = source, target
    if not (rate and paid and got):
        return f"{source_code} per {target_code}"
    source_per_target = abs(rate * got - paid) / paid
    target_per_source = abs(paid * rate - got) / got
    if target_per_source < source_per_target:
        return f"{target_code} per {source_code}"
    return f"{source_code} per {target_code}"


def shown_rate(rate: Decimal, direction: str) -> str:
    """A rate with its direction stated: `230 NGN per CNY`."""
    return f"{format(rate, ',f')} {direction}"


_ACCOUNT_SEPARATORS = re.compile(r"[\s\-]")


@lru_cache(maxsize=1 << 16)  # the same accounts come back on every row and every run
def plain_account(value: Any) -> str:
    """An account number without its spaces and hyphens: "6222 0212-3456" -> "622202123456"
    ("" for None). The sheet keeps the account in this form; the register compares it so."""
    if value is None:
        return ""
    text = str(value)
    return text if text.isdigit() else _ACCOUNT_SEPARATORS.sub("", text)


def masked(account: Any) -> str:
    """An account number as messages and sheets show it: its first and last four digits."""
    text = plain_account(account)
    return f"{text[:4]}…{text[-4:]}" if len(text) > 8 else text


def loads(data: bytes | str) -> Any:
    """Parse JSON; numbers with a fraction or exponent become Decimal, never float. (What
    json.loads does, with one decoder for every call instead of a new one per call.)"""
    if isinstance(data, bytes | bytearray):
        data = data.decode(json.detect_encoding(data), "surrogatepass")
    if data.startswith("\ufeff"):
        raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", data, 0)
    return _DECODER.decode(data)


_DECODER = json.JSONDecoder(parse_float=Decimal)


def decimal_text(value: Decimal) -> str:
    """A finite Decimal as plain JSON number text, without an exponent: 1E+2 -> 100."""
    if not value.is_finite():
        raise ValueError(f"{value} cannot be written as a JSON number")
    return format(value, "f")


# A Decimal is written as a marked string, and the marks are then cut out of the text, so
# the C encoder does the work. The mark starts with NUL, which the encoder always writes as
# \u0000, plus a per-process nonce: no text a client sends can forge it.
_NONCE = secrets.token_hex(8)
_MARKED_NUMBER = re.compile(r'"\\u0000' + _NONCE + r'(-?[0-9]+(?:\.[0-9]+)?)"')


def _mark_decimal(value: object) -> str:
    if isinstance(value, Decimal) and value.is_finite():
        return f"\x00{_NONCE}{decimal_text(value)}"
    raise TypeError(f"cannot write {type(value).__name__} {value!r} as JSON")


def dumps(value: Any, *, exact: bool = False) -> str:
    """Compact JSON text of dicts, lists, text, numbers (Decimal digit for digit), booleans
    and None. `exact` also refuses a float anywhere (it has already lost the digits it
    should carry) and a key that is not text, before anything is written."""
    if exact:
        _refuse_inexact(value)
    text = _ENCODER.encode(value)
    return _MARKED_NUMBER.sub(r"\1", text) if _NONCE in text else text


_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=_mark_decimal)


def _refuse_inexact(value: Any) -> None:
    if isinstance(value, float):
        raise TypeError(f"float {value!r} in a request body: money and rates must be Decimal")
    if isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError(f"JSON object keys must be text, not {type(key).__name__}")
            _refuse_inexact(item)
    elif isinstance(value, list | tuple):
        for item in value:
            _refuse_inexact(item)
