"""JSON in and out with exact money: numbers are read as Decimal and written digit for digit.

The standard encoder can only write a Decimal through float; `dumps` writes
`Decimal("434.78")` as the JSON number 434.78, digit for digit, and `loads` reads 434.78
back as a Decimal.
"""

from __future__ import annotations

import json
import re
import secrets
from decimal import Decimal
from typing import Any

from starlette.responses import Response

SANDBOX_HEADER = (b"x-batchpay-sandbox", b"1")


# A Decimal is written as a marked string, and the marks are then cut out of the text, so
# the C encoder does the work. The mark starts with NUL, which the encoder always writes as
# \u0000, plus a per-process nonce: no text a client sends can forge it.
_NONCE = secrets.token_hex(8)
_MARKED_NUMBER = re.compile(r'"\\u0000' + _NONCE + r'(-?[0-9]+(?:\.[0-9]+)?)"')


def _mark_decimal(value: object) -> str:
    if isinstance(value, Decimal) and value.is_finite():
        return f"\x00{_NONCE}{value:f}"
    raise TypeError(f"cannot write {type(value).__name__} {value!r} as JSON")


def dumps(value: Any) -> str:
    """JSON text of dicts, lists, text, numbers (Decimal exact), booleans and None."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=_mark_decimal)
    return _MARKED_NUMBER.sub(r"\1", text)


def loads(data: bytes | str) -> Any:
    """Parse JSON; numbers with a fraction or exponent become Decimal, never float."""
    return json.loads(data, parse_float=Decimal)


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
