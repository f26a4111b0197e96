"""`batchpay journal copy` (a SQLite journal into PostgreSQL, the chain checked before and
after) and `journal backup` (SQLite's backup API, pg_dump): a journal restored from an
older backup still pays nothing twice. Payouts counted at the sandbox over real HTTP."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import psycopg
import pytest

from batchpay.journal.store import Journal
from tests.support.e2e import batchpay, results, sandbox_payouts
from tests.support.sheets import rows, write_sheet


def _head(text: str) -> str:
    found = re.search(r"chain head ([0-9a-f]{64})", text)
    assert found, text
    return found.group(1)


def _paid_once(url: str, sheet_rows: list[dict[str, Any]]) -> None:
    paid = Counter(p["accountNumber"] for p in sandbox_payouts(url))
    assert paid == Counter(r["account_number"] for r in sheet_rows), paid


def test_copy_to_postgresql_keeps_the_chain_and_pays_nothing_again(
        cli_sandbox: Any, postgres: Any, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    service = cli_sandbox(settle_seconds=0.05)
    sheet_rows = rows(6)
    sheet = write_sheet(tmp_path / "nov.xlsx", sheet_rows)
    assert batchpay("run", str(sheet), "--wait", "5", "--out", str(tmp_path / "a.xlsx"),
                    "--quiet").exit_code == 0
    source_head = _head(batchpay("verify").stdout)
    url = postgres.journal_url()
    copied = batchpay("journal", "copy", "--to", url)
    assert copied.exit_code == 0, copied
    assert _head(copied.stdout) == source_head
    # from now on the team's journal is the database: the same chain, the same payouts
    monkeypatch.setenv("BATCHPAY_JOURNAL", url)
    verified = batchpay("verify")
    assert verified.exit_code == 0 and _head(verified.stdout) == source_head, verified
    again = batchpay("run", str(sheet), "--wait", "5", "--out", str(tmp_path / "b.xlsx"))
    assert again.exit_code == 0, again
    _paid_once(service.url, sheet_rows)
    assert {r["status"] for r in results(tmp_path / "b.xlsx")} == {"COMPLETED"}
    # new rows are paid into the copied journal, its ids going on after the copied ones
    more = rows(3, start=100)
    third = batchpay("run", str(write_sheet(tmp_path / "dec.xlsx", more)), "--wait", "5",
                     "--out", str(tmp_path / "c.xlsx"), "--quiet")
    assert third.exit_code == 0, third
    _paid_once(service.url, sheet_rows + more)
    assert batchpay("verify").exit_code == 0


def test_copy_goes_only_into_an_empty_journal_and_only_from_an_intact_one(
        cli_sandbox: Any, postgres: Any, tmp_path: Path) -> None:
    cli_sandbox(settle_seconds=0.05)
    sheet = write_sheet(tmp_path / "nov.xlsx", rows(2))
    assert batchpay("run", str(sheet), "--wait", "2", "--quiet").exit_code == 0
    url = postgres.journal_url()
    assert batchpay("journal", "copy", "--to", url).exit_code == 0
    twice = batchpay("journal", "copy", "--to", url)
    assert twice.exit_code == 2 and "not empty" in twice.stderr, twice
    # a source edited by hand is refused before a row is copied
    journal_file = tmp_path / "journal" / "journal.sqlite3"
    with Journal(journal_file) as j:
        j.db.execute("UPDATE payouts SET status = 'NOT_SENT'")
    fresh = postgres.journal_url()
    refused = batchpay("journal", "copy", "--to", fresh)
    assert refused.exit_code == 2 and "does not check out" in refused.stderr, refused
    with psycopg.connect(fresh) as conn:  # not even a table was made there
        assert conn.execute("SELECT COUNT(*) FROM information_schema.tables "
                            "WHERE table_schema = current_schema()").fetchone() == (0,)


def test_a_journal_restored_from_an_older_backup_pays_nothing_twice(
        cli_sandbox: Any, tmp_path: Path) -> None:
    service = cli_sandbox(settle_seconds=0.05)
    journal_file = tmp_path / "journal" / "journal.sqlite3"
    first, second = rows(3), rows(5, start=50)
    assert batchpay("run", str(write_sheet(tmp_path / "oct.xlsx", first)), "--wait", "3",
                    "--quiet").exit_code == 0
    backup = tmp_path / "backup" / "journal-oct.sqlite3"
    backup.parent.mkdir()
    made = batchpay("journal", "backup", str(backup))
    assert made.exit_code == 0, made
    assert backup.stat().st_mode & 0o077 == 0  # as private as the journal
    sheet = write_sheet(tmp_path / "nov.xlsx", second)
    assert batchpay("run", str(sheet), "--wait", "3", "--quiet").exit_code == 0
    _paid_once(service.url, first + second)
    # the journal is lost; the older backup is put back (its -wal and -shm go with the lost one)
    for leftover in journal_file.parent.glob("journal.sqlite3*"):
        leftover.unlink()
    shutil.copy2(backup, journal_file)
    assert batchpay("verify").exit_code == 0
    again = batchpay("run", str(sheet), "--wait", "3", "--out", str(tmp_path / "again.xlsx"))
    assert again.exit_code == 1, again
    _paid_once(service.url, first + second)  # 0 extra payouts at the service
    # the rows paid since the backup are held: found in the service's own payout list
    assert {r["status"] for r in results(tmp_path / "again.xlsx")} == {"HELD"}


def test_a_postgresql_backup_restored_pays_nothing_twice(
        cli_sandbox: Any, postgres: Any, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    service = cli_sandbox(settle_seconds=0.05)
    url = postgres.journal_url()
    monkeypatch.setenv("BATCHPAY_JOURNAL", url)
    first, second = rows(3), rows(4, start=60)
    assert batchpay("run", str(write_sheet(tmp_path / "oct.xlsx", first)), "--wait", "3",
                    "--quiet").exit_code == 0
    backup = tmp_path / "journal.dump"
    made = batchpay("journal", "backup", str(backup))
    assert made.exit_code == 0, made
    sheet = write_sheet(tmp_path / "nov.xlsx", second)
    assert batchpay("run", str(sheet), "--wait", "3", "--quiet").exit_code == 0
    # the server is lost; the dump is restored into a new database
    schema = url.rsplit("%3D", 1)[1]
    with psycopg.connect(postgres.url(), autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE restored_{schema}")
    restored = postgres.url(f"restored_{schema}", schema)
    done = subprocess.run(["pg_restore", f"--dbname={postgres.url(f'restored_{schema}')}",
                           str(backup)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    monkeypatch.setenv("BATCHPAY_JOURNAL", restored)
    assert batchpay("verify").exit_code == 0
    again = batchpay("run", str(sheet), "--wait", "3", "--out", str(tmp_path / "again.xlsx"))
    assert again.exit_code == 1, again
    _paid_once(service.url, first + second)
    assert {r["status"] for r in results(tmp_path / "again.xlsx")} == {"HELD"}


def test_a_backup_never_replaces_a_file_not_even_one_made_while_the_journal_is_checked(
        journal: Journal, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from batchpay.errors import JournalError
    from batchpay.journal import moving

    journal.record_note("test.note", {"n": 1})
    there = tmp_path / "there.backup"
    there.write_bytes(b"someone's file")
    with pytest.raises(JournalError, match="already exists; a backup never replaces a file"):
        moving.backup_journal(journal, there)
    assert there.read_bytes() == b"someone's file"

    late = tmp_path / "late.backup"
    real_check = moving.check

    def check_while_a_file_appears(*args: Any, **kwargs: Any) -> Any:
        late.write_bytes(b"made meanwhile")
        return real_check(*args, **kwargs)

    monkeypatch.setattr(moving, "check", check_while_a_file_appears)
    with pytest.raises(JournalError, match="already exists; a backup never replaces a file"):
        moving.backup_journal(journal, late)
    assert late.read_bytes() == b"made meanwhile"
    monkeypatch.setattr(moving, "check", real_check)
    made = moving.backup_journal(journal, tmp_path / "new.backup")
    assert (tmp_path / "new.backup").stat().st_size > 0 and made.events >= 1
