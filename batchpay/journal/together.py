"""A group of payout intents and answers written in PostgreSQL step by step, each step of
all of them one statement, so that the server is waited for once per step, not once per
call, and psycopg's cost per statement (about 75 µs of this process's CPU) is paid a few
times a group, not a few times a row.

An intent reads one answer before it goes on (whether its attempt was made, and its id);
an answer reads one (the attempt's payout_ref and that ref's status). Called one after the
other, a group of 16 intents and 16 answers waits for the server 32 times, and each wait
also costs the journal's thread the interpreter's lock, which the event loop holds while it
works. Written here: one SELECT asks every answer's question, one UPDATE writes every
answer to its attempt, one INSERT .. SELECT .. WHERE NOT EXISTS claims every intent's
attempt (each made only while no payout of its ref may have paid, as alone), and the
group's events and ledger rows go as one INSERT each (`Inserts`). Each call writes exactly
what it writes alone (Journal.record_answer and Journal.record_intent are these same
steps), inside the group's one transaction (batchpay.journal.grouped).

Only a group of nothing but intents and answers, whose intents name distinct payout_refs
and whose answers distinct attempts, is written so: two claims of one ref in one statement
would both see the ref free. Anything else is written call after call, as before; so is
every group in SQLite, where a statement costs no wait and a few µs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from batchpay.errors import AlreadySent
from batchpay.journal.calls import Call, Outcome
from batchpay.journal.records import canonical
from batchpay.journal.store import ANSWERED, ATTEMPT_COLUMNS, TAKEN, TAKEN_MARKS, Journal


def stepwise(journal: Journal, calls: Sequence[Call]) -> list[Outcome] | None:
    """The group's outcomes, each step of its answers and of its intents written for all of
    them in one statement; None when the group is not only intents and answers of distinct
    refs, or the journal is not in PostgreSQL (whose spelling the statements use). Runs
    inside the group's transaction; an error other than an intent refused (AlreadySent,
    with nothing of it written) is raised, and the group is then written call by call."""
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
    attempts = [calls[i].args[0] for i in answers]
    if (len(set(refs)) != len(refs) or len(set(attempts)) != len(attempts) or len(calls) < 2
            or journal.store.kind != "postgresql"):
        return None
    outcomes: list[Outcome] = [Outcome()] * len(calls)
    real = journal.db
    journal.db = inserts = Inserts(real)
    try:
        found = journal.attempt_refs(attempts)
        for i in answers:
            call = calls[i]
            journal.answer_found(found[call.args[0]], *call.args, **(call.kwargs or {}))
        claimed = _claimed(real, journal, [calls[i] for i in intents])
        linked: dict[str, list[int]] = {}
        for i in intents:
            ref, run_id, details, _, body, _ = calls[i].args
            kwargs = dict(calls[i].kwargs or {})
            seq = kwargs.pop("seq", None)
            made, sent = claimed[ref]
            try:
                outcomes[i] = Outcome(value=journal.intent_claimed(
                    made, sent, ref, run_id, details, body, None, kwargs))
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


def _claimed(db: Any, journal: Journal, intents: list[Call]) -> dict[str, tuple[Any, str]]:
    """payout_ref → (its new attempt's id as a row, or None; its body's text), every claim
    of the group one statement: an attempt is made for each ref no payout of which may have
    paid, as claim_attempt makes it. Each ref's status is asked by its key (a subquery per
    ref; payout_ref is the ledger's key, so there is at most one): the NOT EXISTS of one
    claim becomes a join here, which a server without statistics of a ledger that grew
    during the run makes by reading the whole ledger, once per group."""
    if not intents:
        return {}
    values: list[Any] = []
    sent: dict[str, str] = {}
    for call in intents:
        ref, run_id, _, quote, body, expires_at = call.args
        sent[ref] = canonical(body)
        values += journal.attempt_values(ref, run_id, body["quoteId"], quote, sent[ref],
                                         expires_at)
    rows = db.execute(
        f"INSERT INTO attempts ({ATTEMPT_COLUMNS}) SELECT v.payout_ref, v.run_id, v.quote_id,"
        " v.quote_json, v.body_json, v.quote_expires_at::double precision, v.created_at FROM"
        f" (VALUES {', '.join(['(?, ?, ?, ?, ?, ?, ?)'] * len(intents))}) AS"
        f" v({ATTEMPT_COLUMNS}) WHERE COALESCE((SELECT p.status FROM payouts p WHERE"
        f" p.payout_ref = v.payout_ref), '') NOT IN ({TAKEN_MARKS}) RETURNING payout_ref, id",
        (*values, *TAKEN)).fetchall()
    made = {r[0]: (r[1],) for r in rows}
    return {ref: (made.get(ref), text) for ref, text in sent.items()}


class Inserts:
    """The journal's connection, keeping back the rows its INSERTs of events and ledger
    rows add, and the answers its steps write to their attempts (they answer nothing the
    group reads), and sending each kind as one statement of many rows (`send`): a group of
    32 calls makes 80 such writes, one statement each otherwise. Any other statement goes
    through at once."""

    KEPT = ("INSERT INTO events ", "INSERT INTO payouts ")
    ANSWERS = ("UPDATE attempts AS a SET answered_at = v.answered_at, outcome = v.outcome, "
               "http_status = v.http_status::integer, message = v.message FROM (VALUES {}) "
               "AS v(answered_at, outcome, http_status, message, id) WHERE a.id = v.id::bigint")

    def __init__(self, db: Any) -> None:
        self.db = db
        self.kept: dict[str, list[Sequence[Any]]] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self.db, name)

    def execute(self, sql: str, parameters: Sequence[Any] = (), /) -> Any:
        if (sql == ANSWERED or sql.startswith(self.KEPT) and sql.count("VALUES (") == 1
                and "RETURNING" not in sql):
            self.kept.setdefault(sql, []).append(parameters)
            return None
        return self.db.execute(sql, parameters)

    def send(self) -> None:
        """Every row kept, in the order kept, one statement per kind (and per 50 rows)."""
        for sql, rows in self.kept.items():
            if sql == ANSWERED:  # the answers' attempts, one UPDATE from their values
                for i in range(0, len(rows), 50):
                    chunk = rows[i : i + 50]
                    self.db.execute(self.ANSWERS.format(", ".join(["(?, ?, ?, ?, ?)"]
                                                                  * len(chunk))),
                                    [value for row in chunk for value in row])
                continue
            head, _, tail = sql.partition("VALUES (")
            marks, _, rest = tail.partition(")")
            for i in range(0, len(rows), 50):
                chunk = rows[i : i + 50]
                values = ", ".join(f"({marks})" for _ in chunk)
                self.db.execute(f"{head}VALUES {values}{rest}",
                                [value for row in chunk for value in row])
        self.kept.clear()


def _is(work: Callable[..., Any], journal: Journal, method: Callable[..., Any]) -> bool:
    """Whether `work` is `method` of this very journal."""
    return getattr(work, "__self__", None) is journal and getattr(
        work, "__func__", None) is method
