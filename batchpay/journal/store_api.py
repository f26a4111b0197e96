"""What a journal store is: the few calls batchpay.journal.database makes of a store, and
of its connection, whichever keeps the journal (a SQLite file, batchpay.journal.stores, or a
PostgreSQL database, batchpay.journal.postgres).

Apart from both so that each store builds on it without importing the other: stores.py
opens a PostgreSQL store by name, and postgres.py would otherwise import stores.py back.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Protocol

from batchpay.errors import JournalError


class Connection(Protocol):
    """What the store's queries use of a connection (sqlite3.Connection has it; the
    PostgreSQL store's connection has it too)."""

    def execute(self, sql: str, parameters: Any = (), /) -> Any: ...

    def executemany(self, sql: str, parameters: Iterable[Any], /) -> Any: ...


class Store:
    """One journal's connection, its transactions, its run lock and its SQL dialect."""

    kind = ""
    db: Connection
    path: Path | None = None  # the file, for a SQLite journal on disk
    where = ""  # what messages call this journal (a path, or an address without password)
    errors: tuple[type[Exception], ...] = ()
    # seconds a group of intents may wait for more before it is written, at most (see
    # batchpay.engine.journal_thread): what a group's own cost makes worth a wait
    group_linger = 0.002

    def begin(self, durable: bool) -> None:
        raise NotImplementedError

    def commit(self) -> None:
        self.db.execute("COMMIT")

    def rollback(self) -> None:
        self.db.execute("ROLLBACK")

    @contextlib.contextmanager
    def deferring(self) -> Iterator[None]:
        """Statements sent together with the next one whose answer is read, where the
        store can (PostgreSQL: batchpay.journal.postgres). A store over a file has no
        round trips to save: nothing changes."""
        yield

    def tables(self) -> set[str]:
        raise NotImplementedError

    def schema(self, text: str) -> str:
        """The schema's DDL (SQLite's spelling) in this store's."""
        return text

    def json_text(self, expr: str, key: str) -> str:
        """SQL for the value of top-level `key` of the JSON text `expr`."""
        return f"json_extract({expr}, '$.{key}')"

    def after_migrate(self) -> None:
        """Anything to do once the tables are there."""

    def after_copy(self) -> None:
        """Anything to do once rows were copied in with their ids (batchpay.journal.moving)."""

    def backup(self, out: Path) -> None:
        """A consistent copy of the journal in the new file `out`."""
        raise NotImplementedError

    def lock(self) -> None:
        raise NotImplementedError

    def unlock(self) -> None:
        raise NotImplementedError

    def still_at_path(self) -> bool:
        return True

    def close(self) -> None:
        raise NotImplementedError

    def unwritten(self, exc: Exception) -> JournalError:
        return JournalError(f"Could not write the journal: {exc}.",
                            hint="Check free disk space and permissions.")

    def unbegun(self, exc: Exception) -> JournalError:
        """A write transaction that could not even begin."""
        return JournalError(f"The journal is busy or unwritable: {exc}.")

    def unopened(self, exc: Exception) -> JournalError:
        return JournalError(
            f"Cannot open the journal {self.where}: {exc}.",
            hint="Is it a batchpay journal? Point --journal (or BATCHPAY_JOURNAL) at the right file.")
