"""batchpay's own files are private, and folders it did not create keep their modes."""

from __future__ import annotations

import sqlite3
import stat
from pathlib import Path

import pytest

from batchpay.errors import JournalError
from batchpay.journal.store import Journal
from tests.support.e2e import batchpay

SAMPLES = Path(__file__).resolve().parents[2] / "samples"


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize("shared_mode", [0o1777, 0o2775])
def test_an_existing_shared_folder_keeps_its_mode(tmp_path: Path, shared_mode: int) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(shared_mode)
    with Journal(shared / "journal.sqlite3"):
        pass
    assert mode(shared) == shared_mode
    assert mode(shared / "journal.sqlite3") == 0o600


def test_folders_batchpay_creates_are_private(tmp_path: Path) -> None:
    with Journal(tmp_path / "new" / "deeper" / "journal.sqlite3"):
        pass
    assert mode(tmp_path / "new") == 0o700
    assert mode(tmp_path / "new" / "deeper") == 0o700


def test_a_foreign_sqlite_file_is_refused_without_switching_it_to_wal(tmp_path: Path) -> None:
    foreign = tmp_path / "accounts.sqlite3"
    with sqlite3.connect(foreign) as db:
        db.execute("CREATE TABLE ledger (id INTEGER)")
    with pytest.raises(JournalError, match="not a batchpay journal"):
        Journal(foreign)
    with sqlite3.connect(foreign) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
        assert db.execute("SELECT name FROM sqlite_master").fetchall() == [("ledger",)]
    assert not Path(str(foreign) + "-wal").exists()


def test_sandbox_state_and_bank_cache_are_private(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for var in ("BATCHPAY_BASE_URL", "BATCHPAY_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("BATCHPAY_JOURNAL", str(tmp_path / "books" / "journal.sqlite3"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    result = batchpay("validate", str(SAMPLES / "november-payouts.xlsx"))
    assert result.exit_code == 0, result
    books = tmp_path / "books"
    made = [p for p in books.rglob("*") if p.is_file()]
    assert any("sandbox-state" in p.name for p in made), made
    assert any(p.suffix == ".json" for p in made), made  # the bank directory cache
    for path in made:
        assert mode(path) == 0o600, path
    for folder in [books, *(p for p in books.rglob("*") if p.is_dir())]:
        assert mode(folder) == 0o700, folder
