"""JSON in and out with exact money: numbers are read as Decimal and written digit for digit.

The standard encoder can only write a Decimal through float; `dumps` writes
`Decimal("434.78")` as the JSON number 434.78, digit for digit, and `loads` reads 434.78
back as a Decimal.
"""

from __future__ import annotations

from typing import Any

from starlette.responses import Response

from batchpay.money import dumps, loads

__all__ = ["SANDBOX_HEADER", "JSONBody", "bare", "dumps", "failed", "loads", "success"]

SANDBOX_HEADER = (b"x-batchpay-sandbox", b"1")


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
