"""The journal in a PostgreSQL database (psycopg 3), shared by the hosts of a team.

The same tables and the same queries as the SQLite file (batchpay.journal.stores): the
store translates `?` placeholders and a few column types, and answers rows that read like
sqlite3.Row (by position and by name).

Exactly-once across processes and hosts rests on the database, never on a file:
- every write transaction starts by taking one transaction-scoped advisory lock
  (`pg_advisory_xact_lock`), so that writers follow one another as they do on SQLite
  (BEGIN IMMEDIATE): the check that a payout_ref was never sent and the intent that claims
  it are one step no other host can come between, and each event of the hash chain is
  appended after the last one committed (one chain, the database orders it);
- the run lock (one run, rerun or sync at a time) is a session-level advisory lock, held by
  this connection and dropped by the server when the connection ends, so a killed process
  or a lost host leaves no stale lock.
Commits are durable (synchronous_commit on for this connection), so an intent is on the
server's disk before its payout request leaves.
"""

from __future__ import annotations

import contextlib
import functools
import re
import shutil
import subprocess
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import psycopg

from batchpay.errors import JournalError, JournalLocked
from batchpay.files import create_private, shown_address
from batchpay.journal.store_api import Store

# advisory lock keys: two 32-bit ints, which lock (batchpay's writes or its run lock), then
# the journal's schema (advisory locks are per database; a database may hold a journal per
# schema)
WRITE_LOCK = 0x62700001
RUN_LOCK = 0x62700002
OF_THIS_JOURNAL = "hashtext(current_schema())"
RUN_LOCK_GRACE = 2.0  # seconds: see PostgresStore.lock


class Row(tuple[Any, ...]):
    """A result row read by position or by column name, as sqlite3.Row is."""

    _names: dict[str, int]

    def __new__(cls, values: Sequence[Any], names: dict[str, int]) -> Row:
        row = super().__new__(cls, values)
        row._names = names
        return row

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            return tuple.__getitem__(self, self._names[key])
        return tuple.__getitem__(self, key)

    def keys(self) -> list[str]:
        return list(self._names)


def _row_maker(cursor: Any) -> Callable[[Sequence[Any]], Row]:
    """Rows of the cursor's current result, their column names read from it once, when its
    first row is made: psycopg asks for a maker for every result, a row count's too, and
    its `description` makes an object per column (a tenth of the journal's CPU)."""
    result = cursor.pgresult
    names: dict[str, int] = {}

    def make(values: Sequence[Any]) -> Row:
        if not names and result is not None:
            encoding = cursor.connection.info.encoding
            names.update((result.fname(i).decode(encoding), i) for i in range(result.nfields))
        return Row(values, names)

    return make


@functools.lru_cache(maxsize=512)
def spelt(sql: str) -> bytes:
    """A query in SQLite's spelling with `?` placeholders, in PostgreSQL's own ($1, $2, ..),
    as the server takes it: psycopg sends it as it is (a RawCursor), parsing nothing."""
    parts = sql.split("?")
    return "".join(f"{part}${n}" for n, part in enumerate(parts[:-1], 1)).encode() + \
        parts[-1].encode()


class PostgresConnection:
    """The few calls the journal makes of a connection, on a psycopg one.

    While `pipeline` is open (PostgresStore.deferring), psycopg's pipeline mode sends a
    statement without waiting for its answer: the statements of a group of journal calls
    travel together, and the server is waited for only where one of them is read (the
    ref's status, the attempt's id) or at COMMIT (`sync`). Every statement goes with its
    values apart (server-side binding, each value converted by psycopg's C dumpers), and
    one run more than a few times is prepared once on the server (psycopg's
    prepare_threshold): parsed once, not once per payout. Statements are written with
    PostgreSQL's own placeholders and go through psycopg's RawCursor, which parses no query
    text: psycopg's parsing of a group's long statements (it keeps no copy of a statement
    over 4 KiB or 50 values) was half the journal's CPU.

    A prepared statement is still planned at each run (plan_cache_mode, set by
    PostgresStore), with its values and the tables' sizes of the moment: a plan kept from
    the first groups of a new journal, when its tables were nearly empty, reads whole
    tables, and reads them once per group for the rest of the run. A plan costs the server
    a few tens of µs; such a scan cost it more than everything else a group writes."""

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self.conn = conn
        self.pipeline: psycopg.Pipeline | None = None

    def execute(self, sql: str, parameters: Any = (), /) -> Any:
        cursor = psycopg.RawCursor(self.conn)
        cursor.execute(spelt(sql), tuple(parameters))
        return cursor if self.pipeline is None else Pending(cursor, self.pipeline)

    def executemany(self, sql: str, parameters: Iterable[Any], /) -> Any:
        cursor = psycopg.RawCursor(self.conn)
        cursor.executemany(spelt(sql), [tuple(p) for p in parameters])
        return cursor if self.pipeline is None else Pending(cursor, self.pipeline)

    def sync(self) -> None:
        """Every statement sent so far answered (in a pipeline): raises the first that
        failed, and none after it was run."""
        if self.pipeline is not None:
            self.pipeline.sync()


class Pending:
    """The cursor of a statement sent in a pipeline: its rows are fetched when read (psycopg
    waits for them then); its row count once every statement sent has been answered."""

    def __init__(self, cursor: psycopg.Cursor[Any], pipeline: psycopg.Pipeline) -> None:
        self._cursor, self._pipeline = cursor, pipeline

    def fetchone(self) -> Any:
        return self._cursor.fetchone()

    def fetchall(self) -> list[Any]:
        return self._cursor.fetchall()

    def __iter__(self) -> Iterator[Any]:
        return iter(self._cursor.fetchall())

    @property
    def rowcount(self) -> int:
        self._pipeline.sync()
        return self._cursor.rowcount


class PostgresStore(Store):
    """One journal in one PostgreSQL database (or in the schema its address's
    `options=-csearch_path=...` names)."""

    kind = "postgresql"
    errors = (psycopg.Error,)
    # a group costs this process and the server about 2 ms of CPU together (its BEGIN,
    # write lock, two statements and COMMIT), a file's group a few µs: waiting longer for
    # bigger groups is worth it here
    group_linger = 0.010

    def __init__(self, url: str) -> None:
        self.url = url
        self.where = shown_address(url)
        self._locked = False
        try:
            conn = psycopg.connect(url, autocommit=True, row_factory=_row_maker,
                                   connect_timeout=15, application_name="batchpay")
        except psycopg.Error as exc:
            raise JournalError(
                f"Cannot reach the journal database {self.where}: {_first_line(exc)}.",
                hint="Check the address (postgresql://USER@HOST/DB), that the server is up "
                "and lets this host in (pg_hba.conf), and the password (PGPASSFILE or "
                "~/.pgpass).") from None
        self.pg = PostgresConnection(conn)
        self.db = self.pg
        try:
            self.db.execute("SET synchronous_commit TO on")
            self.db.execute("SET plan_cache_mode TO force_custom_plan")  # see PostgresConnection
            if self.db.execute("SELECT current_schema()").fetchone()[0] is None:
                conn.close()
                raise JournalError(f"The journal database {self.where} has no schema to "
                                   "keep the journal in.",
                                   hint="Create the schema its search_path names "
                                   "(CREATE SCHEMA), or leave search_path as it is.")
            self._refuse_foreign()
        except psycopg.Error as exc:
            conn.close()
            raise self.unopened(exc) from None

    def _refuse_foreign(self) -> None:
        tables = self.tables()
        if tables and "schema_version" not in tables:
            self.pg.conn.close()
            raise JournalError(
                f"The database {self.where} holds other tables and is not a batchpay journal.",
                hint="Give the journal a database of its own (createdb), or a schema of its "
                "own (options=-csearch_path=NAME in the address).")

    def tables(self) -> set[str]:
        return {r[0] for r in self.db.execute(
            "SELECT table_name FROM information_schema.tables "
            "WHERE table_schema = current_schema()")}

    def begin(self, durable: bool) -> None:
        """BEGIN, then the journal's write lock until COMMIT or ROLLBACK (see the module)."""
        self.db.execute("BEGIN")
        self.db.execute(f"SELECT pg_advisory_xact_lock(?, {OF_THIS_JOURNAL})", (WRITE_LOCK,))

    def commit(self) -> None:
        """COMMIT, sent with the statements not yet answered (see `deferring`): reported
        only once the server has run them all and committed."""
        self.db.execute("COMMIT")
        self.pg.sync()

    def rollback(self) -> None:
        self.pg.conn.execute("ROLLBACK")
        self.pg.sync()

    @contextlib.contextmanager
    def deferring(self) -> Iterator[None]:
        """Statements sent without waiting for their answers (psycopg's pipeline mode; see
        PostgresConnection): BEGIN, the write lock, the UPDATEs and the events' INSERTs of a
        group of journal calls travel with their reads, so that the group waits for the
        server a few times, not once per statement. Each wait for the server also costs
        this thread the interpreter's lock, which the event loop's thread holds while it
        works: fewer waits, fewer of those too."""
        if self.pg.pipeline is not None:
            yield
            return
        with self.pg.conn.pipeline() as pipeline:
            self.pg.pipeline = pipeline
            try:
                yield
            finally:
                self.pg.pipeline = None

    def schema(self, text: str) -> str:
        """The SQLite DDL in PostgreSQL's types: ids as identity columns, REAL as double
        precision (a float4 would round an expiry time by minutes), and `runs` given the
        insertion order that SQLite keeps as its rowid."""
        text = text.replace("INTEGER PRIMARY KEY AUTOINCREMENT",
                            "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY")
        text = re.sub(r"\bREAL\b", "DOUBLE PRECISION", text)
        return text.replace("CREATE TABLE IF NOT EXISTS runs (",
                            "CREATE TABLE IF NOT EXISTS runs (\n"
                            "    rowid BIGINT GENERATED ALWAYS AS IDENTITY,")

    def json_text(self, expr: str, key: str) -> str:
        return f"(({expr})::json ->> '{key}')"

    def after_copy(self) -> None:
        """Ids copied in as they were: the identity columns go on after the largest."""
        for table, column in (("attempts", "id"), ("events", "seq")):
            self.db.execute(f"SELECT setval(pg_get_serial_sequence('{table}', '{column}'), "
                            f"COALESCE((SELECT MAX({column}) FROM {table}), 0) + 1, false)")

    def backup(self, out: Path) -> None:
        """`pg_dump --format=custom` of the journal's schema: the server's consistent dump
        (pg_restore puts it back)."""
        tool = shutil.which("pg_dump")
        if tool is None:
            raise JournalError(
                "pg_dump is not installed here: a PostgreSQL journal is backed up with the "
                "server's own tool.",
                hint="Install the PostgreSQL client (apt-get install postgresql-client), or "
                "run on the server: pg_dump --format=custom --file BACKUP DBNAME")
        schema = self.db.execute("SELECT current_schema()").fetchone()[0]
        create_private(out, new=True)  # private before a byte is written
        done = subprocess.run([tool, "--format=custom", f"--file={out}", f"--schema={schema}",
                               f"--dbname={self.url}"], capture_output=True, text=True,
                              check=False)
        if done.returncode != 0:
            out.unlink(missing_ok=True)
            words = (done.stderr.strip().splitlines() or ["no message"])[-1]
            raise JournalError(f"pg_dump could not back up the journal {self.where}: {words}",
                               hint="pg_dump must be of the server's major version or newer.")

    def lock(self) -> None:
        """The run lock, or JournalLocked. A holder that has just died (killed, its
        connection closed) keeps it until its server process has seen the connection go,
        a moment later: so the lock is asked for again for up to RUN_LOCK_GRACE seconds."""
        if self._locked:
            return
        deadline = time.monotonic() + RUN_LOCK_GRACE
        while not self.db.execute(f"SELECT pg_try_advisory_lock(?, {OF_THIS_JOURNAL})",
                                  (RUN_LOCK,)).fetchone()[0]:
            if time.monotonic() < deadline:
                time.sleep(0.05)
                continue
            raise JournalLocked(
                f"Another batchpay run is using the journal {self.where}.",
                hint="Wait for it to finish (nothing was sent by this one), then run again.")
        self._locked = True

    def unlock(self) -> None:
        if self._locked:
            self._locked = False
            with contextlib.suppress(psycopg.Error):  # a lost connection dropped it already
                self.db.execute(f"SELECT pg_advisory_unlock(?, {OF_THIS_JOURNAL})", (RUN_LOCK,))

    def close(self) -> None:
        self.unlock()
        self.pg.conn.close()

    def unwritten(self, exc: Exception) -> JournalError:
        return JournalError(f"Could not write the journal {self.where}: {_first_line(exc)}.",
                            hint="Check that the database server is up and reachable, then "
                            "run again: rows in flight are looked up, never sent twice.")

    def unbegun(self, exc: Exception) -> JournalError:
        """A lost connection (a server restarted, failed over or cut off) is not "busy":
        the run stops sending, and the next one looks up the rows in flight."""
        return self.unwritten(exc)

    def unopened(self, exc: Exception) -> JournalError:
        return JournalError(f"Cannot open the journal {self.where}: {_first_line(exc)}.",
                            hint="Check that this role may create and write tables in that "
                            "database (GRANT), and that it is a batchpay journal.")


def answers(url: str, timeout: float) -> bool:
    """Whether the database at `url` answers a query within `timeout` seconds."""
    try:
        with psycopg.connect(url, connect_timeout=max(1, round(timeout)),
                             application_name="batchpay health") as conn:
            conn.execute("SELECT 1").fetchone()
    except psycopg.Error:
        return False
    return True


def _first_line(exc: Exception) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]
