"""A real PostgreSQL server for the tests: a cluster of its own in a temporary folder,
reached over a Unix socket in that folder only (no TCP), one per test session (per xdist
worker), one database in it, and a new schema per journal (a journal lives in the schema
its address's search_path names: making one takes milliseconds, a database a second).
`Server` makes journals the same way in a database that is already there (a team's
server, for a benchmark's figures), and drops them again.

Started as the unprivileged `postgres` user when the tests run as root (PostgreSQL refuses
to run as root), as the current user otherwise. The Debian binaries live in
/usr/lib/postgresql/<version>/bin (`.ci/run` installs the `postgresql` package); a machine
without them fails these tests, it does not skip them.
"""

from __future__ import annotations

import itertools
import os
import pwd
import secrets
import shutil
import subprocess
import tempfile
from pathlib import Path
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

import psycopg
import pytest
from psycopg import sql

# runs a test once with its journal in a file, once in PostgreSQL (the `store` fixture,
# tests/conftest.py, which `journal_at` and `cli_sandbox` follow)
BOTH_STORES = pytest.mark.parametrize("store", ["sqlite", "postgresql"], indirect=True)

PORT = 5432  # names the socket file in the cluster's own folder: no TCP port is opened


def binaries() -> Path:
    """The newest installed PostgreSQL's bin folder."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"),
                   key=lambda p: int(p.parent.parent.name) if p.parent.parent.name.isdigit()
                   else 0)
    if not found:
        on_path = shutil.which("initdb")
        if on_path is None:
            raise RuntimeError("PostgreSQL is not installed (apt-get install postgresql): "
                               "the journal's PostgreSQL tests need its server binaries")
        return Path(on_path).parent
    return found[-1].parent


class Cluster:
    """One running cluster; `database()` makes a new, empty database and gives its URL."""

    def __init__(self, *, fsync: bool = False) -> None:
        self.bin = binaries()
        self.folder = Path(tempfile.mkdtemp(prefix="bp-pg-"))
        self.data = self.folder / "data"
        self._as: list[str] = []
        if os.geteuid() == 0:
            user = pwd.getpwnam("postgres")
            os.chown(self.folder, user.pw_uid, user.pw_gid)
            self._as = ["runuser", "-u", "postgres", "--"]
        self._names = itertools.count(1)
        self._run("initdb", "-D", str(self.data), "-A", "trust", "--no-sync", "-U", "postgres",
                  "-E", "UTF8")
        # fsync off: a test cluster is thrown away (commits still wait for the server); small
        # shared buffers: one cluster per test worker, beside everything else on the machine.
        # A benchmark asks for fsync on: what a commit costs on a real server.
        self._run("pg_ctl", "-D", str(self.data), "-w", "-l", str(self.folder / "log"), "-o",
                  f"-k {self.folder} -p {PORT} -c listen_addresses='' "
                  f"-c fsync={'on' if fsync else 'off'} "
                  "-c shared_buffers=16MB -c max_connections=100", "start")

    def _run(self, tool: str, *args: str) -> None:
        done = subprocess.run([*self._as, str(self.bin / tool), *args], capture_output=True,
                              text=True, cwd=self.folder)
        if done.returncode != 0:
            raise RuntimeError(f"{tool} failed: {done.stdout}\n{done.stderr}")

    def url(self, database: str = "postgres", schema: str = "") -> str:
        address = f"postgresql://postgres@/{database}?host={self.folder}&port={PORT}"
        return in_schema(address, schema) if schema else address

    def journal_url(self) -> str:
        """The address of a new, empty journal: a schema of its own."""
        return new_schema(self.url(), f"journal_{next(self._names)}")

    def pid(self) -> int:
        """The postmaster's process id (every server process of the cluster is its child)."""
        return int((self.data / "postmaster.pid").read_text().split()[0])

    def stop(self) -> None:
        try:
            self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "stop")
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)


def in_schema(url: str, schema: str) -> str:
    """A `postgresql://` address whose search_path is `schema` (after any other `options`
    it gives): a journal at it lives in that schema."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    options = [v for k, v in query if k == "options"] + [f"-csearch_path={schema}"]
    query = [(k, v) for k, v in query if k != "options"] + [("options", " ".join(options))]
    return urlunsplit(parts._replace(query=urlencode(query, safe="/", quote_via=quote)))


def new_schema(url: str, name: str) -> str:
    """Make the schema `name` in the database at `url`; the address of a journal in it."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(name)))
    return in_schema(url, name)


class Server:
    """A database that is already there (`postgresql://USER@HOST/DB`, a team's server): a
    new schema per journal, as in a `Cluster`, named after this process so that two
    benchmarks on one server never meet; `stop` drops the schemas it made and leaves the
    rest of the database as it was. USER needs the CREATE privilege on DB."""

    def __init__(self, url: str) -> None:
        self.address = url
        self._prefix = f"batchpay_bench_{os.getpid()}_{secrets.token_hex(3)}"
        self.made: list[str] = []
        try:
            with psycopg.connect(url, autocommit=True, connect_timeout=15) as conn:
                row = conn.execute("SELECT current_user, current_database(), "
                                   "has_database_privilege(current_database(), 'CREATE')"
                                   ).fetchone()
        except psycopg.Error as exc:
            raise RuntimeError(f"cannot reach the database: {str(exc).strip()}") from None
        assert row is not None
        user, database, may_create = row
        if not may_create:
            raise RuntimeError(f"{user} may not create schemas in {database}: "
                               f"GRANT CREATE ON DATABASE {database} TO {user}")

    def journal_url(self) -> str:
        """The address of a new, empty journal: a schema of its own."""
        name = f"{self._prefix}_{len(self.made) + 1}"
        self.made.append(name)
        return new_schema(self.address, name)

    def stop(self) -> None:
        """Drop the schemas this server was given (their journals with them)."""
        if not self.made:
            return
        with psycopg.connect(self.address, autocommit=True) as conn:
            for name in self.made:
                conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(
                    sql.Identifier(name)))


def journal_alone(postgres: Cluster) -> str:
    """The address of a new journal made by the journal alone (no console tables yet), as
    one made before the console shared its database."""
    from batchpay.journal.store import Journal

    address = str(postgres.journal_url())
    Journal(address).close()
    return address
