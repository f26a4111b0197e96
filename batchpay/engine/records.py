"""The journal's records and the text forms it stores and hashes.

Money and other Decimals are kept as their exact digits; input cells keep their type
(a Decimal stays a number, text stays text); `canonical` is the one form that is hashed.
"""

from __future__ import annotations

import getpass
import hashlib
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from datetime import time as dt_time
from decimal import Decimal
from typing import Any


def as_decimal(text: str | None) -> Decimal | None:
    """Money as the journal stores it (its exact digits as text) back to a Decimal."""
    return Decimal(text) if text not in (None, "") else None


def operator() -> str:
    """The OS user running batchpay, as runs and confirmations record it."""
    try:
        return getpass.getuser()
    except Exception:  # noqa: BLE001 - no user name is not worth failing for
        return os.environ.get("USER", "unknown")


def utcnow() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def canonical(data: Any) -> str:
    """The one text form that is hashed: sorted keys, no spaces, Decimals as their digits."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def pack_values(values: Iterable[Any]) -> str:
    """Input cells as JSON that keeps their type: a Decimal stays a number, text stays text."""
    out: list[Any] = []
    for v in values:
        if isinstance(v, Decimal):
            out.append({"$d": str(v)})
        elif isinstance(v, (datetime, date, dt_time)):
            out.append({"$t": v.isoformat()})
        elif v is None or isinstance(v, (str, int, float, bool)):
            out.append(v)
        else:
            out.append(str(v))
    return json.dumps(out, ensure_ascii=False, separators=(",", ":"))


def unpack_values(text: str) -> list[Any]:
    out: list[Any] = []
    for v in json.loads(text):
        if isinstance(v, dict) and "$d" in v:
            out.append(Decimal(v["$d"]))
        elif isinstance(v, dict) and "$t" in v:
            out.append(v["$t"])
        else:
            out.append(v)
    return out


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def event_hash(prev_hash: str, seq: int, at: str, kind: str, run_id: str, ref: str, data: str) -> str:
    content = canonical([seq, at, kind, run_id, ref, data])
    return hashlib.sha256((prev_hash + content).encode()).hexdigest()


@dataclass
class LedgerEntry:
    payout_ref: str
    status: str
    details: str
    run_id: str
    attempt_id: int | None
    error: str
    quote_id: str
    payout_id: str
    reference_number: str
    rate: str | None
    fee: str | None
    target_amount: str | None
    total_debit: str | None
    amount: str | None
    source_currency: str
    target_currency: str
    updated_at: str
    quotes_used: int | None = None  # invoice rows: the quotes it took to find the amount


@dataclass
class Attempt:
    id: int
    payout_ref: str
    run_id: str
    quote_id: str
    quote: dict[str, Any]
    body: dict[str, Any]
    quote_expires_at: float
    sends: int
    outcome: str | None


@dataclass
class RunRow:
    seq: int
    row: int
    payout_ref: str
    inputs: list[Any]
    status: str
    linked: bool = False
    error: str = ""
    warning: str = ""
    amount: str | None = None
    source_currency: str = ""
    target_currency: str = ""
    quote_id: str = ""
    rate: str | None = None
    fee: str | None = None
    target_amount: str | None = None
    total_debit: str | None = None
    updated_at: str = ""
    quotes_used: int | None = None
    asked: str | None = None  # an invoice row's target_amount


@dataclass
class RunRecord:
    id: str
    kind: str
    started_at: str
    sheet: str
    input_sha256: str
    input_columns: list[str]
    info: dict[str, Any] = field(default_factory=dict)
    finished_at: str | None = None
    outcome: str | None = None
    exit_code: int | None = None


@dataclass
class ChainCheck:
    ok: bool
    events: int
    head: str
    problem: str = ""
    broken_at: int | None = None
