"""The journal's tables, their migrations, the columns a run may write, and the progress
order of a payout's states (batchpay.journal.store works on them).

Tables:
  schema_version  the schema's version (one row per migration applied)
  meta            the service this journal belongs to; the chain's key id, its first keyed
                  event, and the event that says so in the chain (chain_marker)
  payouts         the ledger, one row per payout_ref across all runs: its current status
  attempts        every payout request: quote id and full body on disk *before* it is sent
  runs            who ran what, when, where, and the outcome
  run_rows        every input row of every run, in input order, as read
  events          an append-only, hash-chained log of everything above (tamper evidence)
  advices         the outbox of remittance advices: one per run and payee, its mail's state
  notices         the outbox of notifications: one per event and receiver, its delivery's state
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from batchpay.clock import stamp
from batchpay.errors import JournalError
from batchpay.statuses import FINAL, Status

if TYPE_CHECKING:
    from batchpay.journal.store_api import Connection

# 2: quotes_used (invoice rows)
# 3: the chain names its key (a chain.keyed event; the key's id, the start time and the
#    input columns in run.started), and `verify` checks the runs table against the chain.
#    No table changes: a journal of schema 2 keeps its events as they are and gets its
#    chain.keyed event with its next event. A batchpay that knows only schema 2 refuses
#    a newer journal instead of writing run events that do not name the key.
# 4: the advices table (the remittance outbox)
# The notices table (the notifications' outbox) came without a new version: it is made in
# any journal when opened (CREATE ... IF NOT EXISTS), and a batchpay that does not know it
# leaves it alone; no record of a payment is in it.
SCHEMA_VERSION = 4

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
CREATE TABLE IF NOT EXISTS advices (
    run_id TEXT NOT NULL,
    payee TEXT NOT NULL,
    payee_name TEXT NOT NULL,
    recipients TEXT NOT NULL,
    payout_refs TEXT NOT NULL,
    state TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    last_error TEXT NOT NULL DEFAULT '',
    message_id TEXT NOT NULL,
    created_at TEXT NOT NULL,
    tried_at TEXT,
    sent_at TEXT,
    PRIMARY KEY (run_id, payee)
);
CREATE INDEX IF NOT EXISTS advices_state ON advices(state);
CREATE TABLE IF NOT EXISTS notices (
    event TEXT NOT NULL,
    target TEXT NOT NULL,
    shown TEXT NOT NULL,
    kind TEXT NOT NULL,
    title TEXT NOT NULL,
    body TEXT NOT NULL,
    state TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    last_error TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL,
    due_at TEXT NOT NULL,
    tried_at TEXT,
    sent_at TEXT,
    PRIMARY KEY (event, target)
);
CREATE INDEX IF NOT EXISTS notices_state ON notices(state);
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
    # 2 -> 3 alters no table: the chain.keyed event is written with the next event
    # 3 -> 4: the advices table, which SCHEMA above has just made in an older journal
    if version < SCHEMA_VERSION:
        db.execute("INSERT INTO schema_version VALUES (?, ?)", (SCHEMA_VERSION, stamp()))
