"""The journal's records and the text forms it stores and hashes.

Money and other Decimals are kept as their exact digits; input cells keep their type
(a Decimal stays a number, text stays text); `canonical` is the one form that is hashed.
"""

from __future__ import annotations

import getpass
import hashlib
import hmac
import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from datetime import time as dt_time
from decimal import Decimal
from typing import Any, TypedDict

from batchpay.errors import JournalTampered
from batchpay.statuses import HoldKind, LedgerStatus, Status, ledger_status


def as_decimal(text: str | None) -> Decimal | None:
    """Money as the journal stores it (its exact digits as text) back to a Decimal."""
    return Decimal(text) if text not in (None, "") else None


# the money columns of the ledger and of run rows: stored as their exact digits, read as Decimal
MONEY_FIELDS = ("amount", "rate", "fee", "target_amount", "total_debit", "asked")


def _with_money(row: Mapping[str, Any]) -> dict[str, Any]:
    return {k: as_decimal(v) if k in MONEY_FIELDS else v for k, v in row.items()}


def stored_status(text: str) -> LedgerStatus:
    """A ledger status as the journal stores it (its text) back to its member."""
    try:
        return ledger_status(text)
    except ValueError:
        raise _unknown_status(text) from None


def _row_status(text: str) -> Status:
    try:
        return Status(text)
    except ValueError:
        raise _unknown_status(text) from None


def _unknown_status(text: str) -> JournalTampered:
    # batchpay writes only its own statuses: another one was put there by hand
    return JournalTampered(f"The journal holds the status {text[:40]!r}, which batchpay never "
                           "writes: it was edited.",
                           hint="`batchpay verify` checks the journal against its hash chain.")


def operator() -> str:
    """The OS user running batchpay, as runs and confirmations record it."""
    try:
        return getpass.getuser()
    except Exception:  # noqa: BLE001 - no user name is not worth failing for
        return os.environ.get("USER", "unknown")


def canonical(data: Any) -> str:
    """The one text form that is hashed: sorted keys, no spaces, Decimals as their digits."""
    return _CANONICAL.encode(data)


# one encoder for every canonical text (json.dumps with options makes a new one per call)
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                              default=str)


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


GENESIS = "0" * 64  # the hash before the first event


def event_hash(prev_hash: str, seq: int, at: str, kind: str, run_id: str, ref: str, data: str,
               key: bytes | None = None) -> str:
    """SHA-256 over the previous hash and the event; with `key`, HMAC-SHA256 keyed with it
    (a chain whose events were removed and hashes recomputed then needs the key too)."""
    content = (prev_hash + canonical([seq, at, kind, run_id, ref, data])).encode()
    if key is not None:
        return hmac.digest(key, content, "sha256").hex()
    return hashlib.sha256(content).hexdigest()


@dataclass(frozen=True)
class ChainKey:
    """The key of a journal's chain from event `keyed_from` on (earlier events, written
    before chains were keyed, stay plain SHA-256)."""

    key: bytes
    keyed_from: int

    def for_event(self, seq: int) -> bytes | None:
        return self.key if seq >= self.keyed_from else None


@dataclass
class LedgerEntry:
    """A payout_ref's row of the ledger (table payouts)."""

    payout_ref: str
    status: LedgerStatus
    details: str
    run_id: str
    attempt_id: int | None
    error: str
    quote_id: str
    payout_id: str
    reference_number: str
    rate: Decimal | None
    fee: Decimal | None
    target_amount: Decimal | None
    total_debit: Decimal | None
    amount: Decimal | None
    source_currency: str
    target_currency: str
    updated_at: str
    quotes_used: int | None = None  # invoice rows: the quotes it took to find the amount

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> LedgerEntry:
        return cls(**{**_with_money(row), "status": stored_status(row["status"])})


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
    status: Status  # once `linked`, the row shows its payout_ref's ledger status instead
    linked: bool = False
    error: str = ""
    warning: str = ""
    amount: Decimal | None = None
    source_currency: str = ""
    target_currency: str = ""
    quote_id: str = ""
    rate: Decimal | None = None
    fee: Decimal | None = None
    target_amount: Decimal | None = None
    total_debit: Decimal | None = None
    updated_at: str = ""
    quotes_used: int | None = None
    asked: Decimal | None = None  # an invoice row's target_amount
    # why a HELD row is held: kept as the run's hold event, not in run_rows (Journal.run_rows)
    hold: HoldKind | None = None

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> RunRow:
        """A run_rows row: its inputs with their cell types, its money as Decimal."""
        values = _with_money(row)
        del values["run_id"]
        return cls(**{**values, "inputs": unpack_values(values["inputs"]),
                      "linked": bool(values["linked"]), "status": _row_status(values["status"])})


class ServiceListCheck(TypedDict):
    """What the check against the service's own payout list read before paying (a run's
    `service_list_check`, engine.service_ledger)."""

    since: str  # payout_ref matches from then on
    amount_since: str  # account and amount matches from then on ("": none)
    pages: int
    payouts_seen: int
    complete: bool  # each state's list was read back to `since` (not cut by the page cap)


class RunStartInfo(TypedDict, total=False):
    """What a run records of itself when it starts (the `info` of run.started): who ran
    it, where and how. engine.run_info.RunInfo writes it, one field per key (an approved
    plan's three keys from its one `plan` field); tests/engine/test_run_info.py fails when a
    key is added here and not there, or there and not here. No plan: no plan_ keys; no
    payout list read: no service_list_check."""

    operator: str
    host: str
    tool_version: str
    service: str
    base_url: str
    key_fingerprint: str
    sandbox: bool
    journal: str
    settings: dict[str, Any]  # the run's options and the controls that decided its holds
    plan_id: str  # an approved plan's (controls.plan_file.PlanRunInfo)
    plan_maker: str
    plan_approvers: str
    service_list_check: ServiceListCheck
    payee_changes: list[dict[str, Any]]  # controls.payees.PayeeChange


class RunInfoRecord(RunStartInfo, total=False):
    """A run's `info` as the journal keeps it (runs.info): what it recorded when it started
    (RunStartInfo), merged with what run.finished adds. A run that ended early, or was
    recorded by an older batchpay, lacks some keys: read them with `.get`."""

    # added when the run ends (Journal.finish_run)
    counts: dict[str, int]  # rows per status
    totals: dict[str, str]  # this run's own debit per source currency
    sent_rows: dict[str, int]  # this run's own payouts per source currency
    results: str  # the results workbook's path
    wallet_before: dict[str, str]  # per currency, on a real service
    wallet_after: dict[str, str]


@dataclass
class RunRecord:
    id: str
    kind: str
    started_at: str
    sheet: str
    input_sha256: str
    input_columns: list[str]
    info: RunInfoRecord = field(default_factory=lambda: RunInfoRecord())
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


def walk_chain(events: Iterable[Mapping[str, Any]], head: str | None = None,
               key: ChainKey | None = None) -> ChainCheck:
    """Check events (in seq order) link up from GENESIS, each hash over its content (keyed
    with `key` from its first keyed event); with `head`, also that the chain reaches it (a
    chain cut short at its end does not)."""
    prev, count, expected_seq = GENESIS, 0, 1
    seen_head = head is None or head == GENESIS
    for r in events:
        count += 1
        if r["seq"] != expected_seq:
            return ChainCheck(False, count, prev, f"event {expected_seq} is missing "
                              f"(next stored is {r['seq']})", expected_seq)
        if r["prev_hash"] != prev:
            return ChainCheck(False, count, prev, f"event {r['seq']} does not follow "
                              "the event before it (deleted, inserted or reordered)", r["seq"])
        digest = event_hash(prev, r["seq"], r["at"], r["kind"], r["run_id"],
                            r["payout_ref"], r["data"], key.for_event(r["seq"]) if key else None)
        if digest != r["hash"]:
            keyed = " (or its hash recomputed without the chain's key)" if key else ""
            return ChainCheck(False, count, prev, f"event {r['seq']} ({r['kind']}) was "
                              f"changed after it was written{keyed}", r["seq"])
        prev = r["hash"]
        expected_seq += 1
        if head is not None and prev == head:
            seen_head = True
    if not seen_head:
        return ChainCheck(False, count, prev, "the chain does not contain the given head: "
                          "events were removed from its end (truncated) or it is another journal")
    return ChainCheck(True, count, prev)
