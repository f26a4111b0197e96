"""A journal written before the chain named its key (schema 2) stays readable.

`data/schema2-journal.sql` is a journal batchpay wrote at schema 2, dumped as SQL: two runs
on a standalone sandbox (2 rows, then 1), with 1,000,000,000 NGN taken from the wallet
between them outside batchpay; `data/schema2-chain.key` is the key its chain was keyed
with. (Its paths, host and port were replaced by neutral ones and the chain recomputed
with that key, as batchpay computes it.) It must verify, give its statement, take its
chain.keyed event with its next event, and then be as protected as a new journal.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from decimal import Decimal
from pathlib import Path

import openpyxl
import pytest

from batchpay.journal.records import GENESIS, event_hash
from batchpay.journal.store import Journal
from tests.support.e2e import batchpay

DATA = Path(__file__).parent / "data"
HEAD = "4a316a4ebce2177a818bef146ed4f79f7ccff63aeee7c040ce20750fd8c76d67"
DAY = "2026-11-27"  # when it was written


@pytest.fixture
def old_journal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    key = tmp_path / "key" / "chain.key"
    key.parent.mkdir(mode=0o700)
    shutil.copy(DATA / "schema2-chain.key", key)
    key.chmod(0o600)
    monkeypatch.setenv("BATCHPAY_CHAIN_KEY", str(key))
    path = tmp_path / "journal.sqlite3"
    db = sqlite3.connect(path)
    db.executescript((DATA / "schema2-journal.sql").read_text(encoding="utf-8"))
    db.close()
    path.chmod(0o600)
    return path


def totals(path: Path) -> dict[str, object]:
    wb = openpyxl.load_workbook(path, read_only=True)
    grid = list(wb["Totals"].iter_rows(values_only=True))
    wb.close()
    return dict(zip([str(h) for h in grid[0]], grid[1], strict=False))


def test_a_schema_2_journal_verifies_and_gives_its_statement(old_journal: Path,
                                                             tmp_path: Path) -> None:
    checked = batchpay("verify", "--journal", str(old_journal), "--head", HEAD)
    assert checked.exit_code == 0, checked
    assert f"14 events, chain head {HEAD}" in checked.stdout
    out = tmp_path / "s.xlsx"
    made = batchpay("statement", "--journal", str(old_journal), "--from", DAY, "--to", DAY,
                    "--out", str(out))
    assert made.exit_code == 0, made
    ngn = totals(out)
    assert Decimal(str(ngn["wallet_before"])) == Decimal("10000000000")
    assert Decimal(str(ngn["wallet_after"])) == Decimal("8999690938.47")
    assert Decimal(str(ngn["net_debit"])) == Decimal("309061.53")
    # what left the wallet outside batchpay shows, from the chain's run events
    assert Decimal(str(ngn["movement_minus_net_debit"])) == Decimal("1000000000")
    db = sqlite3.connect(old_journal)
    versions = [v for (v,) in db.execute("SELECT version FROM schema_version ORDER BY version")]
    db.close()
    assert versions == [2, 4]


def test_its_next_event_brings_the_chain_keyed_event_and_the_key_cannot_be_taken_off(
        old_journal: Path) -> None:
    with Journal(old_journal) as journal:
        journal.record_note("sync", {"note": "the next event"})
        marker = journal.events_of("chain.keyed")
        kinds = [k for (k,) in journal.db.execute(
            "SELECT kind FROM events WHERE seq > 14 ORDER BY seq")]
    assert kinds == ["chain.keyed", "sync"]
    assert marker == [{"key": "ec3a4820251ff884", "keyed_from": 1}]
    assert batchpay("verify", "--journal", str(old_journal)).exit_code == 0

    db = sqlite3.connect(old_journal)
    with db:  # the key taken off and the chain recomputed unkeyed
        db.execute("DELETE FROM meta WHERE key IN ('chain_key', 'chain_keyed_from')")
        prev = GENESIS
        for seq, at, kind, run_id, ref, data in db.execute(
                "SELECT seq, at, kind, run_id, payout_ref, data FROM events "
                "ORDER BY seq").fetchall():
            digest = event_hash(prev, seq, at, kind, run_id, ref, data)
            db.execute("UPDATE events SET prev_hash = ?, hash = ? WHERE seq = ?",
                       (prev, digest, seq))
            prev = digest
    db.close()
    checked = batchpay("verify", "--journal", str(old_journal))
    assert checked.exit_code == 1, checked
    assert "no longer records a key" in checked.stderr


def test_its_wallet_figures_are_checked_against_its_chain(old_journal: Path) -> None:
    db = sqlite3.connect(old_journal)
    with db:
        run_id, text = db.execute("SELECT id, info FROM runs ORDER BY started_at DESC "
                                  "LIMIT 1").fetchone()
        info = json.loads(text)
        info["wallet_after"]["NGN"] = "9999690938.47"  # 1,000,000,000 NGN hidden
        db.execute("UPDATE runs SET info = ? WHERE id = ?", (json.dumps(info), run_id))
    db.close()
    checked = batchpay("verify", "--journal", str(old_journal))
    assert checked.exit_code == 1, checked
    assert f"run {run_id}: the runs table's info was edited (wallet_after " in checked.stderr


def test_two_connections_write_one_chain_keyed_event(old_journal: Path) -> None:
    """A listener and a sync open the journal at once: whichever writes first writes the
    chain.keyed event, the other sees it there."""
    with Journal(old_journal) as first, Journal(old_journal) as second:
        first.record_note("sync", {"by": "first"})
        second.record_note("sync", {"by": "second"})
        kinds = [k for (k,) in first.db.execute(
            "SELECT kind FROM events WHERE seq > 14 ORDER BY seq")]
    assert kinds == ["chain.keyed", "sync", "sync"]
    assert batchpay("verify", "--journal", str(old_journal)).exit_code == 0
