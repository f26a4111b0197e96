"""A journal that was ever keyed never verifies unkeyed: the attack is to erase a paid row
(tables and events), take the key off (the `meta` rows chain_key / chain_keyed_from) and
recompute every hash with the published, unkeyed algorithm, so that `verify` says OK, the
statement leaves the payout out and the row is paid again. Each variant is played on a real
run against the sandbox, and judged by `verify`, `statement` and what the sandbox holds.
"""

from __future__ import annotations

import json
import os
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from batchpay.journal.records import GENESIS, event_hash
from tests.support.e2e import batchpay, sandbox_payouts
from tests.support.sheets import rows, write_sheet


@pytest.fixture
def service(cli_sandbox: Any) -> Any:
    return cli_sandbox(settle_seconds=0.05)


def journal_path() -> Path:
    return Path(os.environ["BATCHPAY_JOURNAL"])


def today() -> str:
    return datetime.now(UTC).date().isoformat()


def downgrade(journal: Path, ref: str, *, strip_marks: bool = False,
              keyed_from: int | None = None) -> None:
    """The attacker's edit, without the key: `ref`'s payout removed from the tables and the
    chain, the key taken off `meta` (or, with `keyed_from`, the key said to start after the
    last event), and every hash recomputed unkeyed. With `strip_marks`, also every trace of
    the key inside the chain: the chain.keyed events, the key's id in run.started."""
    db = sqlite3.connect(journal)
    with db:
        db.execute("DELETE FROM payouts WHERE payout_ref = ?", (ref,))
        db.execute("DELETE FROM attempts WHERE payout_ref = ?", (ref,))
        db.execute("UPDATE run_rows SET linked = 0, status = 'NOT_SENT' WHERE payout_ref = ?",
                   (ref,))
        db.execute("DELETE FROM events WHERE payout_ref = ?", (ref,))
        if strip_marks:
            db.execute("DELETE FROM events WHERE kind = 'chain.keyed'")
            db.execute("DELETE FROM meta WHERE key = 'chain_marker'")
            for seq, data in db.execute("SELECT seq, data FROM events "
                                        "WHERE kind = 'run.started'").fetchall():
                fields = json.loads(data)
                fields.pop("chain_key", None)
                db.execute("UPDATE events SET data = ? WHERE seq = ?",
                           (json.dumps(fields, sort_keys=True, separators=(",", ":"),
                                       ensure_ascii=False), seq))
        kept = db.execute("SELECT at, kind, run_id, payout_ref, data FROM events "
                          "ORDER BY seq").fetchall()
        if keyed_from is None:
            db.execute("DELETE FROM meta WHERE key IN ('chain_key', 'chain_keyed_from')")
        else:
            db.execute("UPDATE meta SET value = ? WHERE key = 'chain_keyed_from'",
                       (str(len(kept) + keyed_from),))
        db.execute("DELETE FROM events")
        prev = GENESIS
        for seq, (at, kind, run_id, pref, data) in enumerate(kept, start=1):
            digest = event_hash(prev, seq, at, kind, run_id, pref, data)
            db.execute("INSERT INTO events (seq, at, kind, run_id, payout_ref, data, prev_hash,"
                       " hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                       (seq, at, kind, run_id, pref, data, prev, digest))
            prev = digest
    db.close()


def paid_three(tmp_path: Path) -> Path:
    sheet = write_sheet(tmp_path / "nov.xlsx", rows(3))
    assert batchpay("run", str(sheet), "--wait", "0").exit_code == 0
    assert batchpay("verify").exit_code == 0
    return sheet


def test_a_key_taken_off_and_the_chain_recomputed_fails_verify_statement_and_run(
        service: Any, tmp_path: Path) -> None:
    sheet = paid_three(tmp_path)
    downgrade(journal_path(), "T-00002")
    checked = batchpay("verify")
    assert checked.exit_code == 1, checked
    assert "no longer records a key" in checked.stderr
    assert "recomputed without the key" in checked.stderr
    out = tmp_path / "statement.xlsx"
    stated = batchpay("statement", "--from", today(), "--to", today(), "--out", str(out))
    assert stated.exit_code == 2 and "changed outside batchpay" in stated.stderr, stated
    assert not out.exists()
    again = batchpay("run", str(sheet), "--wait", "0", "--out", str(tmp_path / "again.xlsx"))
    assert again.exit_code == 2, again  # refused before any request
    assert len(sandbox_payouts(service.url)) == 3


def test_every_mark_in_the_chain_erased_too_the_key_list_still_knows(
        service: Any, tmp_path: Path, data_home: Path) -> None:
    paid_three(tmp_path)
    listed = data_home / "batchpay" / "chain.key.journals"
    assert listed.stat().st_mode & 0o777 == 0o600
    assert str(journal_path().resolve()) in listed.read_text()
    downgrade(journal_path(), "T-00002", strip_marks=True)
    checked = batchpay("verify")
    assert checked.exit_code == 1, checked
    assert "chain.key.journals" in checked.stderr and "no longer records a key" in checked.stderr
    stated = batchpay("statement", "--from", today(), "--to", today(),
                      "--out", str(tmp_path / "s.xlsx"))
    assert stated.exit_code == 2, stated


def test_on_a_machine_without_the_key_list_the_chain_itself_says_it_was_keyed(
        service: Any, tmp_path: Path, data_home: Path) -> None:
    """An auditor's machine: no key list of this user's. The chain.keyed event and the key's
    id in run.started were hashed with everything else, and name the key."""
    paid_three(tmp_path)
    downgrade(journal_path(), "T-00002")
    (data_home / "batchpay" / "chain.key.journals").rename(tmp_path / "elsewhere")
    checked = batchpay("verify")
    assert checked.exit_code == 1, checked
    assert "event 1 (chain.keyed) says the chain is keyed" in checked.stderr


def test_a_key_said_to_start_after_the_last_event_is_a_key_taken_off(
        service: Any, tmp_path: Path) -> None:
    paid_three(tmp_path)
    downgrade(journal_path(), "T-00002", keyed_from=1)
    checked = batchpay("verify")
    assert checked.exit_code == 1, checked
    assert "keyed only from event" in checked.stderr


def test_the_same_with_every_mark_erased_is_caught_by_the_key_list(
        service: Any, tmp_path: Path) -> None:
    paid_three(tmp_path)
    downgrade(journal_path(), "T-00002", keyed_from=1, strip_marks=True)
    checked = batchpay("verify")
    assert checked.exit_code == 1, checked
    assert "was keyed from event 1 on" in checked.stderr


def test_a_new_journal_at_the_same_path_is_not_a_downgrade(service: Any,
                                                          tmp_path: Path) -> None:
    """A journal deleted and started again where it was (the service's own list then
    guards the payouts) is keyed from its first event like any new journal."""
    sheet = paid_three(tmp_path)
    for suffix in ("", "-wal", "-shm"):
        Path(str(journal_path()) + suffix).unlink(missing_ok=True)
    again = batchpay("run", str(sheet), "--wait", "0", "--out", str(tmp_path / "again.xlsx"))
    assert again.exit_code in (0, 1), again
    assert len(sandbox_payouts(service.url)) == 3  # held by the service-list check
    assert batchpay("verify").exit_code == 0
