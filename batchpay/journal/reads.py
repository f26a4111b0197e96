"""Read-only questions the engine asks of the journal's tables: what a run requested, which
service the journal is bound to, the payout events of a period and the request bodies they
were sent with.

The SQL stays in the journal's room (plain SQL that PostgreSQL runs too), so that a second
store, or a change of the tables, touches this room alone; the engine reads answers, not
tables.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from decimal import Decimal

from batchpay.journal import event_kinds as kinds
from batchpay.journal.store import Journal

_CHUNK = 500  # ids per `IN (...)`: below every database's limit on parameters


def requested_debits(journal: Journal, run_id: str, statuses: Iterable[str]
                     ) -> Iterator[tuple[str, str | None]]:
    """(source currency, total debit) of each payout the run requested whose ledger state
    is one of `statuses`: the ledger's latest request of each payout_ref made by this run."""
    wanted = sorted(statuses)
    marks = ",".join("?" * len(wanted))
    yield from journal.db.execute(
        f"SELECT source_currency, total_debit FROM payouts WHERE run_id = ? AND status IN "
        f"({marks}) AND attempt_id IN (SELECT id FROM attempts WHERE run_id = ?)",
        (run_id, *wanted, run_id))


def bound_service(journal: Journal) -> str | None:
    """The identity of the service the journal records payouts of (None: not bound yet)."""
    row = journal.db.execute("SELECT value FROM meta WHERE key = 'service'").fetchone()
    return None if row is None else str(row[0])


def payout_events_before(journal: Journal, until: str
                         ) -> Iterator[tuple[str, str, str, str, str]]:
    """(at, kind, run_id, payout_ref, data) of every payout event before `until`, in the
    chain's order."""
    yield from journal.db.execute(
        "SELECT at, kind, run_id, payout_ref, data FROM events "
        "WHERE payout_ref != '' AND kind LIKE ? AND at < ? ORDER BY seq",
        (kinds.PAYOUT + "%", until))


def payout_events_from(journal: Journal, since: str) -> Iterator[tuple[str, str, str, str]]:
    """(at, kind, payout_ref, data) of every payout event at or after `since`, in order."""
    yield from journal.db.execute(
        "SELECT at, kind, payout_ref, data FROM events WHERE payout_ref != '' AND "
        "kind LIKE ? AND at >= ? ORDER BY seq", (kinds.PAYOUT + "%", since))


def request_bodies(journal: Journal, attempts: Sequence[int]) -> dict[int, tuple[str, str]]:
    """attempt id -> (quote id, the request's JSON body) of the payout requests asked for."""
    bodies: dict[int, tuple[str, str]] = {}
    for start in range(0, len(attempts), _CHUNK):
        chunk = list(attempts[start:start + _CHUNK])
        bodies.update({row[0]: (row[1], row[2]) for row in journal.db.execute(
            f"SELECT id, quote_id, body_json FROM attempts WHERE id IN "
            f"({','.join('?' * len(chunk))})", chunk)})
    return bodies


def plan_debits(journal: Journal, plan_id: str) -> dict[str, Decimal]:
    """What the runs of an approved plan sent, per source currency: the quoted debit of
    every payout request made under it, less those proven to have moved no money
    (refused, expired before sending, never received)."""
    spent: dict[str, Decimal] = {}
    field = journal.store.json_text
    for currency, debit in journal.db.execute(
            f"SELECT {field('e.data', 'source_currency')}, "
            f"{field('e.data', 'total_debit')} FROM events e "
            "JOIN runs r ON r.id = e.run_id "
            f"JOIN attempts a ON a.id = CAST({field('e.data', 'attempt')} AS BIGINT) "
            f"WHERE e.kind = ? AND {field('r.info', 'plan_id')} = ? "
            "AND COALESCE(a.outcome, '') NOT IN "
            "('rejected', 'expired', 'not_sent', 'never_received')",
            (kinds.PAYOUT_INTENT, plan_id)):
        spent[currency] = spent.get(currency, Decimal(0)) + Decimal(str(debit))
    return spent
