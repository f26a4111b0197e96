"""The console's state in the journal's PostgreSQL database: what lets two `batchpay serve`
processes on two hosts serve one team behind one address.

Tables (beside the journal's, in the same schema; their own version table, so that a
journal made before them gets them when a console first opens it):

    console_schema_version  the console tables' version (one row per migration applied)
    console_users           a user's roles, password hash and session generation (JSON)
    console_keys            a user's Ed25519 signing key, held by the server, sealed with a
                            key derived from the chain key, which the database never holds
                            (sealed_keys)
    console_links           one-time login links: SHA-256 of the token, the user, when made
    console_sessions        sessions: SHA-256 of the cookie's id, the user, SHA-256 of the
                            form token, the user's generation, when started and last seen
                            (UTC seconds)
    console_batches         a batch's record (meta.json's JSON)           (batches_postgres)
    console_batch_files     a batch's files: the sheet, checked sheet, plan, signatures,
                            results workbooks (bytea with their SHA-256)   (batches_postgres)
    console_pay_claims      one row per batch whose Pay went ahead        (batches_postgres)

A session's id, its form token and a link's token are never stored, only their SHA-256:
whoever reads the database cannot sign in with them, nor post a form in someone's session.
The form token is derived from the session's id (`form_token`), so every host computes it
and none stores it. A signing key is stored sealed: without the chain key, a copy of the
database yields none (sealed_keys). A user changed or removed on one host has a new
generation, or none, in the database, so its sessions end at their next request on every
host. State changes that read before they write (a user added, a batch's stage moved, the
Pay claim) run in a transaction that first takes a transaction-scoped advisory lock, so
that the hosts' changes follow one another as one process's would.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import json
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psycopg

from batchpay.clock import stamp
from batchpay.console.accounts import Accounts, StoredUser, User
from batchpay.console.sealed_keys import (
    SEALED_PREFIX,
    Seal,
    is_sealed,
    plain_key,
    team_seal,
)
from batchpay.console.sessions import IDLE_SECONDS, LINK_SECONDS, Session, Sessions, new_secret
from batchpay.errors import JournalError, SigningKeyLocked
from batchpay.files import shown_address

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

# 1: users, keys, links, sessions, batches, their files, the Pay claims
# 2: signing keys sealed (sealed_keys; a plain key of version 1 is sealed at its first use),
#    form tokens derived from the session's id, only their SHA-256 stored
CONSOLE_SCHEMA_VERSION = 2

# advisory lock keys (with the journal's schema as second key, as the journal's own locks):
# the journal's are 0x62700001 and 0x62700002
SCHEMA_LOCK = 0x62700010
USERS_LOCK = 0x62700011
BATCHES_LOCK = 0x62700012
FOLLOW_LOCK = 0x62700013  # session-level: the console whose follower refreshes batches
SEEN_EVERY = 60.0  # seconds: a session's last-seen time is written at most this often

SCHEMA = """
CREATE TABLE IF NOT EXISTS console_schema_version (
    version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS console_users (name TEXT PRIMARY KEY, data TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS console_keys (name TEXT PRIMARY KEY, private TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS console_links (
    token_hash TEXT PRIMARY KEY, user_name TEXT NOT NULL, made DOUBLE PRECISION NOT NULL);
CREATE TABLE IF NOT EXISTS console_sessions (
    id_hash TEXT PRIMARY KEY, user_name TEXT NOT NULL, form_token TEXT NOT NULL,
    generation TEXT NOT NULL, started DOUBLE PRECISION NOT NULL,
    seen DOUBLE PRECISION NOT NULL);
CREATE INDEX IF NOT EXISTS console_sessions_user ON console_sessions(user_name);
CREATE TABLE IF NOT EXISTS console_batches (id TEXT PRIMARY KEY, meta TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS console_batch_files (
    batch_id TEXT NOT NULL, name TEXT NOT NULL, sha256 TEXT NOT NULL, data BYTEA NOT NULL,
    PRIMARY KEY (batch_id, name));
CREATE TABLE IF NOT EXISTS console_pay_claims (
    batch_id TEXT PRIMARY KEY, claimed_by TEXT NOT NULL, claimed_at TEXT NOT NULL)
"""

Conn = psycopg.Connection[Any]


def value(conn: Conn, sql: str, parameters: tuple[Any, ...] = ()) -> Any:
    """The first column of the query's one row."""
    row = conn.execute(sql, parameters).fetchone()
    if row is None:
        raise LookupError(sql)
    return row[0]


def hashed(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def form_token(session_id: str) -> str:
    """A session's form token, derived from its id (HMAC-SHA256, 128 bits): the same on
    every host, stored nowhere, and telling nothing of the id it comes from."""
    digest = hmac.new(session_id.encode(), b"batchpay console form token", "sha256").digest()
    return base64.urlsafe_b64encode(digest[:16]).rstrip(b"=").decode()


class ConsoleDatabase:
    """Connections to the journal's database for the console (a few kept open between
    requests), and its transactions: one per thread at a time, joined by nested calls."""

    def __init__(self, url: str, keep: int = 8) -> None:
        self.url, self.where, self.keep = url, shown_address(url), keep
        self._idle: list[Conn] = []
        self._idle_lock = threading.Lock()
        self._bound = threading.local()  # the connection of this thread's transaction
        self._ready = False  # the console's tables are there, at this version
        self._migrate_lock = threading.Lock()

    def _take(self) -> Conn:
        if not self._ready:
            self.migrate()
        with self._idle_lock:
            if self._idle:
                return self._idle.pop()
        return self._connect()

    def _connect(self) -> Conn:
        try:
            return psycopg.connect(self.url, autocommit=True, connect_timeout=15,
                                   application_name="batchpay console")
        except psycopg.Error as exc:
            raise self._failed(exc) from None

    def _give(self, conn: Conn) -> None:
        if conn.closed or conn.broken or (
                conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE):
            conn.close()
            return
        with self._idle_lock:
            if len(self._idle) < self.keep:
                self._idle.append(conn)
                return
        conn.close()

    def _failed(self, exc: Exception) -> JournalError:
        words = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        return JournalError(f"The console cannot use the journal database {self.where}: "
                            f"{words}.", hint="Check that the database server is up and "
                            "reachable, then reload the page.")

    @contextlib.contextmanager
    def connection(self) -> Iterator[Conn]:
        """This thread's transaction's connection, or one of its own for the statement."""
        bound: Conn | None = getattr(self._bound, "conn", None)
        if bound is not None:
            yield bound
            return
        conn = self._take()
        try:
            yield conn
        except psycopg.Error as exc:
            conn.close()
            raise self._failed(exc) from None
        finally:
            self._give(conn)

    @contextlib.contextmanager
    def transaction(self, lock: int) -> Iterator[Conn]:
        """BEGIN, the advisory lock `lock` until COMMIT (or ROLLBACK on any error). A call
        inside another transaction of this thread joins it."""
        bound: Conn | None = getattr(self._bound, "conn", None)
        if bound is not None:
            bound.execute("SELECT pg_advisory_xact_lock(%s, hashtext(current_schema()))",
                          (lock,))
            yield bound
            return
        conn = self._take()
        self._bound.conn = conn
        try:
            conn.execute("BEGIN")
            conn.execute("SELECT pg_advisory_xact_lock(%s, hashtext(current_schema()))",
                          (lock,))
            yield conn
            conn.execute("COMMIT")
        except psycopg.Error as exc:
            conn.close()
            raise self._failed(exc) from None
        except BaseException:
            with contextlib.suppress(psycopg.Error):
                conn.execute("ROLLBACK")
            raise
        finally:
            self._bound.conn = None
            self._give(conn)

    def dedicated(self) -> Conn:
        """A connection of the caller's own, never shared (for a session-level lock)."""
        if not self._ready:
            self.migrate()
        return self._connect()

    def locked(self, lock: int) -> contextlib.AbstractContextManager[Any]:
        """What `with self._lock:` of the file stores becomes: a fresh transaction each time."""
        return _Locked(self, lock)

    def migrate(self) -> None:
        """The console's tables, made or brought to this version, at the first use of the
        database (a console started while the database is down starts, and its /healthz
        says so). The journal's own tables first: a database holding other tables is
        refused as no journal. Under a lock: two consoles starting at once make them once."""
        with self._migrate_lock:
            if self._ready:
                return
            from batchpay.engine import Journal

            Journal(self.url).close()
            conn = self._connect()
            try:
                conn.execute("BEGIN")
                conn.execute("SELECT pg_advisory_xact_lock(%s, hashtext(current_schema()))",
                             (SCHEMA_LOCK,))
                for statement in SCHEMA.split(";"):
                    if statement.strip():
                        conn.execute(statement)
                version = value(conn, "SELECT MAX(version) FROM console_schema_version") or 0
                if version > CONSOLE_SCHEMA_VERSION:
                    raise JournalError(
                        f"The console's tables in {self.where} were written by a newer "
                        f"batchpay (console schema {version}).",
                        hint="Upgrade batchpay on this host to serve them.")
                if 0 < version < 2:  # plain form tokens of version 1: their hash only
                    conn.execute("UPDATE console_sessions SET form_token = "
                                 "encode(sha256(convert_to(form_token, 'UTF8')), 'hex')")
                if version < CONSOLE_SCHEMA_VERSION:
                    conn.execute("INSERT INTO console_schema_version VALUES (%s, %s)",
                                 (CONSOLE_SCHEMA_VERSION, stamp()))
                conn.execute("COMMIT")
            except psycopg.Error as exc:
                raise self._failed(exc) from None
            finally:
                conn.close()
            self._ready = True

    def close(self) -> None:
        with self._idle_lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()


class _Locked:
    """A context manager per `with`, so that threads never share one."""

    def __init__(self, db: ConsoleDatabase, lock: int) -> None:
        self.db, self.lock = db, lock
        self._open = threading.local()

    def __enter__(self) -> Conn:
        manager = self.db.transaction(self.lock)
        stack = getattr(self._open, "stack", None)
        if stack is None:
            stack = self._open.stack = []
        stack.append(manager)
        return manager.__enter__()

    def __exit__(self, *exc: Any) -> bool | None:
        return bool(self._open.stack.pop().__exit__(*exc))


class TeamAccounts(Accounts):
    """The users and their signing keys in the database (see the module); `folder` is
    this host's console folder, for the login link `serve` writes."""

    def __init__(self, folder: Path, db: ConsoleDatabase) -> None:
        super().__init__(folder)
        self.db = db
        self._lock = db.locked(USERS_LOCK)
        # the plain keys of console schema 1 were sealed by this process (an older batchpay
        # refuses schema 2; one started before it may still write one: sealed at its use)
        self._swept = False

    def _load(self) -> dict[str, StoredUser]:
        with self.db.connection() as conn:
            rows = conn.execute("SELECT name, data FROM console_users").fetchall()
        return {name: json.loads(data) for name, data in rows}

    def _save(self, users: dict[str, StoredUser]) -> None:
        with self.db.transaction(USERS_LOCK) as conn:  # joins the one `_lock` began
            known = {r[0] for r in conn.execute("SELECT name FROM console_users")}
            for name in known - set(users):
                conn.execute("DELETE FROM console_users WHERE name = %s", (name,))
                conn.execute("DELETE FROM console_keys WHERE name = %s", (name,))
            for name, data in users.items():
                conn.execute("INSERT INTO console_users VALUES (%s, %s) ON CONFLICT (name) "
                             "DO UPDATE SET data = EXCLUDED.data",
                             (name, json.dumps(data, sort_keys=True)))

    def add(self, name: str, roles: tuple[str, ...], password: str | None, *,
            replace: bool = False) -> User:
        """As Accounts.add; refused before the user is written when this host cannot seal
        their key (no chain key, or another one)."""
        with self.db.connection() as conn:
            team_seal(conn)
        return super().add(name, roles, password, replace=replace)

    def signing_key(self, name: str) -> Ed25519PrivateKey:
        """The user's key, made once by whichever host needs it first (the others read
        that one), kept sealed (sealed_keys). Keys an earlier batchpay kept plain are
        sealed at the first use of any key, all of them at once."""
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

        with self.db.connection() as conn:
            seal = team_seal(conn)
            if not self._swept:
                self._seal_plain(conn, seal, "")
                self._swept = True
            row = conn.execute("SELECT private FROM console_keys WHERE name = %s",
                               (name,)).fetchone()
            if row is None:
                made = seal.seal(name, Ed25519PrivateKey.generate())
                conn.execute("INSERT INTO console_keys VALUES (%s, %s) ON CONFLICT DO NOTHING",
                             (name, made))
                row = conn.execute("SELECT private FROM console_keys WHERE name = %s",
                                   (name,)).fetchone()
            assert row is not None  # made above, by this host or another
            stored = str(row[0])
            if not is_sealed(stored):  # written meanwhile by a console of schema 1
                self._seal_plain(conn, seal, name)
        return seal.open(name, stored) if is_sealed(stored) else plain_key(name, stored)

    @staticmethod
    def _seal_plain(conn: Conn, seal: Seal, name: str) -> None:
        """The plain keys of console schema 1 (of every user, or of `name`) sealed."""
        for plain_name, plain in conn.execute(
                "SELECT name, private FROM console_keys WHERE private NOT LIKE %s "
                "AND (name = %s OR %s = '')", (SEALED_PREFIX + "%", name, name)).fetchall():
            try:
                sealed = seal.seal(plain_name, plain_key(plain_name, plain))
            except SigningKeyLocked:
                continue  # unreadable: refused at its own use, not at the others'
            # only if still the same plain text: another host may have sealed it first
            conn.execute("UPDATE console_keys SET private = %s WHERE name = %s AND "
                         "private = %s", (sealed, plain_name, plain))


class TeamSessions(Sessions):
    """Login links and sessions in the database, by the SHA-256 of their secrets; times
    are UTC seconds (the hosts' monotonic clocks are not one clock)."""

    def __init__(self, db: ConsoleDatabase, clock: Callable[[], float] = time.time) -> None:
        super().__init__()
        self.db, self._clock = db, clock

    def login_link(self, user: str) -> str:
        token = new_secret()
        with self.db.connection() as conn:
            conn.execute("DELETE FROM console_links WHERE made < %s",
                         (self._clock() - LINK_SECONDS,))
            conn.execute("INSERT INTO console_links VALUES (%s, %s, %s)",
                         (hashed(token), user, self._clock()))
        return token

    def redeem(self, token: str, generation_of: Callable[[str], str | None]) -> Session | None:
        with self.db.connection() as conn:
            found = conn.execute("DELETE FROM console_links WHERE token_hash = %s "
                                 "RETURNING user_name, made", (hashed(token),)).fetchone()
        if found is None or self._clock() - found[1] > LINK_SECONDS:
            return None
        generation = generation_of(found[0])
        return None if generation is None else self.start(found[0], generation)

    def start(self, user: str, generation: str) -> Session:
        now = self._clock()
        session_id = new_secret()
        session = Session(session_id, user, form_token(session_id), generation, now, now)
        with self.db.connection() as conn:
            conn.execute("DELETE FROM console_sessions WHERE seen < %s", (now - IDLE_SECONDS,))
            conn.execute("INSERT INTO console_sessions VALUES (%s, %s, %s, %s, %s, %s)",
                         (hashed(session.id), user, hashed(session.form_token), generation,
                          now, now))
        return session

    def get(self, session_id: str | None) -> Session | None:
        if not session_id:
            return None
        key, now = hashed(session_id), self._clock()
        with self.db.connection() as conn:
            row = conn.execute("SELECT user_name, generation, started, seen "
                               "FROM console_sessions WHERE id_hash = %s", (key,)).fetchone()
            if row is None:
                return None
            user, generation, started, seen = row
            if now - seen > IDLE_SECONDS:
                conn.execute("DELETE FROM console_sessions WHERE id_hash = %s", (key,))
                return None
            if now - seen > SEEN_EVERY:
                conn.execute("UPDATE console_sessions SET seen = %s WHERE id_hash = %s",
                             (now, key))
                seen = now
        return Session(session_id, user, form_token(session_id), generation, started, seen)

    def end(self, session_id: str) -> None:
        with self.db.connection() as conn:
            conn.execute("DELETE FROM console_sessions WHERE id_hash = %s",
                         (hashed(session_id),))

    def end_user(self, user: str) -> None:
        with self.db.connection() as conn:
            conn.execute("DELETE FROM console_sessions WHERE user_name = %s", (user,))

    def count(self, user: str, generation: str) -> int:
        with self.db.connection() as conn:
            return int(value(conn, "SELECT COUNT(*) FROM console_sessions WHERE user_name = %s "
                             "AND generation = %s AND seen >= %s",
                             (user, generation, self._clock() - IDLE_SECONDS)))
