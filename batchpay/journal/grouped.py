"""Several journal calls in one transaction, each as if it had been alone.

A durable commit waits for the disk (an fsync on SQLite, a WAL flush on PostgreSQL): one
per payout intent made the journal, not the service, the limit of a run. Calls that are
waiting together are written together instead: one transaction, one commit, one flush for
the lot ("group commit"). Each call still runs whole or not at all: it runs inside a
savepoint, and a call that fails (an intent refused with AlreadySent, a constraint) is
rolled back to its savepoint alone, its error handed to its caller, while the others go on.

Nothing of a group is reported before its commit has returned: a caller told that its
intent is written may send the payout request, because the intent is then on disk. When
the commit itself fails, every call of the group gets that error (nothing of it was
written).

A call almost never fails, and two savepoint statements per call cost more than the
call's own, so a group is first written in one go, without savepoints. On PostgreSQL,
where every statement is a round trip to the server, its statements travel in psycopg's
pipeline mode (batchpay.journal.postgres), and a group of intents and answers is written
in two statements, its questions and its writes (batchpay.journal.together): the server is
waited for once before COMMIT.
Should any call of it fail (an intent refused, a constraint, a lost connection), that
attempt is rolled back whole (nothing of it was committed, nothing reported) and the group
is written again the exact way above, each call in its own savepoint, so that the failing
call alone gets its error.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from batchpay.journal.calls import Call, Outcome
from batchpay.journal.database import JournalDatabase
from batchpay.journal.store import Journal
from batchpay.journal.together import stepwise

__all__ = ["Call", "Outcome", "run_grouped"]

SAVEPOINT = "grouped_call"


def run_grouped(db: JournalDatabase, calls: Sequence[Call]) -> list[Outcome]:
    """Run `calls` in order in one transaction (durable when one of them must be); their
    outcomes in the same order, known only once the transaction has committed."""
    durable = any(call.durable for call in calls)
    at_once = _at_once(db, calls, durable)
    if at_once is not None:
        return at_once
    outcomes: list[Outcome] = []
    try:
        with db.transaction(durable=durable):
            for call in calls:
                outcomes.append(_one(db, call))
    except Exception as exc:  # the group's BEGIN or COMMIT failed: none of it was written
        return [Outcome(error=exc)] * len(calls)
    return outcomes


def _at_once(db: JournalDatabase, calls: Sequence[Call], durable: bool) -> list[Outcome] | None:
    """The calls' outcomes written in one transaction without savepoints (on PostgreSQL,
    of statements sent together), or None when a call failed (then nothing of them was
    written: the transaction was rolled back, or never committed)."""
    values: list[Any] = []
    steps: list[Outcome] | None = None
    committed = False
    try:
        with db.store.deferring():
            with db.transaction(durable=durable):
                # in two statements where the store waits for a server (stepwise says which)
                steps = stepwise(db, calls) if isinstance(db, Journal) else None
                if steps is None:
                    for call in calls:
                        values.append(call.work(*call.args, **(call.kwargs or {})))
            committed = True
    except Exception:
        if not committed:  # once committed, the group is written: never written twice
            return None
    return steps if steps is not None else [Outcome(value=value) for value in values]


def _one(db: JournalDatabase, call: Call) -> Outcome:
    db.db.execute(f"SAVEPOINT {SAVEPOINT}")
    try:
        value = call.work(*call.args, **(call.kwargs or {}))
    except Exception as exc:
        # a failed rollback to the savepoint raises out of the group: all of it is undone
        db.db.execute(f"ROLLBACK TO SAVEPOINT {SAVEPOINT}")
        db.db.execute(f"RELEASE SAVEPOINT {SAVEPOINT}")
        db.reread_chain_key()  # a key noted by the call is undone with it
        if isinstance(exc, db.store.errors):
            exc = db.store.unwritten(exc)
        return Outcome(error=exc)
    db.db.execute(f"RELEASE SAVEPOINT {SAVEPOINT}")
    return Outcome(value=value)
