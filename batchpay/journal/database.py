"""The journal's SQLite file: opened private, refused when it is not a batchpay journal,
migrated to the current schema, written in nested transactions (durable on request), and
locked for one run at a time. batchpay.journal.store's Journal keeps its records on it.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Self

from batchpay.errors import DISK_FULL_HINT, JournalError
from batchpay.files import create_private, private_dir
from batchpay.journal.chain_keys import JournalChainKey
from batchpay.journal.lock import RunLock, file_identity
from batchpay.journal.schema import migrate


def _unwritten(exc: sqlite3.Error) -> JournalError:
    if "full" in str(exc).lower():
        return JournalError("The disk is full: the journal could not be written.",
                            hint=DISK_FULL_HINT)
    return JournalError(f"Could not write the journal: {exc}.",
                        hint="Check free disk space and permissions.")


class JournalDatabase:
    """One SQLite file (or `:memory:`). Every state change is one transaction; `_chain`
    is the key the store's events are chained with (kept in step with rollbacks)."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path) if str(path) != ":memory:" else None
        self._depth = 0
        self._durable = True
        self._run_lock: RunLock | None = None
        try:
            if self.path is not None:
                private_dir(self.path.parent)
                create_private(self.path)  # private before SQLite writes a byte to it
                self._run_lock = RunLock(self.path, file_identity(self.path))
            self.db = sqlite3.connect(
                str(path), isolation_level=None, timeout=30, check_same_thread=False
            )
            self.db.row_factory = sqlite3.Row
            self._chain = JournalChainKey(self.db, self.path)
            self.db.execute("PRAGMA busy_timeout = 30000")
            self._refuse_foreign()  # before WAL: a file that is not ours is left as it was
            if self.path is not None:
                self.db.execute("PRAGMA journal_mode = WAL")
            self.db.execute("PRAGMA synchronous = FULL")
            self.db.execute("PRAGMA foreign_keys = ON")
            self._migrate()
            self._chain.reread()
            if self.path is not None and os.name == "posix":
                for suffix in ("", "-wal", "-shm"):
                    p = Path(str(self.path) + suffix)
                    if p.exists():
                        os.chmod(p, 0o600)
        except sqlite3.DatabaseError as exc:
            raise JournalError(
                f"Cannot open the journal {path}: {exc}.",
                hint="Is it a batchpay journal? Point --journal (or BATCHPAY_JOURNAL) at the right file.",
            ) from None

    @classmethod
    def existing(cls, path: Path) -> Self:
        """Open a journal that must already be there: reading commands never create one."""
        if not path.is_file():
            raise JournalError(f"No journal at {path}.",
                               hint="Run `batchpay run SHEET` first, or point --journal (or "
                               "BATCHPAY_JOURNAL) at the journal you paid with.")
        return cls(path)

    # --- plumbing -----------------------------------------------------------------------
    def _refuse_foreign(self) -> None:
        tables = {r[0] for r in self.db.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'")}
        if tables and "schema_version" not in tables:
            self.db.close()
            raise JournalError(
                f"{self.path} is an SQLite database but not a batchpay journal.",
                hint="Point --journal (or BATCHPAY_JOURNAL) at a batchpay journal, or at "
                "a new file.")

    def _migrate(self) -> None:
        with self.transaction():
            migrate(self.db)

    def _rolled_back(self) -> None:
        self._chain.reread()  # a key noted in the transaction is undone with it

    @contextlib.contextmanager
    def transaction(self, *, durable: bool = False) -> Iterator[sqlite3.Connection]:
        """BEGIN IMMEDIATE ... COMMIT; nested calls join the outer transaction.

        Every commit survives a crash of the process (WAL). A `durable` one also survives
        a power cut (fsync): intents are written so, because a payout request may leave
        only once its quote id is on disk. Anything else lost by a power cut leaves a row
        in doubt at worst, and in-doubt rows are looked up, never resent blindly.
        """
        if self._depth:
            if durable and not self._durable:
                raise AssertionError("a durable write cannot join a non-durable transaction")
            self._depth += 1
            try:
                yield self.db
            finally:
                self._depth -= 1
            return
        try:
            if durable != self._durable:
                self.db.execute(f"PRAGMA synchronous = {'FULL' if durable else 'NORMAL'}")
                self._durable = durable
            self.db.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            raise JournalError(f"The journal is busy or unwritable: {exc}.") from None
        self._depth = 1
        try:
            yield self.db
        except sqlite3.Error as exc:  # mapped here, where it happens: nothing was written
            self._depth = 0
            with contextlib.suppress(sqlite3.Error):
                self.db.execute("ROLLBACK")
                self._rolled_back()
            raise _unwritten(exc) from None
        except BaseException:
            self._depth = 0
            self.db.execute("ROLLBACK")
            self._rolled_back()
            raise
        self._depth = 0
        try:
            self.db.execute("COMMIT")
        except sqlite3.Error as exc:
            with contextlib.suppress(sqlite3.Error):
                self.db.execute("ROLLBACK")
            raise _unwritten(exc) from None

    def close(self) -> None:
        self.unlock()
        self.db.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- the run lock (batchpay.journal.lock) ------------------------------------------
    def lock(self) -> None:
        """One run/rerun/sync at a time (RunLock); an in-memory journal needs none."""
        if self._run_lock is not None:
            self._run_lock.take()

    def still_at_path(self) -> bool:
        """Whether the file this journal opened is still the one at its path (not deleted,
        moved away or replaced by another file meanwhile)."""
        return self._run_lock is None or self._run_lock.still_at_path()

    def unlock(self) -> None:
        if self._run_lock is not None:
            self._run_lock.release()
