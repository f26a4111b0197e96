"""The journal's database: opened private, refused when it is not a batchpay journal,
migrated to the current schema, written in nested transactions (durable on request), and
locked for one run at a time. Its store (batchpay.journal.stores) is a SQLite file or a
PostgreSQL database; batchpay.journal.store's Journal keeps its records on either.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Self

from batchpay.errors import JournalError
from batchpay.files import is_database_address
from batchpay.journal.chain_keys import JournalChainKey
from batchpay.journal.schema import migrate
from batchpay.journal.store_api import Connection, Store
from batchpay.journal.stores import open_store


class JournalDatabase:
    """One journal: a SQLite file (or `:memory:`) or a `postgresql://` database. Every
    state change is one transaction; `_chain` is the key the store's events are chained
    with (kept in step with rollbacks)."""

    def __init__(self, where: Path | str) -> None:
        self._depth = 0
        self._durable_now = True
        # the chain's last event (seq, hash) as this transaction left it: the write lock
        # is held until COMMIT, so no other writer can append meanwhile (Journal._event)
        self.last_event: tuple[int, str] | None = None
        self.store: Store = open_store(where)
        self.path: Path | None = self.store.path
        self.where = self.store.where  # for messages: a path, or an address without password
        self.db: Connection = self.store.db
        try:
            self._chain = JournalChainKey(self.db, self.path or (
                self.where if self.store.kind != "sqlite" else None))
            self._migrate()
            self._chain.reread()
            self.store.after_migrate()
        except JournalError:
            self.store.close()
            raise
        except self.store.errors as exc:
            self.store.close()
            raise self.store.unopened(exc) from None

    @classmethod
    def existing(cls, where: Path | str) -> Self:
        """Open a journal that must already be there: reading commands never create a
        file (a database server's journal is its database, made by its administrator)."""
        if not is_database_address(where) and not Path(where).is_file():
            raise JournalError(f"No journal at {where}.",
                               hint="Run `batchpay run SHEET` first, or point --journal (or "
                               "BATCHPAY_JOURNAL) at the journal you paid with.")
        return cls(where)

    # --- plumbing -----------------------------------------------------------------------
    def _migrate(self) -> None:
        with self.transaction():
            migrate(self.db, self.store.schema)

    def reread_chain_key(self) -> None:
        """What `meta` says of the chain's key now (after rows were copied in, or a call
        rolled back to its savepoint): the chain's head is read again too."""
        self.last_event = None
        self._chain.reread()

    def _rolled_back(self) -> None:
        self.last_event = None
        self._chain.reread()  # a key noted in the transaction is undone with it

    @contextlib.contextmanager
    def transaction(self, *, durable: bool = False) -> Iterator[Connection]:
        """One write transaction (the store's: BEGIN IMMEDIATE on SQLite, BEGIN and the
        write lock on PostgreSQL) ... COMMIT; nested calls join the outer transaction.

        Every commit survives a crash of the process. A `durable` one also survives a
        power cut (SQLite: fsync; PostgreSQL commits are always so): intents are written
        so, because a payout request may leave only once its quote id is on disk. Anything
        else lost by a power cut leaves a row in doubt at worst, and in-doubt rows are
        looked up, never resent blindly.
        """
        if self._depth:
            if durable and not self._durable_now:
                raise AssertionError("a durable write cannot join a non-durable transaction")
            self._depth += 1
            try:
                yield self.db
            finally:
                self._depth -= 1
            return
        errors = self.store.errors
        try:
            self.store.begin(durable)
        except errors as exc:
            with contextlib.suppress(*errors):
                self.store.rollback()
            raise self.store.unbegun(exc) from None
        self._depth, self._durable_now = 1, durable
        self.last_event = None  # another writer may have appended since the last transaction
        try:
            yield self.db
        except errors as exc:  # mapped here, where it happens: nothing was written
            self._depth = 0
            with contextlib.suppress(*errors):
                self.store.rollback()
                self._rolled_back()
            raise self.store.unwritten(exc) from None
        except BaseException:
            self._depth = 0
            with contextlib.suppress(*errors):
                self.store.rollback()
                self._rolled_back()
            raise
        self._depth = 0
        try:
            self.store.commit()
        except errors as exc:
            with contextlib.suppress(*errors):
                self.store.rollback()
            raise self.store.unwritten(exc) from None

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- the run lock: batchpay.journal.lock (a file) or an advisory lock (PostgreSQL) --
    def lock(self) -> None:
        """One run/rerun/sync at a time; an in-memory journal needs none."""
        self.store.lock()

    def still_at_path(self) -> bool:
        """Whether the file this journal opened is still the one at its path (not deleted,
        moved away or replaced by another file meanwhile); a database always is."""
        return self.store.still_at_path()

    def unlock(self) -> None:
        self.store.unlock()
