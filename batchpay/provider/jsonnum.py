"""JSON with exact numbers: ``Decimal`` in, the same digits out, and back.

The standard ``json`` module can only write a ``Decimal`` as a string or by way of
``float`` (434.78 would leave as 434.779999...). Money must travel as a JSON *number*
with exactly the digits the operator typed, so bodies are written here. Reading uses
``parse_float=Decimal`` so that 434.78 comes back as ``Decimal("434.78")``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

_encode_str = json.JSONEncoder(ensure_ascii=False).encode


def loads(data: bytes | str) -> Any:
    """Parse JSON; numbers with a fraction or exponent become ``Decimal``, never ``float``."""
    return json.loads(data, parse_float=Decimal)


def dumps(obj: Any) -> bytes:
    """Compact UTF-8 JSON in which every ``Decimal`` is a number with exactly its digits.

    ``float`` is refused: a float has already lost the digits it should carry.
    """
    parts: list[str] = []
    _write(obj, parts)
    return "".join(parts).encode("utf-8")


def decimal_text(value: Decimal) -> str:
    """A finite Decimal as plain JSON number text, without an exponent: 1E+2 -> 100."""
    if not value.is_finite():
        raise ValueError(f"{value} cannot be written as a JSON number")
    return format(value, "f")


def _write(obj: Any, out: list[str]) -> None:
    # bool before int: True is an int in Python but must stay `true` in JSON
    if obj is None:
        out.append("null")
    elif obj is True:
        out.append("true")
    elif obj is False:
        out.append("false")
    elif isinstance(obj, str):
        out.append(_encode_str(obj))
    elif isinstance(obj, Decimal):
        out.append(decimal_text(obj))
    elif isinstance(obj, int):
        out.append(int.__repr__(obj))
    elif isinstance(obj, float):
        raise TypeError(f"float {obj!r} in a request body: money and rates must be Decimal")
    elif isinstance(obj, Mapping):
        out.append("{")
        for index, (key, value) in enumerate(obj.items()):
            if not isinstance(key, str):
                raise TypeError(f"JSON object keys must be text, not {type(key).__name__}")
            if index:
                out.append(",")
            out.append(_encode_str(key))
            out.append(":")
            _write(value, out)
        out.append("}")
    elif isinstance(obj, list | tuple):
        out.append("[")
        for index, item in enumerate(obj):
            if index:
                out.append(",")
            _write(item, out)
        out.append("]")
    else:
        raise TypeError(f"{type(obj).__name__} cannot be written as JSON")
