"""The journal's tables checked against its hash chain, before anything is decided from them.

`run` decides from the ledger (`payouts`: what was paid) and resends in-doubt rows from
`attempts` (the exact body). Both are plain tables a person can edit; the hash-chained
`events` cannot be edited unnoticed. So every change to a ledger row or an attempt is also
in an event (its status, quote, payout id, amount and currencies, the SHA-256 of its
details and of the attempt's body), and before a run, a rerun or a sync sends anything the
events are replayed and compared with the tables: a row set to NOT_SENT by hand, a
deleted or inserted ledger row, or an attempt whose body now names another account is
named, and the command stops.

The runs table is checked the same way: `run.started` holds a run's kind, sheet, input
hash and info, `run.finished` its outcome, exit code and what it added to the info (the
counts, the totals, the wallet before and after), so a wallet figure edited in `runs.info`
to hide money taken from the wallet outside batchpay is named. `replay_runs` gives the
runs as the chain has them: what a statement is rendered from.

Journals written before the events carried the details and bodies are checked for what
their events hold (statuses, quotes, payout ids, amounts; a run's start time and input
columns only from the events that carry them).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from batchpay.errors import JournalTampered
from batchpay.journal.records import ChainCheck, RunRecord, sha256_text

if TYPE_CHECKING:
    from batchpay.journal.store import Journal
    from batchpay.journal.store_api import Connection

# run.finished's own fields; the rest of its data is what the run added to its info
RUN_END_FIELDS = ("outcome", "exit_code")
# ledger columns an event states exactly (text as stored)
CHECKED_FIELDS = ("status", "quote_id", "payout_id", "amount", "source_currency",
                  "target_currency")
MAX_NAMED = 5


@dataclass
class _Replayed:
    fields: dict[str, str]
    details_sha256: str | None = None
    attempt: int | None = None


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def replay(db: Connection) -> tuple[dict[str, _Replayed], dict[int, tuple[str, str]]]:
    """What the events say each ledger row and attempt must hold."""
    ledger: dict[str, _Replayed] = {}
    attempts: dict[int, tuple[str, str]] = {}  # attempt id -> (payout_ref, body sha256)
    for ref, data_text in db.execute(
            "SELECT payout_ref, data FROM events WHERE payout_ref != '' AND kind LIKE 'payout.%'"
            " ORDER BY seq"):
        data = json.loads(data_text)
        if "status" not in data:
            continue
        row = ledger.setdefault(ref, _Replayed({"quote_id": "", "payout_id": ""}))
        for name in CHECKED_FIELDS:
            if name in data:
                row.fields[name] = _text(data[name])
        if "details_sha256" in data:
            row.details_sha256 = data["details_sha256"]
        if "attempt" in data:
            row.attempt = int(data["attempt"])
            attempts[row.attempt] = (ref, data.get("body_sha256", ""))
    return ledger, attempts


def disagreements(db: Connection) -> Iterator[str]:
    """Every way the ledger and the attempts differ from the chain, one line each."""
    ledger, attempts = replay(db)
    stored = {r["payout_ref"]: r for r in db.execute("SELECT * FROM payouts")}
    for ref, row in stored.items():
        chain = ledger.get(ref)
        if chain is None:
            yield f"payout_ref {ref} is in the ledger but in no event (added by hand)"
            continue
        for name, value in chain.fields.items():
            if _text(row[name]) != value:
                yield (f"payout_ref {ref}: the ledger's {name} is {_text(row[name])!r}, the "
                       f"chain says {value!r}")
        if chain.details_sha256 and sha256_text(row["details"]) != chain.details_sha256:
            yield f"payout_ref {ref}: its recipient, account or amount details were changed"
        if chain.attempt is not None and row["attempt_id"] != chain.attempt:
            yield f"payout_ref {ref}: its latest payout request is not the one in the chain"
    for ref in ledger.keys() - stored.keys():
        yield f"payout_ref {ref} is in the chain but missing from the ledger (deleted)"
    bodies = {r["id"]: r for r in db.execute("SELECT id, payout_ref, body_json FROM attempts")}
    for attempt_id, (ref, body_sha256) in attempts.items():
        found = bodies.get(attempt_id)
        if found is None:
            yield f"payout_ref {ref}: payout request {attempt_id} is missing (deleted)"
        elif found["payout_ref"] != ref or (
                body_sha256 and sha256_text(found["body_json"]) != body_sha256):
            yield (f"payout_ref {ref}: the body of payout request {attempt_id} was changed "
                   "(a resend would not be the request that was journaled)")


def replay_runs(db: Connection) -> dict[str, RunRecord]:
    """Every run as its events have it, in the order they were started: the kind, sheet,
    input hash and info of `run.started`, merged with what each `run.finished` added; a
    run's start time is its own (or, in events that do not carry it, its event's time),
    its end time that of its last `run.finished`."""
    runs: dict[str, RunRecord] = {}
    for at, kind, run_id, text in db.execute(
            "SELECT at, kind, run_id, data FROM events "
            "WHERE kind IN ('run.started', 'run.finished') ORDER BY seq"):
        data = _object(text)
        if kind == "run.started":
            runs[run_id] = RunRecord(
                id=run_id, kind=_text(data.get("kind")), started_at=_text(
                    data.get("started_at") or at), sheet=_text(data.get("sheet")),
                input_sha256=_text(data.get("input_sha256")),
                input_columns=list(data.get("input_columns") or []),
                info=dict(data.get("info") or {}))
        elif run_id in runs:
            run = runs[run_id]
            run.info = {**run.info, **{k: v for k, v in data.items()
                                       if k not in RUN_END_FIELDS}}
            run.outcome, run.exit_code = data.get("outcome"), data.get("exit_code")
            run.finished_at = at
    return runs


def _object(text: str) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def run_disagreements(db: Connection) -> Iterator[str]:
    """Every way the runs table differs from the chain's run events, one line each."""
    chained = replay_runs(db)
    stamped = {run_id for run_id, text in db.execute(
        "SELECT run_id, data FROM events WHERE kind = 'run.started'")
        if "started_at" in _object(text)}
    stored = {r["id"]: r for r in db.execute("SELECT * FROM runs")}
    for run_id, row in stored.items():
        chain = chained.get(run_id)
        if chain is None:
            yield f"run {run_id} is in the runs table but in no event (added by hand)"
            continue
        said = {"kind": chain.kind, "sheet": chain.sheet, "input_sha256": chain.input_sha256,
                "outcome": _text(chain.outcome), "exit_code": _text(chain.exit_code),
                "finished": "yes" if chain.finished_at else "no"}
        held = {"kind": row["kind"], "sheet": row["sheet"],
                "input_sha256": row["input_sha256"], "outcome": _text(row["outcome"]),
                "exit_code": _text(row["exit_code"]),
                "finished": "yes" if row["finished_at"] else "no"}
        if run_id in stamped:
            said["started_at"], held["started_at"] = chain.started_at, row["started_at"]
            said["input_columns"] = json.dumps(chain.input_columns, ensure_ascii=False)
            held["input_columns"] = json.dumps(_list(row["input_columns"]), ensure_ascii=False)
        for name, value in said.items():
            if held[name] != value:
                yield (f"run {run_id}: the runs table's {name} is {held[name]!r}, the chain "
                       f"says {value!r}")
        info = _object(row["info"])
        edited = sorted(k for k in info.keys() | chain.info.keys()
                        if info.get(k) != chain.info.get(k))
        if edited:
            yield (f"run {run_id}: the runs table's info was edited ({', '.join(edited)} "
                   "not as the chain says)")
    for run_id in chained.keys() - stored.keys():
        yield f"run {run_id} is in the chain but missing from the runs table (deleted)"


def _list(text: str) -> list[Any]:
    try:
        found = json.loads(text)
    except ValueError:
        return []
    return found if isinstance(found, list) else []


def check(journal: Journal, head: str | None = None) -> ChainCheck:
    """The chain itself, then the tables against it: what `verify` reports and what `run`,
    `rerun` and `sync` require before any request."""
    chained = journal.verify(head=head)
    if not chained.ok:
        return chained
    problems = [*disagreements(journal.db), *run_disagreements(journal.db)]
    if problems:
        named = "; ".join(problems[:MAX_NAMED])
        more = f" (and {len(problems) - MAX_NAMED} more)" if len(problems) > MAX_NAMED else ""
        return ChainCheck(False, chained.events, chained.head,
                          f"the tables disagree with the chain: {named}{more}")
    return chained


def require_intact(journal: Journal) -> None:
    """Refuse (exit 2, before any request) a journal that disagrees with its chain."""
    result = check(journal)
    if not result.ok:
        raise JournalTampered(
            f"The journal {journal.where} was changed outside batchpay: {result.problem}. "
            "Nothing was sent.",
            hint="Keep this copy for the auditor, restore the journal from a backup, and "
            "run `batchpay verify` to confirm it.")
