"""A group of payout intents and answers written in PostgreSQL in two statements: one that
asks every question of the group, one that writes everything it decided. The server is
waited for once (the questions' answers) before the COMMIT, and psycopg's cost per
statement (tens of µs of this process's CPU, and as much of the server's) is paid a few
times a group, not a few times a row.

An intent reads one answer before it goes on (whether its attempt was made, and its id);
an answer reads one (the attempt's payout_ref and that ref's status); an event reads the
chain's head. Called one after the other, a group of 16 intents and 16 answers waits for
the server 32 times, and each wait also costs the journal's thread the interpreter's lock,
which the event loop holds while it works. Written here:

- one statement claims every intent's attempt (an INSERT .. SELECT, each made only while no
  payout of its ref may have paid, as alone), asks every answer's question and reads the
  chain's head, after the group's write lock is held;
- the calls then run as they do alone (Journal.record_answer and Journal.record_intent are
  these same steps), and what they write (the answers to their attempts, the run rows
  linked, the ledger rows, the events) is kept back (`Inserts`) and sent as one statement:
  each kind of row one INSERT or UPDATE of many rows, all of them the parts of one
  statement (WITH .. AS (..), ..), which PostgreSQL runs whole or not at all.

All inside the group's one transaction (batchpay.journal.grouped).

Only a group of nothing but intents and answers, whose intents name distinct payout_refs
and whose answers distinct attempts, is written so: two claims of one ref in one statement
would both see the ref free; and only while no answer of the group names one of its
intents' refs (Entangled). Anything else is written call after call, as before; so is
every group in SQLite, where a statement costs no wait and a few µs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from batchpay.errors import AlreadySent
from batchpay.journal.calls import Call, Outcome
from batchpay.journal.records import canonical
from batchpay.journal.store import (
    ANSWERED,
    ATTEMPT_COLUMNS,
    LAST_EVENT,
    TAKEN,
    Journal,
    attempt_refs_query,
    claimable,
)

PARAMETERS_PER_STATEMENT = 30_000  # PostgreSQL takes at most 65,535 values in a statement
ROWS_PER_INSERT = 50


class Entangled(Exception):
    """An answer and an intent of one payout_ref in the group. Its claims are asked before
    its answers are written, so the intent would not see what the answer writes (a quote
    expired: NOT_SENT frees the ref for its new intent): the group's transaction is undone
    (its claims with it) and the group written call by call, in its order."""


def stepwise(journal: Journal, calls: Sequence[Call]) -> list[Outcome] | None:
    """The group's outcomes, its questions asked in one statement and its writes sent as
    one; None when the group is not only intents and answers of distinct refs, or the
    journal is not in PostgreSQL (whose spelling the statements use). Runs inside the
    group's transaction; an error other than an intent refused (AlreadySent, with nothing
    of it written) is raised (Entangled among them), and the group is then written call
    by call."""
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
    found, claimed, head = _asked(real, journal, attempts, [calls[i] for i in intents])
    if {ref for ref, _ in found.values()} & set(refs):
        raise Entangled  # before anything of the calls is written: see Entangled
    journal.last_event = head  # the write lock is held: no other writer appends meanwhile
    journal.db = inserts = Inserts(real)
    try:
        for i in answers:
            call = calls[i]
            journal.answer_found(found[call.args[0]], *call.args, **(call.kwargs or {}))
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


def _asked(db: Any, journal: Journal, attempts: list[int], intents: list[Call]) -> tuple[
        dict[int, tuple[str, str]], dict[str, tuple[Any, str]], tuple[int, str] | None]:
    """Every question of the group in one statement: each answer's attempt's (payout_ref,
    status); each intent's claim, payout_ref → (its new attempt's id as a row, or None; its
    body's text), an attempt made for each ref no payout of which may have paid, as
    claim_attempt makes it (`claimable`); and the chain's head (seq, hash), None when it
    has no event."""
    values: list[Any] = []
    sent: dict[str, str] = {}
    parts: list[str] = []
    claims = ""
    if intents:
        for call in intents:
            ref, run_id, _, quote, body, expires_at = call.args
            sent[ref] = canonical(body)
            values += journal.attempt_values(ref, run_id, body["quoteId"], quote, sent[ref],
                                             expires_at)
        values += TAKEN
        claims = (
            f"WITH claimed AS (INSERT INTO attempts ({ATTEMPT_COLUMNS}) SELECT v.payout_ref,"
            " v.run_id, v.quote_id, v.quote_json, v.body_json,"
            " v.quote_expires_at::double precision, v.created_at FROM (VALUES "
            f"{', '.join(['(?, ?, ?, ?, ?, ?, ?)'] * len(intents))}) AS v({ATTEMPT_COLUMNS})"
            f" WHERE {claimable('v.payout_ref')} RETURNING id, payout_ref) ")
        parts.append("SELECT 'claim', id, payout_ref, NULL FROM claimed")
    if attempts:
        parts.append(attempt_refs_query(len(attempts), tag="'answer', "))
        values += attempts
    parts.append(f"SELECT 'head', h.seq, h.hash, NULL FROM ({LAST_EVENT}) AS h")
    found: dict[int, tuple[str, str]] = {}
    made: dict[str, tuple[Any]] = {}
    head: tuple[int, str] | None = None
    for kind, key, text, status in db.execute(claims + " UNION ALL ".join(parts),
                                              values).fetchall():
        if kind == "answer":
            found[int(key)] = (text, status)
        elif kind == "claim":
            made[text] = (key,)
        else:
            head = (int(key), text)
    return found, {ref: (made.get(ref), text) for ref, text in sent.items()}, head


class Inserts:
    """The journal's connection, keeping back what the group's calls write and nothing of
    the group reads: the rows their INSERTs of events and ledger rows add, the answers
    their steps write to their attempts, and their UPDATEs of run rows. `send` sends them
    in one statement (or a few, should they hold more values than one statement takes),
    each kind as one INSERT or UPDATE of many rows: a group of 32 calls makes about 80
    such writes, one statement each otherwise. Any other statement goes through at once."""

    KEPT = ("INSERT INTO events ", "INSERT INTO payouts ")
    WHOLE = "UPDATE run_rows SET linked = 1 "  # kept as they are (Journal.link_run_rows)
    ANSWERS = ("UPDATE attempts AS a SET answered_at = v.answered_at, outcome = v.outcome, "
               "http_status = v.http_status::integer, message = v.message FROM (VALUES {}) "
               "AS v(answered_at, outcome, http_status, message, id) WHERE a.id = v.id::bigint")

    def __init__(self, db: Any) -> None:
        self.db = db
        self.kept: dict[str, list[Sequence[Any]]] = {}
        self.whole: list[tuple[str, Sequence[Any]]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.db, name)

    def execute(self, sql: str, parameters: Sequence[Any] = (), /) -> Any:
        if (sql == ANSWERED or sql.startswith(self.KEPT) and sql.count("VALUES (") == 1
                and "RETURNING" not in sql):
            self.kept.setdefault(sql, []).append(parameters)
            return None
        if sql.startswith(self.WHOLE):
            self.whole.append((sql, parameters))
            return None
        return self.db.execute(sql, parameters)

    def send(self) -> None:
        """Every write kept, in one statement of many parts where it can be (see
        `_together`), each kind of row one part (and one per ROWS_PER_INSERT rows)."""
        parts: list[tuple[str, list[Any], set[str]]] = [
            (sql, list(values), set()) for sql, values in self.whole]
        for sql, rows in self.kept.items():
            for i in range(0, len(rows), ROWS_PER_INSERT):
                chunk = rows[i : i + ROWS_PER_INSERT]
                values = [value for row in chunk for value in row]
                if sql == ANSWERED:  # the answers' attempts, one UPDATE from their values
                    parts.append((self.ANSWERS.format(", ".join(["(?, ?, ?, ?, ?)"] * len(chunk))),
                                  values, set()))
                    continue
                head, _, tail = sql.partition("VALUES (")
                marks, _, rest = tail.partition(")")
                # a ledger row's payout_ref is its INSERT's first value
                refs = {row[0] for row in chunk} if sql.startswith(self.KEPT[1]) else set()
                parts.append((f"{head}VALUES {', '.join(f'({marks})' for _ in chunk)}{rest}",
                              values, refs))
        for sql, values in _together(parts):
            self.db.execute(sql, values)
        self.kept.clear()
        self.whole.clear()


def _together(parts: list[tuple[str, list[Any], set[str]]]) -> list[tuple[str, list[Any]]]:
    """The parts as few statements: `WITH w0 AS (part), w1 AS (part) last part`, each
    statement at most PARAMETERS_PER_STATEMENT values. PostgreSQL runs every part of a
    statement on one snapshot, none seeing another's rows: two parts that write one ledger
    row (its payout_ref in both) go in two statements, in their order."""
    statements: list[tuple[list[str], list[Any], set[str]]] = []
    for sql, values, refs in parts:
        last = statements[-1] if statements else None
        if (last is None or refs & last[2]
                or len(last[1]) + len(values) > PARAMETERS_PER_STATEMENT):
            statements.append(([sql], list(values), set(refs)))
            continue
        last[0].append(sql)
        last[1].extend(values)
        last[2].update(refs)
    out: list[tuple[str, list[Any]]] = []
    for (*first, final), values, _ in statements:
        named = ", ".join(f"w{n} AS ({part})" for n, part in enumerate(first))
        out.append((f"WITH {named} {final}" if first else final, values))
    return out


def _is(work: Callable[..., Any], journal: Journal, method: Callable[..., Any]) -> bool:
    """Whether `work` is `method` of this very journal."""
    return getattr(work, "__self__", None) is journal and getattr(
        work, "__func__", None) is method
