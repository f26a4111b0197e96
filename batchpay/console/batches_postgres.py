"""A team's batches in the journal's PostgreSQL database: the record (meta.json's JSON) in
`console_batches`, every file of the batch (the sheet as uploaded, the checked sheet, the
plan and its workbook, the signatures, the results workbooks) in `console_batch_files`,
and the Pay claim as a row of `console_pay_claims` (its primary key: one per batch).

The database is the truth; each host keeps a working copy of a batch's files in its own
console folder, because the library that checks, plans and pays reads and writes files.
Reading a batch brings the host's copy up to the database's (files another host wrote
are written here); saving a batch puts the files this host wrote since into the database
with its record, in one transaction. Two hosts never write one batch at once: every
change of a record runs under one advisory lock, and a batch is paid by the one host
whose claim row went in.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from datetime import datetime, timedelta
from pathlib import Path

import psycopg

from batchpay.clock import now as clock_now
from batchpay.clock import parse, stamp
from batchpay.console.batches import (
    _ID,
    Batch,
    Batches,
    BatchRefused,
    Stage,
    set_aside,
    this_process,
)
from batchpay.console.state_postgres import (
    BATCHES_LOCK,
    FOLLOW_LOCK,
    Conn,
    ConsoleDatabase,
    value,
)
from batchpay.errors import JournalError
from batchpay.files import private_dir, replaced_atomically

LOCAL_ONLY = {"meta.json", "pay.claim"}  # the record is a row; the claim too
# a payment claimed (or resumed) on another host this recently may not hold the journal's
# run lock yet: it counts as going on, whatever the lock says
CLAIM_GRACE = timedelta(minutes=2)


class TeamBatches(Batches):
    """Batches in the database, with this host's working copy in `folder`."""

    def __init__(self, folder: Path, db: ConsoleDatabase) -> None:
        super().__init__(folder)
        self.db = db
        self._lock = db.locked(BATCHES_LOCK)
        # a file of the working copy as last written to or read from the database:
        # path → (SHA-256, mtime_ns, size); a file whose stat differs was written here since
        self._known: dict[Path, tuple[str, int, int]] = {}
        self._known_lock = threading.Lock()
        self._leader: Conn | None = None  # holds the follower's lock while this console leads

    # --- the record ---------------------------------------------------------------------
    def save(self, batch: Batch) -> None:
        """The record, and the files written here since they were last in step."""
        with self.db.transaction(BATCHES_LOCK) as conn:
            self._push(conn, batch)
            conn.execute("INSERT INTO console_batches VALUES (%s, %s) ON CONFLICT (id) DO "
                         "UPDATE SET meta = EXCLUDED.meta",
                         (batch.id, json.dumps(batch.meta, sort_keys=True,
                                               ensure_ascii=False)))
        self._write_meta(batch)

    def get(self, batch_id: str) -> Batch | None:
        if not _ID.match(batch_id):
            return None
        with self.db.connection() as conn:
            row = conn.execute("SELECT meta FROM console_batches WHERE id = %s",
                               (batch_id,)).fetchone()
            if row is None:
                return None
            batch = Batch(self.folder / batch_id, json.loads(row[0]))
            self._pull(conn, [batch])
        return batch

    def all(self) -> list[Batch]:
        """Every batch, newest first."""
        with self.db.connection() as conn:
            rows = conn.execute("SELECT id, meta FROM console_batches ORDER BY id DESC"
                                ).fetchall()
            found = [Batch(self.folder / batch_id, json.loads(meta)) for batch_id, meta in rows]
            self._pull(conn, found)
        return found

    def _write_meta(self, batch: Batch) -> None:
        """meta.json in the working copy too: what an operator reads on this host."""
        private_dir(batch.folder)
        with replaced_atomically(batch.folder / "meta.json") as partial:
            fd = os.open(partial, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(batch.meta, handle, indent=2, sort_keys=True, ensure_ascii=False)

    # --- the files ----------------------------------------------------------------------
    def _push(self, conn: Conn, batch: Batch) -> None:
        if not batch.folder.is_dir():
            return
        for path in sorted(batch.folder.iterdir()):
            if path.name in LOCAL_ONLY or not path.is_file() or path.name.startswith("."):
                continue
            stat = path.stat()
            known = self._known.get(path)
            if known is not None and known[1:] == (stat.st_mtime_ns, stat.st_size):
                continue  # as it was read from, or last written to, the database
            data = path.read_bytes()
            sha = hashlib.sha256(data).hexdigest()
            if known is None or known[0] != sha:
                conn.execute("INSERT INTO console_batch_files VALUES (%s, %s, %s, %s) "
                             "ON CONFLICT (batch_id, name) DO UPDATE SET "
                             "sha256 = EXCLUDED.sha256, data = EXCLUDED.data",
                             (batch.id, path.name, sha, data))
            self._remember(path, sha)
        # a file deleted here since it was in step (a review's stale approvals): gone there too
        held = conn.execute("SELECT name FROM console_batch_files WHERE batch_id = %s",
                            (batch.id,)).fetchall()
        for (name,) in held:
            path = batch.folder / name
            if path in self._known and not path.exists():
                conn.execute("DELETE FROM console_batch_files WHERE batch_id = %s AND "
                             "name = %s", (batch.id, name))
                self._forget(path)

    def _pull(self, conn: Conn, batches: list[Batch]) -> None:
        """Write here the files the database holds in another version than this host's
        copy (a file changed here and not yet saved is kept: the save puts it in)."""
        if not batches:
            return
        by_id = {b.id: b for b in batches}
        rows = conn.execute("SELECT batch_id, name, sha256 FROM console_batch_files "
                            "WHERE batch_id = ANY(%s)", (list(by_id),)).fetchall()
        held = {by_id[batch_id].folder / name for batch_id, name, _sha in rows}
        folders = {b.folder for b in batches}
        with self._known_lock:
            known_now = list(self._known.items())
        for path, was in known_now:
            if path.parent in folders and path not in held and path.is_file():
                stat = path.stat()
                if was[1:] == (stat.st_mtime_ns, stat.st_size):  # deleted by another host
                    path.unlink()
                    self._forget(path)
        for batch_id, name, sha in rows:
            path = by_id[batch_id].folder / name
            known = self._known.get(path)
            if known is not None and known[0] == sha:
                continue
            if path.is_file() and known is not None:
                stat = path.stat()
                if known[1:] != (stat.st_mtime_ns, stat.st_size):
                    continue  # written here since: this host's save puts it in
            data = value(conn, "SELECT data FROM console_batch_files WHERE batch_id = %s "
                         "AND name = %s", (batch_id, name))
            private_dir(path.parent)
            with replaced_atomically(path) as partial:
                fd = os.open(partial, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o600)
                with os.fdopen(fd, "wb") as handle:
                    handle.write(bytes(data))
            self._remember(path, sha)

    def _forget(self, path: Path) -> None:
        with self._known_lock:
            self._known.pop(path, None)

    def _remember(self, path: Path, sha: str) -> None:
        stat = path.stat()
        with self._known_lock:
            self._known[path] = (sha, stat.st_mtime_ns, stat.st_size)

    # --- the follower -------------------------------------------------------------------
    def follows_here(self) -> bool:
        """One console of the team follows the paid batches (each refresh spends the API
        key's requests): the one holding the follower's session-level advisory lock, on a
        connection of its own kept while it lives; the database drops it with a stopped
        or lost console, and the next console to ask takes it."""
        with self._known_lock:
            if self._leader is not None and not self._leader.closed and not self._leader.broken:
                return True
            self._leader = None
        try:
            conn = self.db.dedicated()
        except JournalError:
            return False
        try:
            got = value(conn, "SELECT pg_try_advisory_lock(%s, hashtext(current_schema()))",
                        (FOLLOW_LOCK,))
        except psycopg.Error:
            got = False
        if not got:
            conn.close()
            return False
        with self._known_lock:
            self._leader = conn
        return True

    def stop_following(self) -> None:
        """Let another console follow (its lock goes with this connection)."""
        with self._known_lock:
            leader, self._leader = self._leader, None
        if leader is not None:
            leader.close()

    # --- the Pay claim ------------------------------------------------------------------
    def claim_payment(self, batch_id: str, user: str) -> Batch:
        """The one Pay of a batch, on any host: the claim row's primary key lets one in."""
        with self.db.transaction(BATCHES_LOCK) as conn:
            batch = self._existing(batch_id)
            if batch.stage == Stage.DISCARDED:
                raise BatchRefused("This batch was discarded: it is never paid.")
            now = stamp()
            taken = conn.execute("INSERT INTO console_pay_claims VALUES (%s, %s, %s) "
                                 "ON CONFLICT DO NOTHING", (batch_id, user, now)).rowcount
            if taken != 1:
                raise BatchRefused(
                    "This batch is already being paid or was paid: a batch is paid once.",
                    hint="Its progress and results are on its page.")
            batch.meta.update({"stage": Stage.PAYING, "paid_by": user, "paid_at": now,
                               "before_paying": batch.stage, "pay_process": this_process()})
            self.save(batch)
            return batch

    def release_payment(self, batch_id: str, error: str, hint: str) -> Batch:
        with self.db.transaction(BATCHES_LOCK) as conn:
            batch = self._existing(batch_id)
            batch.meta.update({"stage": Stage(batch.meta.get("before_paying", Stage.REVIEWED)),
                               "paid_by": None, "paid_at": None, "pay": None, "error": error,
                               "hint": hint})
            self.save(batch)
            conn.execute("DELETE FROM console_pay_claims WHERE batch_id = %s", (batch_id,))
            return batch

    def discard(self, batch_id: str, user: str) -> Batch:
        with self.db.transaction(BATCHES_LOCK) as conn:
            batch = self._existing(batch_id)
            claimed = conn.execute("SELECT 1 FROM console_pay_claims WHERE batch_id = %s",
                                   (batch_id,)).fetchone()
            set_aside(batch, user, claimed=claimed is not None)
            self.save(batch)
            return batch

    def _existing(self, batch_id: str) -> Batch:
        batch = self.get(batch_id)
        if batch is None:
            raise BatchRefused("No such batch.")
        return batch



def claimed_lately(batch: Batch, now: datetime | None = None) -> bool:
    """Whether the batch's Pay, or its last Resume payment, is younger than CLAIM_GRACE: its
    run may still be starting on its host (the sheet read, the service opened)."""
    stamps = [str(batch.meta.get("paid_at") or "")]
    stamps += [entry.rsplit(" ", 1)[-1] for entry in batch.meta.get("resumed", [])]
    latest = max((parse(s) for s in stamps if s), default=None)
    return latest is not None and (now or clock_now()) - latest < CLAIM_GRACE
