"""The service's bodies as JSON with exact numbers: every ``Decimal`` leaves with exactly
the digits the operator typed, and ``float`` is refused (it has already lost them).
Reading uses ``parse_float=Decimal`` so that 434.78 comes back as ``Decimal("434.78")``.
The one algorithm lives in ``batchpay.money``; this is the client's strict use of it.
"""

from __future__ import annotations

from typing import Any

from batchpay import money
from batchpay.money import loads

__all__ = ["dumps", "loads"]


def dumps(obj: Any) -> bytes:
    """Compact UTF-8 JSON in which every ``Decimal`` is a number with exactly its digits."""
    return money.dumps(obj, exact=True).encode("utf-8")
