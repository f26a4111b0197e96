"""One request budget per API key, kept in the journal's database.

The provider allows 100 requests a minute, 1,000 an hour and 10,000 a day *per key*, not
per process: a run, a sync, a listener's lookups and a console's polls in the same hour
spend one budget together, from every host that pays with the key. So the send times are
kept where all of them meet, the journal's database: one table of booked send times keyed
by a hash of the key (never the key itself), and every request books its time there
before it leaves, in one short transaction that no other booking can come between:

- SQLite: `BEGIN IMMEDIATE` on the journal file (the processes of one machine);
- PostgreSQL: a transaction-scoped advisory lock per key hash (every host), and the
  server's clock, so that hosts whose clocks differ still book one timeline.

Bookings are first come, first served: a new one is never earlier than the latest, and
lies where the limit-th most recent booking has left every window (plus a margin for the
network and a busy host: `window_margin`). A process killed after booking leaves its slot unused: the budget errs on the
side of fewer requests, never more.

The windows themselves (limit, seconds) are the caller's (batchpay.provider.pacing reads
them from the `rate_limit` setting); this module only keeps the times.
"""

from __future__ import annotations

import contextlib
import hashlib
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from batchpay.errors import JournalError
from batchpay.files import is_database_address, private_dir, shown_address
from batchpay.journal.descriptors import keep

Windows = Sequence[tuple[int, float]]  # (at most this many requests, in this many seconds)

# advisory lock: batchpay's budget (the journal's own locks are 0x62700001 and 2), then
# the key hash's
BUDGET_LOCK = 0x62700003
TABLE = """CREATE TABLE IF NOT EXISTS request_budget (
    key_hash TEXT NOT NULL,
    sent_at {real} NOT NULL
)"""
INDEX = "CREATE INDEX IF NOT EXISTS request_budget_by_key ON request_budget (key_hash, sent_at)"
HINT = ("Check that the journal's database is reachable and writable, then run again: "
        "nothing was sent after the budget could not be booked.")


def key_hash(api_key: str) -> str:
    """What the table keys a budget by: a hash of the key, never the key itself."""
    return hashlib.sha256(b"batchpay request budget\0" + api_key.encode()).hexdigest()


# A booked time is when a request should leave; the service counts when it arrives. Two
# requests a window apart may travel (and be scheduled on a busy host) differently: the
# margin kept beyond a full window is 5 % of it, at least the caller's margin and at most
# 2 s (a minute's window loses 2 s, 3 % of its budget; an hour's or a day's no more).
JITTER_SHARE = 0.05
JITTER_CAP = 2.0


def window_margin(seconds: float, margin: float) -> float:
    return max(margin, min(seconds * JITTER_SHARE, JITTER_CAP))


def next_slot(now: float, latest: float | None, kth_latest: Sequence[float | None],
              windows: Windows, margin: float) -> float:
    """The earliest send time at or after `now` and `latest` (first come, first served)
    that keeps every window: for each, the limit-th most recent booking (None: fewer
    bookings than the limit) must have left it, plus the window's margin."""
    at = max(now, latest if latest is not None else now)
    for (_, seconds), booked in zip(windows, kth_latest, strict=True):
        if booked is not None:
            at = max(at, booked + seconds + window_margin(seconds, margin))
    return at


class SharedBudget:
    """The booked send times of one API key in one database. Thread-safe (one
    connection, one booking at a time); `close` when done."""

    def __init__(self, where: Path | str, api_key: str) -> None:
        self.where = str(where)
        self.key = key_hash(api_key)
        self._lock = threading.Lock()
        self._db: Any = None
        self._pg = is_database_address(where)
        self.shown = shown_address(self.where) if self._pg else self.where
        try:
            self._open()
        except _errors() as exc:
            self.close()
            raise self._failed("open", exc) from None

    # --- the two stores ---------------------------------------------------------------
    def _open(self) -> None:
        if self._pg:
            import psycopg

            self._db = psycopg.connect(self.where, autocommit=True, connect_timeout=15,
                                       application_name="batchpay budget")
            with self._transaction():  # under the lock: two first runs create it once
                self._db.execute(TABLE.format(real="DOUBLE PRECISION"))
                self._db.execute(INDEX)
        else:
            path = Path(self.where)
            if not path.exists():  # private before SQLite writes a byte to it, through
                # the descriptor kept open (closing one would drop SQLite's locks on the file)
                private_dir(path.parent)
                keep(path, create=True)
            self._db = sqlite3.connect(self.where, isolation_level=None, timeout=30,
                                       check_same_thread=False)
            self._db.execute("PRAGMA busy_timeout = 30000")
            # a booking lost by a power cut costs a slot at most, never a double payout
            self._db.execute("PRAGMA synchronous = NORMAL")
            with self._transaction():
                self._db.execute(TABLE.format(real="REAL"))
                self._db.execute(INDEX)

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        """One booking: no other booking of this key (any process, any host) between its
        read and its write."""
        if self._pg:
            with self._db.transaction():
                self._db.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))",
                                 (BUDGET_LOCK, self.key))
                yield
            return
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def _sql(self, sql: str) -> str:
        return sql.replace("?", "%s") if self._pg else sql

    def _now(self) -> float:
        if self._pg:  # one clock for every host: the server's
            return float(self._db.execute(
                "SELECT extract(epoch FROM clock_timestamp())").fetchone()[0])
        return time.time()

    # --- what the pacer and a run's estimate use --------------------------------------
    def reserve(self, windows: Windows, margin: float) -> float:
        """Book the next send time that keeps every window; seconds to wait for it."""
        if not windows:
            return 0.0
        longest = max(seconds for _, seconds in windows)
        return float(self._locked("book a request in",
                                  lambda: self._book(windows, margin, longest)))

    def _book(self, windows: Windows, margin: float, longest: float) -> float:
        # one query reads the clock, the latest booking and each window's limit-th latest
        # (the server's clock on PostgreSQL; this machine's, passed in, on SQLite)
        clock = "extract(epoch FROM clock_timestamp())" if self._pg else "?"
        kth = ("(SELECT sent_at FROM request_budget WHERE key_hash = ? "
               "ORDER BY sent_at DESC LIMIT 1 OFFSET ?)")
        sql = (f"SELECT {clock}, (SELECT MAX(sent_at) FROM request_budget WHERE key_hash = ?)"
               + "".join(f", {kth}" for _ in windows))
        with self._transaction():
            params: list[Any] = [] if self._pg else [time.time()]  # once the file is ours
            params.append(self.key)
            for limit, _ in windows:
                params += [self.key, limit - 1]
            found = self._db.execute(self._sql(sql), params).fetchone()
            read_at = time.monotonic()
            now = float(found[0])
            latest = None if found[1] is None else float(found[1])
            at = next_slot(now, latest, [None if v is None else float(v) for v in found[2:]],
                           windows, margin)
            self._db.execute(self._sql("INSERT INTO request_budget (key_hash, sent_at) "
                                       "VALUES (?, ?)"), (self.key, at))
            # what has left the longest window no longer counts
            self._db.execute(self._sql("DELETE FROM request_budget WHERE key_hash = ? AND "
                                       "sent_at < ?"),
                             (self.key, now - longest - 2 * JITTER_CAP - margin))
        # the wait from now on: the commit's time is not waited twice (a late send would
        # sit closer to the bookings after it than they allowed for)
        return max(0.0, at - now - (time.monotonic() - read_at))

    def booked(self, seconds: float) -> tuple[float, list[float]]:
        """(now, the send times booked in the last `seconds` or later, oldest first)."""

        def read() -> tuple[float, list[float]]:
            now = self._now()
            rows = self._db.execute(self._sql(
                "SELECT sent_at FROM request_budget WHERE key_hash = ? AND sent_at > ? "
                "ORDER BY sent_at"), (self.key, now - seconds)).fetchall()
            return now, [float(r[0]) for r in rows]

        now, times = self._locked("read", read)
        return float(now), list(times)

    def _locked(self, doing: str, work: Callable[[], Any]) -> Any:
        with self._lock:
            if self._db is None:
                raise JournalError(f"The request budget in {self.shown} is closed.", hint=HINT)
            try:
                return work()
            except _errors() as exc:
                raise self._failed(doing, exc) from None

    def _failed(self, doing: str, exc: Exception) -> JournalError:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        return JournalError(f"Could not {doing} the request budget in the journal "
                            f"{self.shown}: {first}.", hint=HINT)

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                with contextlib.suppress(*_errors()):
                    self._db.close()
                self._db = None


def _errors() -> tuple[type[Exception], ...]:
    """What a store can raise: the file's, SQLite's, and psycopg's when it is installed (a
    SQLite journal does not need it)."""
    try:
        import psycopg
    except ImportError:
        return (OSError, sqlite3.Error)
    return (OSError, sqlite3.Error, psycopg.Error)
