"""The journal's tables, their migrations, the columns a run may write, and the progress
order of a payout's states (batchpay.journal.store works on them).

Tables:
  schema_version  the schema's version (one row per migration applied)
  meta            the service this journal belongs to
  payouts         the ledger, one row per payout_ref across all runs: its current status
  attempts        every payout request: quote id and full body on disk *before* it is sent
  runs            who ran what, when, where, and the outcome
  run_rows        every input row of every run, in input order, as read
  events          an append-only, hash-chained log of everything above (tamper evidence)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from batchpay.errors import JournalError
from batchpay.journal.records import utcnow
from batchpay.statuses import FINAL, Status

if TYPE_CHECKING:
    from batchpay.journal.stores import Connection

SCHEMA_VERSION = 2  # 2: quotes_used (invoice rows)

# progress order of the service's states: a payout never moves backwards; FAILED -> REFUNDED
# is the one move after a final state
RANK: dict[str, int] = {Status.PENDING: 1, Status.PROCESSING: 2, Status.COMPLETED: 3,
                        Status.FAILED: 3, Status.REFUNDED: 4}

SCHEMA = """
CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS payouts (
    payout_ref TEXT PRIMARY KEY,
    status TEXT NOT NULL,
    details TEXT NOT NULL,
    run_id TEXT NOT NULL,
    attempt_id INTEGER,
    error TEXT NOT NULL DEFAULT '',
    quote_id TEXT NOT NULL DEFAULT '',
    payout_id TEXT NOT NULL DEFAULT '',
    reference_number TEXT NOT NULL DEFAULT '',
    rate TEXT, fee TEXT, target_amount TEXT, total_debit TEXT,
    amount TEXT, source_currency TEXT NOT NULL DEFAULT '', target_currency TEXT NOT NULL DEFAULT '',
    updated_at TEXT NOT NULL,
    quotes_used INTEGER
);
CREATE INDEX IF NOT EXISTS payouts_status ON payouts(status);
CREATE INDEX IF NOT EXISTS payouts_payout_id ON payouts(payout_id);
CREATE INDEX IF NOT EXISTS payouts_quote_id ON payouts(quote_id);
CREATE TABLE IF NOT EXISTS attempts (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    payout_ref TEXT NOT NULL,
    run_id TEXT NOT NULL,
    quote_id TEXT NOT NULL,
    quote_json TEXT NOT NULL,
    body_json TEXT NOT NULL,
    quote_expires_at REAL NOT NULL,
    created_at TEXT NOT NULL,
    sends INTEGER NOT NULL DEFAULT 0,
    answered_at TEXT,
    outcome TEXT,
    http_status INTEGER,
    message TEXT
);
CREATE INDEX IF NOT EXISTS attempts_ref ON attempts(payout_ref);
CREATE INDEX IF NOT EXISTS attempts_quote ON attempts(quote_id);
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    started_at TEXT NOT NULL,
    finished_at TEXT,
    sheet TEXT NOT NULL,
    input_sha256 TEXT NOT NULL,
    input_columns TEXT NOT NULL,
    info TEXT NOT NULL,
    outcome TEXT,
    exit_code INTEGER
);
CREATE TABLE IF NOT EXISTS run_rows (
    run_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    row INTEGER NOT NULL,
    payout_ref TEXT NOT NULL,
    inputs TEXT NOT NULL,
    linked INTEGER NOT NULL DEFAULT 0,
    status TEXT NOT NULL,
    error TEXT NOT NULL DEFAULT '',
    warning TEXT NOT NULL DEFAULT '',
    amount TEXT, source_currency TEXT NOT NULL DEFAULT '', target_currency TEXT NOT NULL DEFAULT '',
    quote_id TEXT NOT NULL DEFAULT '', rate TEXT, fee TEXT, target_amount TEXT, total_debit TEXT,
    updated_at TEXT NOT NULL DEFAULT '',
    quotes_used INTEGER,
    asked TEXT,
    PRIMARY KEY (run_id, seq)
);
CREATE TABLE IF NOT EXISTS events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    at TEXT NOT NULL,
    kind TEXT NOT NULL,
    run_id TEXT NOT NULL DEFAULT '',
    payout_ref TEXT NOT NULL DEFAULT '',
    data TEXT NOT NULL,
    prev_hash TEXT NOT NULL,
    hash TEXT NOT NULL
);
"""

LEDGER_FIELDS = (
    "error", "quote_id", "payout_id", "reference_number", "rate", "fee", "target_amount",
    "total_debit", "amount", "source_currency", "target_currency", "quotes_used",
)
# the run_rows columns a run updates (column names are never taken from data)
RUN_ROW_FIELDS = (
    "linked", "status", "error", "warning", "amount", "source_currency", "target_currency",
    "quote_id", "rate", "fee", "target_amount", "total_debit", "updated_at", "quotes_used",
    "asked",
)


def known_fields(fields: Iterable[str], allowed: Iterable[str], table: str) -> None:
    unknown = sorted(set(fields) - set(allowed))
    if unknown:
        raise ValueError(f"not a column of {table}: {', '.join(unknown)}")


def moves_forward(current: str, new: str) -> bool:
    if current == new:
        return False
    if current not in RANK:  # SENDING, UNKNOWN, NOT_SENT...: the service's word wins
        return True
    if current in FINAL:
        return current == Status.FAILED and new == Status.REFUNDED
    return RANK[new] > RANK[current]


def migrate(db: Connection, spelt: Callable[[str], str] = str) -> None:
    """Create the tables, or bring an older journal's up to this version (in a transaction).
    `spelt` turns the schema (SQLite's DDL) into the store's."""
    for statement in spelt(SCHEMA).split(";"):
        if statement.strip():
            db.execute(statement)
    version = db.execute("SELECT MAX(version) FROM schema_version").fetchone()[0] or 0
    if version > SCHEMA_VERSION:
        raise JournalError(f"The journal was written by a newer batchpay (schema {version}).",
                           hint="Upgrade batchpay to read it.")
    if 0 < version < 2:  # an invoice row's quotes, kept beside its amounts
        for table in ("payouts", "run_rows"):
            db.execute(f"ALTER TABLE {table} ADD COLUMN quotes_used INTEGER")
        db.execute("ALTER TABLE run_rows ADD COLUMN asked TEXT")
    if version < SCHEMA_VERSION:
        db.execute("INSERT INTO schema_version VALUES (?, ?)", (SCHEMA_VERSION, utcnow()))
