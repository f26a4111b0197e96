"""A group of payout intents and answers written step by step, each step of all of them
before the next, so that a database server is waited for once per step, not once per call.

An intent reads one answer before it goes on (whether its attempt was made, and its id);
an answer reads one (the attempt's payout_ref and that ref's status). Called one after the
other, a group of 16 intents and 16 answers waits for a PostgreSQL server 32 times, and
each wait also costs the journal's thread the interpreter's lock, which the event loop
holds while it works. Written here, every answer's question is sent, then every intent's
claim, and the group waits twice (then once more, at COMMIT). Each call writes exactly
what it writes alone (Journal.record_answer, Journal.record_intent are these same steps),
inside the group's one transaction (batchpay.journal.grouped).

Only a group of nothing but intents and answers, whose intents name distinct payout_refs,
is written so: two claims of one ref sent before either is written would both see the ref
free. Anything else is written call after call, as before.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from batchpay.errors import AlreadySent
from batchpay.journal.calls import Call, Outcome
from batchpay.journal.store import Journal


def stepwise(journal: Journal, calls: Sequence[Call]) -> list[Outcome] | None:
    """The group's outcomes, its answers' steps and its intents' steps each sent together;
    None when the group is not only intents and answers of distinct refs. Runs inside the
    group's transaction; an error other than an intent refused (AlreadySent, with nothing
    of it written) is raised, and the group is then written call by call."""
    answers: list[int] = []
    intents: list[int] = []
    for i, call in enumerate(calls):
        if _is(call.work, journal, Journal.record_answer) and len(call.args) == 2:
            answers.append(i)
        elif _is(call.work, journal, Journal.record_intent) and len(call.args) == 6:
            intents.append(i)
        else:
            return None
    refs = [calls[i].args[0] for i in intents]
    if len(set(refs)) != len(refs) or len(calls) < 2:
        return None
    outcomes: list[Outcome] = [Outcome()] * len(calls)
    real = journal.db
    journal.db = inserts = Inserts(real)
    try:
        found = [journal.find_attempt(calls[i].args[0]) for i in answers]
        for i, asked in zip(answers, found, strict=True):
            call = calls[i]
            journal.answer_found(asked, *call.args, **(call.kwargs or {}))
        claims = [_claim(journal, calls[i]) for i in intents]
        linked: dict[str, list[int]] = {}
        for i, claim in zip(intents, claims, strict=True):
            ref, run_id, details, _, body, _ = calls[i].args
            kwargs = dict(calls[i].kwargs or {})
            seq = kwargs.pop("seq", None)
            try:
                outcomes[i] = Outcome(value=journal.intent_claimed(
                    claim, ref, run_id, details, body, None, kwargs))
            except AlreadySent as refused:  # its claim made nothing: nothing of it to undo
                outcomes[i] = Outcome(error=refused)
                continue
            if seq is not None:
                linked.setdefault(run_id, []).append(seq)
        for run_id, seqs in linked.items():
            journal.link_run_rows(run_id, seqs)
        inserts.send()
    finally:
        journal.db = real
    return outcomes


class Inserts:
    """The journal's connection, keeping back the rows its INSERTs of events and ledger
    rows add (they answer nothing the group reads) and sending each kind as one statement
    of many rows (`send`): a group of 32 calls adds 48 such rows, one statement each
    otherwise. Any other statement goes through at once."""

    KEPT = ("INSERT INTO events ", "INSERT INTO payouts ")

    def __init__(self, db: Any) -> None:
        self.db = db
        self.kept: dict[str, list[Sequence[Any]]] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self.db, name)

    def execute(self, sql: str, parameters: Sequence[Any] = (), /) -> Any:
        if sql.startswith(self.KEPT) and sql.count("VALUES (") == 1 and "RETURNING" not in sql:
            self.kept.setdefault(sql, []).append(parameters)
            return None
        return self.db.execute(sql, parameters)

    def executemany(self, sql: str, parameters: Any, /) -> Any:
        return self.db.executemany(sql, parameters)

    def send(self) -> None:
        """Every row kept, in the order kept, one statement per kind (and per 50 rows)."""
        for sql, rows in self.kept.items():
            head, _, tail = sql.partition("VALUES (")
            marks, _, rest = tail.partition(")")
            for i in range(0, len(rows), 50):
                chunk = rows[i : i + 50]
                values = ", ".join(f"({marks})" for _ in chunk)
                self.db.execute(f"{head}VALUES {values}{rest}",
                                [value for row in chunk for value in row])
        self.kept.clear()


def _claim(journal: Journal, call: Call) -> Any:
    ref, run_id, _, quote, body, expires_at = call.args
    return journal.claim_attempt(ref, run_id, quote, body, expires_at)


def _is(work: Callable[..., Any], journal: Journal, method: Callable[..., Any]) -> bool:
    """Whether `work` is `method` of this very journal."""
    return getattr(work, "__self__", None) is journal and getattr(
        work, "__func__", None) is method
