"""Where a journal is kept: one SQLite file (the default) or a PostgreSQL database that
several hosts share. batchpay.journal.database's JournalDatabase works on either through
the Store of batchpay.journal.store_api; the store's SQL is written once, in SQLite's spelling with `?`
placeholders, and a store turns it into its own where the two differ (placeholders, the
schema's column types, JSON fields, upserts are written the way both accept).

What differs is what makes exactly-once true on each:
- SQLite: a write transaction is BEGIN IMMEDIATE (one writer at a time on the file), and
  the run lock is an OS lock on the file (batchpay.journal.lock).
- PostgreSQL (batchpay.journal.postgres): every write transaction first takes one
  transaction-scoped advisory lock, so that writes, and the hash chain's appends, follow
  one another as on SQLite, across processes and hosts; the run lock is a session-level
  advisory lock, which the server drops with the connection (a killed process leaves none).
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from batchpay.errors import DISK_FULL_HINT, JournalError
from batchpay.files import create_private, is_database_address, private_dir
from batchpay.journal.descriptors import keep
from batchpay.journal.lock import RunLock, file_identity
from batchpay.journal.store_api import Store


class SqliteStore(Store):
    """One SQLite file (or `:memory:`), opened private, in WAL mode."""

    kind = "sqlite"
    errors = (sqlite3.Error,)

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path) if str(path) != ":memory:" else None
        self.where = str(path)
        self._durable = True
        self._run_lock: RunLock | None = None
        try:
            if self.path is not None:
                if not self.path.exists():  # made private before SQLite writes a byte
                    # to it, through the descriptor kept open (never closed: closing one
                    # would drop SQLite's locks of this process's connections to the file)
                    private_dir(self.path.parent)
                    keep(self.path, create=True)
                self._run_lock = RunLock(self.path, file_identity(self.path))
            self.db = self.sqlite = sqlite3.connect(
                str(path), isolation_level=None, timeout=30, check_same_thread=False)
            self.sqlite.row_factory = sqlite3.Row
            self.db.execute("PRAGMA busy_timeout = 30000")
            self._refuse_foreign()  # before WAL: a file that is not ours is left as it was
            if self.path is not None:
                self.db.execute("PRAGMA journal_mode = WAL")
            self.db.execute("PRAGMA synchronous = FULL")
            self.db.execute("PRAGMA foreign_keys = ON")
        except sqlite3.DatabaseError as exc:
            raise self.unopened(exc) from None

    def _refuse_foreign(self) -> None:
        tables = self.tables()
        if tables and "schema_version" not in tables:
            self.sqlite.close()
            raise JournalError(
                f"{self.path} is an SQLite database but not a batchpay journal.",
                hint="Point --journal (or BATCHPAY_JOURNAL) at a batchpay journal, or at "
                "a new file.")

    def tables(self) -> set[str]:
        return {r[0] for r in self.db.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'")}

    def begin(self, durable: bool) -> None:
        """BEGIN IMMEDIATE: the file's one writer from here. A `durable` transaction is
        fsynced at commit (synchronous FULL), the others survive a crash of the process."""
        if durable != self._durable:
            self.db.execute(f"PRAGMA synchronous = {'FULL' if durable else 'NORMAL'}")
            self._durable = durable
        self.db.execute("BEGIN IMMEDIATE")

    def after_migrate(self) -> None:
        if self.path is not None and os.name == "posix":
            for suffix in ("", "-wal", "-shm"):
                p = Path(str(self.path) + suffix)
                if p.exists():
                    os.chmod(p, 0o600)

    def unwritten(self, exc: Exception) -> JournalError:
        if "full" in str(exc).lower():
            return JournalError("The disk is full: the journal could not be written.",
                                hint=DISK_FULL_HINT)
        return super().unwritten(exc)

    def backup(self, out: Path) -> None:
        """SQLite's online backup API: a consistent snapshot, even while a run writes."""
        create_private(out, new=True)  # private before a byte is written
        target = sqlite3.connect(str(out))
        try:
            self.sqlite.backup(target)
        except sqlite3.Error as exc:
            target.close()
            out.unlink(missing_ok=True)
            raise JournalError(f"Could not write the backup {out}: {exc}.",
                               hint="Check free space and permissions.") from None
        target.close()

    def lock(self) -> None:
        if self._run_lock is not None:
            self._run_lock.take()

    def unlock(self) -> None:
        if self._run_lock is not None:
            self._run_lock.release()

    def still_at_path(self) -> bool:
        return self._run_lock is None or self._run_lock.still_at_path()

    def close(self) -> None:
        self.unlock()
        self.sqlite.close()


def reachable(where: Path | str, timeout: float = 5.0) -> bool:
    """Whether the journal could be opened now, without opening it as a journal (no
    migration, no lock): a database that answers, or a file (or the folder for a new one)
    that can be read. For a health check."""
    if is_database_address(where):
        try:
            from batchpay.journal.postgres import answers
        except ImportError:
            return False
        return answers(str(where), timeout)
    path = Path(where)
    if not path.exists():
        return path.parent.is_dir() and os.access(path.parent, os.W_OK)
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=timeout)
        try:
            db.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
        finally:
            db.close()
    except sqlite3.Error:
        return False
    return True


def open_store(where: Path | str) -> Store:
    """The store a journal setting names: a `postgresql://` address, else a file."""
    if is_database_address(where):
        try:
            from batchpay.journal.postgres import PostgresStore
        except ImportError:
            raise JournalError("A journal in PostgreSQL needs the psycopg package, which is "
                               "not installed.",
                               hint="pip install 'batchpay[postgresql]'") from None
        return PostgresStore(str(where))
    return SqliteStore(where)
