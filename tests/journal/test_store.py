"""The journal: durability rules, the run lock, monotonic states and the hash chain, on
both stores (a SQLite file, a PostgreSQL database) where they matter for the store."""

from __future__ import annotations

import itertools
import os
import sqlite3
import stat
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import psycopg
import pytest

from batchpay.clock import stamp
from batchpay.errors import JournalLocked, JournalServiceMismatch
from batchpay.journal.records import RunRecord, RunRow, pack_values, unpack_values
from batchpay.journal.schema import SCHEMA_VERSION
from batchpay.journal.store import Journal
from batchpay.statuses import SENDING


@pytest.fixture(params=["sqlite", "postgresql"])
def where(request: pytest.FixtureRequest, tmp_path: Path) -> Path | str:
    """A new journal's place: a file (this module tests the file: modes, WAL, durability),
    or a PostgreSQL database."""
    if request.param == "postgresql":
        return str(request.getfixturevalue("postgres").journal_url())
    return tmp_path / "j" / "journal.sqlite3"


@pytest.fixture
def journal(where: Path | str) -> Iterator[Journal]:
    """A journal in its own file or database (not the in-memory `journal` of the conftest)."""
    j = Journal(where)
    yield j
    j.close()


@pytest.fixture
def sqlite_journal(tmp_path: Path) -> Iterator[Journal]:
    """A journal file, for what only a file has (modes, WAL, fsync levels)."""
    j = Journal(tmp_path / "j" / "journal.sqlite3")
    yield j
    j.close()


def _read_elsewhere(where: Path | str, sql: str, *args: object) -> tuple[object, ...] | None:
    """One row read through a connection of its own (another process, after a crash)."""
    if isinstance(where, str):
        with psycopg.connect(where) as conn:
            found = conn.execute(sql.replace("?", "%s"), args).fetchone()
            return tuple(found) if found else None
    other = sqlite3.connect(str(where))
    try:
        found = other.execute(sql, args).fetchone()
        return tuple(found) if found else None
    finally:
        other.close()


def _intent(j: Journal, ref: str = "R1", quote: str = "q1") -> int:
    return j.record_intent(ref, "run1", '{"amount":"1"}', {"id": quote},
                           {"quoteId": quote, "reason": "x"}, expires_at=9e9)


def test_file_and_directory_are_private(sqlite_journal: Journal) -> None:
    journal = sqlite_journal
    assert journal.path is not None
    assert stat.S_IMODE(journal.path.stat().st_mode) == 0o600
    assert stat.S_IMODE(journal.path.parent.stat().st_mode) == 0o700


def test_wal_and_schema_version(sqlite_journal: Journal) -> None:
    journal = sqlite_journal
    assert journal.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert journal.db.execute("SELECT MAX(version) FROM schema_version").fetchone()[0] == 4


def test_a_new_postgresql_journal_has_the_schema_and_a_keyed_chain(postgres: object) -> None:
    url = postgres.journal_url()  # type: ignore[attr-defined]
    with Journal(url) as journal:
        journal.bind_service("embedded")
        assert journal.db.execute("SELECT MAX(version) FROM schema_version").fetchone()[0] == SCHEMA_VERSION
        assert journal.store.kind == "postgresql" and journal.path is None
        assert journal._chain.keyed is not None  # keyed from its first event, as a file is
        assert journal.verify(head=journal.head()).ok


def test_a_journal_of_schema_1_gains_the_invoice_columns(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    Journal(path).close()
    db = sqlite3.connect(path)
    for table, column in (("payouts", "quotes_used"), ("run_rows", "quotes_used"),
                          ("run_rows", "asked")):
        db.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
    db.execute("UPDATE schema_version SET version = 1")  # as batchpay wrote it before
    db.commit()
    db.close()
    reopened = Journal(path)
    try:
        columns = {r[1] for r in reopened.db.execute("PRAGMA table_info(run_rows)")}
        assert {"quotes_used", "asked"} <= columns
        assert [r[0] for r in reopened.db.execute(
            "SELECT version FROM schema_version ORDER BY version")] == [1, 4]
    finally:
        reopened.close()


def test_journal_belongs_to_one_service(journal: Journal) -> None:
    journal.bind_service("embedded")
    journal.bind_service("embedded")
    with pytest.raises(JournalServiceMismatch, match="embedded"):
        journal.bind_service("https://api.example.com")


def test_second_lock_is_refused_and_released_on_close(where: Path | str) -> None:
    first, second = Journal(where), Journal(where)
    first.lock()
    with pytest.raises(JournalLocked):
        second.lock()
    first.close()
    second.lock()  # the lock died with its holder
    second.close()


def test_intent_is_on_disk_before_the_answer(journal: Journal, where: Path | str) -> None:
    attempt = _intent(journal)
    # another connection (another process after a crash) sees the intent and its body
    row = _read_elsewhere(where, "SELECT quote_id, body_json, outcome FROM attempts WHERE id = ?",
                          attempt)
    assert row is not None and row[0] == "q1" and '"quoteId":"q1"' in row[1] and row[2] is None
    assert journal.entry("R1").status == SENDING
    journal.record_answer(attempt, "accepted", status="PENDING", payout_id="p1",
                          reference_number="ABC")
    entry = journal.entry("R1")
    assert (entry.status, entry.payout_id, entry.reference_number) == ("PENDING", "p1", "ABC")


def test_states_never_move_backwards(journal: Journal) -> None:
    attempt = _intent(journal)
    journal.record_answer(attempt, "accepted", status="PENDING", payout_id="p1")
    moves = [("PROCESSING", True), ("PENDING", False), ("FAILED", True), ("PROCESSING", False),
             ("COMPLETED", False), ("REFUNDED", True), ("FAILED", False), ("REFUNDED", False)]
    for state, changes in moves:
        assert journal.apply_state("R1", state, source="test", payout_id="p1",
                                   quote_id="q1") is changes, state
    assert journal.entry("R1").status == "REFUNDED"


def test_a_report_about_another_payout_changes_nothing(journal: Journal) -> None:
    attempt = _intent(journal)
    journal.record_answer(attempt, "accepted", status="PENDING", payout_id="p1")
    assert not journal.apply_state("R1", "COMPLETED", source="t", payout_id="p0", quote_id="q1")
    assert not journal.apply_state("R1", "COMPLETED", source="t", payout_id="p1", quote_id="q0")
    assert journal.entry("R1").status == "PENDING"


@pytest.mark.parametrize("events", list(itertools.permutations(
    ["PENDING", "PROCESSING", "FAILED", "REFUNDED"])))
def test_every_order_of_events_ends_in_the_same_state(tmp_path: Path, events: tuple) -> None:
    j = Journal(":memory:")
    attempt = _intent(j)
    j.record_answer(attempt, "lost", status=SENDING)  # in doubt: learns its payout from events
    for state in events:
        j.apply_state("R1", state, source="webhook", payout_id="p1", quote_id="q1")
    assert j.entry("R1").status == "REFUNDED"
    assert j.entry("R1").payout_id == "p1"


def test_values_keep_their_types() -> None:
    values = ["6222021234567890123", Decimal("100000.50"), 7, None, "=SUM(A1)", "中国银行"]
    assert unpack_values(pack_values(values)) == values
    assert isinstance(unpack_values(pack_values(values))[1], Decimal)


def _filled(where: Path | str) -> Journal:
    j = Journal(where)
    j.bind_service("embedded")
    j.start_run(RunRecord("run1", "run", stamp(), "s.xlsx", "abc", ["payout_ref"]),
                [RunRow(0, 2, "R1", ["R1"], "NOT_SENT")])
    attempt = _intent(j)
    j.record_answer(attempt, "accepted", status="PENDING", payout_id="p1")
    j.apply_state("R1", "COMPLETED", source="poll", payout_id="p1", quote_id="q1")
    return j


def test_untouched_chain_verifies(where: Path | str) -> None:
    j = _filled(where)
    check = j.verify(head=j.head())
    assert check.ok and check.events >= 5
    j.close()


def test_edited_event_is_caught(where: Path | str) -> None:
    j = _filled(where)
    j.db.execute("UPDATE events SET data = replace(data, 'COMPLETED', 'FAILED') "
                 "WHERE kind = 'payout.poll'")
    check = j.verify()
    assert not check.ok and "changed" in check.problem
    j.close()


def test_deleted_event_is_caught(where: Path | str) -> None:
    j = _filled(where)
    j.db.execute("DELETE FROM events WHERE seq = 3")
    check = j.verify()
    assert not check.ok and check.broken_at == 3
    j.close()


def test_inserted_event_is_caught(where: Path | str) -> None:
    j = _filled(where)
    last = j.db.execute("SELECT * FROM events WHERE seq = 2").fetchone()
    j.db.execute("UPDATE events SET seq = seq + 100 WHERE seq > 2")
    j.db.execute("INSERT INTO events VALUES (3, ?, 'payout.poll', '', 'R9', '{}', ?, ?)",
                 (last["at"], last["hash"], "f" * 64))
    j.db.execute("UPDATE events SET seq = seq - 99 WHERE seq > 100")
    check = j.verify()
    assert not check.ok and check.broken_at == 3
    j.close()


def test_reordered_events_are_caught(where: Path | str) -> None:
    j = _filled(where)
    a = j.db.execute("SELECT * FROM events WHERE seq = 2").fetchone()
    b = j.db.execute("SELECT * FROM events WHERE seq = 3").fetchone()
    cols = ("at", "kind", "run_id", "payout_ref", "data", "prev_hash", "hash")
    for target, source in ((2, b), (3, a)):
        j.db.execute(f"UPDATE events SET {', '.join(c + ' = ?' for c in cols)} WHERE seq = ?",
                     (*[source[c] for c in cols], target))
    check = j.verify()
    assert not check.ok and check.broken_at == 2
    j.close()


def test_truncated_chain_is_caught_against_the_filed_head(where: Path | str) -> None:
    j = _filled(where)
    head = j.head()
    assert j.verify(head=head).ok
    j.db.execute("DELETE FROM events WHERE seq = (SELECT MAX(seq) FROM events)")
    assert j.verify().ok  # a shorter chain is still a chain...
    check = j.verify(head=head)
    assert not check.ok and "truncated" in check.problem  # ...but not the one that was filed
    j.close()


def test_journal_file_is_not_world_readable_even_with_a_loose_umask(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        j = Journal(tmp_path / "loose" / "journal.sqlite3")
    finally:
        os.umask(old)
    assert j.path is not None
    assert stat.S_IMODE(j.path.stat().st_mode) & 0o077 == 0
    j.close()


def test_an_unrelated_sqlite_file_is_refused_and_left_alone(tmp_path: Path) -> None:
    from batchpay.errors import JournalError

    path = tmp_path / "accounts.sqlite3"
    other = sqlite3.connect(path)
    other.execute("CREATE TABLE customers (id INTEGER)")
    other.commit()
    other.close()
    with pytest.raises(JournalError, match="not a batchpay journal"):
        Journal(path)
    tables = sqlite3.connect(path).execute("SELECT name FROM sqlite_master").fetchall()
    assert tables == [("customers",)]


def test_intents_are_fsynced_and_answers_need_not_be(sqlite_journal: Journal) -> None:
    """An intent survives a power cut (synchronous FULL); other writes survive a crash of
    the process (WAL) and cost no fsync: losing one only leaves a row in doubt."""
    journal = sqlite_journal
    seen: list[str] = []
    journal.db.set_trace_callback(seen.append)

    def level_of_last_commit() -> int:
        journal.db.set_trace_callback(None)
        level = journal.db.execute("PRAGMA synchronous").fetchone()[0]
        journal.db.set_trace_callback(seen.append)
        return int(level)

    attempt = _intent(journal)
    assert level_of_last_commit() == 2  # FULL
    journal.record_answer(attempt, "accepted", status="PENDING", payout_id="p1")
    assert level_of_last_commit() == 1  # NORMAL
    seen.clear()
    _intent(journal, "R2", "q2")
    assert level_of_last_commit() == 2
    assert seen.index("PRAGMA synchronous = FULL") < seen.index("BEGIN IMMEDIATE")


def test_column_names_are_checked_before_they_reach_sql(journal: Journal) -> None:
    with pytest.raises(ValueError, match="not a column of run_rows: status = 'x'; --"):
        journal.update_run_row("run-1", 1, **{"status = 'x'; --": "x"})
    with pytest.raises(ValueError, match="not a column of payouts: colour"):
        journal.set_status("R-1", "NOT_SENT", colour="red")
    assert journal.entries(["R-1"]) == {}  # nothing was written


def test_a_full_disk_inside_a_transaction_is_a_journal_error(sqlite_journal: Journal) -> None:
    from batchpay.errors import JournalError

    journal = sqlite_journal
    with pytest.raises(JournalError, match="The disk is full") as caught, journal.transaction():
        journal.db.execute("INSERT INTO meta (key, value) VALUES ('probe', '1')")
        raise sqlite3.OperationalError("database or disk is full")
    assert "nothing is paid twice" in (caught.value.hint or "")
    # rolled back: the probe row is not there
    assert journal.db.execute("SELECT 1 FROM meta WHERE key = 'probe'").fetchone() is None


def test_money_reads_back_as_the_exact_decimal_it_was(journal: Journal) -> None:
    """Amounts, rates and fees are Decimals on the records, with every digit as written
    (trailing zeros included): no str round trip for the reader to forget."""
    journal.start_run(RunRecord("run1", "run", stamp(), "s.xlsx", "abc", ["payout_ref"]),
                      [RunRow(0, 2, "R1", ["R1"], "NOT_SENT", amount=Decimal("100000.50"),
                              asked=Decimal("12345.60"))])
    journal.update_run_row("run1", 0, rate=Decimal("0.00434782"), fee=Decimal("250.00"),
                           total_debit=Decimal("100250.50"), target_amount=Decimal("434.78"))
    journal.set_status("R1", SENDING, run_id="run1", details="{}", amount=Decimal("100000.50"),
                       fee=Decimal("250.00"), rate=Decimal("0.00434782"))
    row = next(journal.run_rows("run1"))
    entry = journal.entry("R1")
    assert entry is not None
    assert (row.amount, row.asked, row.rate, row.fee, row.total_debit, row.target_amount) == (
        Decimal("100000.50"), Decimal("12345.60"), Decimal("0.00434782"), Decimal("250.00"),
        Decimal("100250.50"), Decimal("434.78"))
    assert str(row.amount) == "100000.50" and str(row.fee) == "250.00"
    assert (entry.amount, entry.fee, entry.rate, entry.total_debit) == (
        Decimal("100000.50"), Decimal("250.00"), Decimal("0.00434782"), None)
    assert all(isinstance(v, Decimal) for v in (row.amount, entry.amount, entry.fee))


def test_an_in_memory_journal_is_a_journal() -> None:
    with Journal(":memory:") as j:
        j.bind_service("embedded")
        _intent(j)
        assert j.entry("R1") is not None and j.verify().ok and j.path is None


def test_a_first_event_rolled_back_leaves_no_key_record_that_fails_verify(
        tmp_path: Path) -> None:
    """The key is noted (in meta and in the key's list of journals) in the transaction of
    the journal's first event; rolled back, the journal has no event the list's line could
    be about, and verifies; its next event keys it again."""
    path = tmp_path / "journal.sqlite3"
    with Journal(path) as j:
        with pytest.raises(RuntimeError), j.transaction():
            j.record_note("note", {"n": 1})
            raise RuntimeError("the disk filled up")
        assert j.db.execute("SELECT COUNT(*) FROM events").fetchone()[0] == 0
        assert j.verify().ok
        j.record_note("note", {"n": 2})
        assert [k for (k,) in j.db.execute("SELECT kind FROM events ORDER BY seq")] == [
            "chain.keyed", "note"]
        assert j.verify().ok
