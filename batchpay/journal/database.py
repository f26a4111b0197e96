"""The journal's SQLite file: opened private, refused when it is not a batchpay journal,
written in nested transactions (durable on request), and the hash-chained event log that
every change appends to. batchpay.journal.store's Journal keeps its records on it.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Self

from batchpay.errors import DISK_FULL_HINT, JournalError
from batchpay.files import create_private, private_dir
from batchpay.journal.chain_keys import JournalChainKey
from batchpay.journal.lock import RunLock, file_identity
from batchpay.journal.records import GENESIS, ChainCheck, canonical, event_hash, utcnow
from batchpay.journal.schema import migrate


def _unwritten(exc: sqlite3.Error) -> JournalError:
    if "full" in str(exc).lower():
        return JournalError("The disk is full: the journal could not be written.",
                            hint=DISK_FULL_HINT)
    return JournalError(f"Could not write the journal: {exc}.",
                        hint="Check free disk space and permissions.")


class JournalDatabase:
    """One SQLite file (or `:memory:`). Every state change is one transaction."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path) if str(path) != ":memory:" else None
        self._depth = 0
        self._durable = True
        self._run_lock: RunLock | None = None
        self._chain: JournalChainKey | None = None
        try:
            if self.path is not None:
                private_dir(self.path.parent)
                create_private(self.path)  # private before SQLite writes a byte to it
                self._run_lock = RunLock(self.path, file_identity(self.path))
            self.db = sqlite3.connect(
                str(path), isolation_level=None, timeout=30, check_same_thread=False
            )
            self.db.row_factory = sqlite3.Row
            self.db.execute("PRAGMA busy_timeout = 30000")
            self._refuse_foreign()  # before WAL: a file that is not ours is left as it was
            if self.path is not None:
                self.db.execute("PRAGMA journal_mode = WAL")
            self.db.execute("PRAGMA synchronous = FULL")
            self.db.execute("PRAGMA foreign_keys = ON")
            self._migrate()
            self._chain = JournalChainKey(self.db, self.path)
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
        if self._chain is not None:
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

    # --- events: the hash chain ----------------------------------------------------------
    def _event(self, kind: str, *, run_id: str = "", ref: str = "", data: Any = None) -> str:
        """Append one event; must run inside a transaction (so it reads the true head)."""
        assert self._depth, "events are written inside a transaction"
        assert self._chain is not None, "events are written once the journal is open"
        last = self.db.execute("SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1").fetchone()
        seq = (last[0] + 1) if last else 1
        prev = last[1] if last else GENESIS
        at = utcnow()
        text = canonical(data if data is not None else {})
        digest = event_hash(prev, seq, at, kind, run_id, ref, text, self._chain.for_writing(seq))
        self.db.execute(
            "INSERT INTO events (seq, at, kind, run_id, payout_ref, data, prev_hash, hash) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (seq, at, kind, run_id, ref, text, prev, digest),
        )
        return digest

    def head(self) -> str:
        row = self.db.execute("SELECT hash FROM events ORDER BY seq DESC LIMIT 1").fetchone()
        return str(row[0]) if row else GENESIS

    def verify(self, head: str | None = None) -> ChainCheck:
        """The hash chain from its first event (keyed from its first keyed event); with
        `head`, also that it reaches it."""
        assert self._chain is not None
        return self._chain.check(self.db.execute("SELECT * FROM events ORDER BY seq"), head)

    def holds_event(self, digest: str) -> bool:
        """Whether an event of this journal has this hash (a plan's chain head, say)."""
        return self.db.execute("SELECT 1 FROM events WHERE hash = ? LIMIT 1",
                               (digest,)).fetchone() is not None
