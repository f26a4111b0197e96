"""Moving a journal and keeping copies of it: `batchpay journal copy` and `journal backup`.

A copy is taken whole or not at all: the source is read inside one of its write
transactions (nothing else writes meanwhile, so the tables and the chain are one moment's),
checked (its chain, and its tables against the chain) before a row is copied, and the
target is checked the same way inside the transaction that fills it, which commits only
when the target's chain head is the source's. The target must be empty: copying into a
journal that already holds payouts would merge two histories into no chain at all.

A backup is a consistent copy that can be put back: SQLite's online backup API for a file
(a snapshot even while a run writes), `pg_dump` for a PostgreSQL database (the server's own
consistent dump). A journal restored from an older backup forgets the payouts made since;
`run` still pays nothing twice, because before paying it checks the service's own payout
list (engine.service_ledger) and holds rows the service already paid.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from batchpay.errors import JournalError, JournalTampered
from batchpay.journal.integrity import check
from batchpay.journal.store import Journal

# the tables a journal holds and the order their rows are copied in (runs in the order they
# were recorded: SQLite's rowid, PostgreSQL's rowid column); schema_version is the target's
TABLES: dict[str, str] = {
    "meta": "key",
    "runs": "rowid",
    "run_rows": "run_id, seq",
    "payouts": "payout_ref",
    "attempts": "id",
    "events": "seq",
}
BATCH = 1000


@dataclass
class Moved:
    """What a copy or a backup did: events checked, the chain head, seconds taken."""

    events: int
    head: str
    seconds: float
    where: str


def _rows(source: Journal, table: str) -> tuple[list[str], Iterator[Sequence[Any]]]:
    cursor = source.db.execute(f"SELECT * FROM {table} ORDER BY {TABLES[table]}")
    columns = [d[0] for d in cursor.description if d[0] != "rowid"]
    keep = [i for i, d in enumerate(cursor.description) if d[0] != "rowid"]
    return columns, (tuple(r[i] for i in keep) for r in cursor)


def copy_journal(source: Journal, target_where: Path | str) -> Moved:
    """Copy every table of `source` into the new, empty journal at `target_where` (a file or
    a postgresql:// address), checked before and after: the same chain head, or nothing."""
    started = time.perf_counter()
    with source.transaction():  # one moment of the source, no writer meanwhile
        before = check(source)
        if not before.ok:
            raise JournalTampered(f"The journal {source.where} does not check out: "
                                  f"{before.problem}. Nothing was copied.",
                                  hint="Restore it from a backup, or run `batchpay verify`.")
        with Journal(target_where) as target:
            _fill(source, target, before.head, before.events)
            return Moved(before.events, before.head, time.perf_counter() - started,
                         target.where)


def _fill(source: Journal, target: Journal, head: str, events: int) -> None:
    held = target.db.execute("SELECT (SELECT COUNT(*) FROM events) + "
                             "(SELECT COUNT(*) FROM payouts)").fetchone()[0]
    if held:
        raise JournalError(f"The journal {target.where} is not empty: a copy goes only into "
                           "a new journal.",
                           hint="Give an empty database (or a new file) to copy into.")
    with target.transaction():
        target.db.execute("DELETE FROM meta")
        for table in TABLES:
            columns, rows = _rows(source, table)
            sql = (f"INSERT INTO {table} ({', '.join(columns)}) "
                   f"VALUES ({', '.join('?' * len(columns))})")
            batch: list[Sequence[Any]] = []
            for row in rows:
                batch.append(row)
                if len(batch) >= BATCH:
                    target.db.executemany(sql, batch)
                    batch.clear()
            if batch:
                target.db.executemany(sql, batch)
        target.store.after_copy()
        target.reread_chain_key()
        after = check(target, head=head)
        if not after.ok or after.head != head or after.events != events:
            problem = after.problem or "its chain head differs"
            raise JournalError(
                f"The copy in {target.where} does not check out ({problem}): nothing was "
                "copied.",
                hint="Keep using the source journal; report this as a bug.")
    target.reread_chain_key()


def backup_journal(journal: Journal, out: Path) -> Moved:
    """A consistent copy of `journal` at `out` (a new file): SQLite's backup API, checked
    by opening the copy; `pg_dump --format=custom` for a PostgreSQL journal."""
    started = time.perf_counter()
    taken = JournalError(f"{out} already exists; a backup never replaces a file.",
                         hint="Give a new file name.")
    if out.exists():
        raise taken
    checked = check(journal)
    if not checked.ok:
        raise JournalTampered(f"The journal {journal.where} does not check out: "
                              f"{checked.problem}. No backup was written.",
                              hint="Keep the journal as it is for the auditor; restore an "
                              "earlier backup.")
    try:
        journal.store.backup(out)
    except FileExistsError:  # made by something else while the journal was checked
        raise taken from None
    if journal.store.kind == "sqlite":  # the copy is a journal: open it and check it
        with Journal(out) as copy:
            copied = check(copy, head=checked.head)
        if not copied.ok:
            out.unlink(missing_ok=True)
            raise JournalError(f"The backup {out} does not check out: {copied.problem}.",
                               hint="Check the free space where it was written, then try again.")
    return Moved(checked.events, checked.head, time.perf_counter() - started, str(out))
