"""One journal in PostgreSQL shared by several hosts: each row paid once whoever races for
it, one hash chain, and a host without the chain's key cannot write. Hosts are simulated as
processes (or connections) with user data folders of their own; payouts are counted at the
sandbox over real HTTP."""

from __future__ import annotations

import secrets
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from batchpay.errors import AlreadySent, JournalError, JournalLocked
from batchpay.journal.records import GENESIS
from batchpay.journal.store import Journal
from tests.support.e2e import sandbox_payouts
from tests.support.processes import runner_env, start_runner
from tests.support.sheets import rows, write_sheet


def host_folder(tmp_path: Path, name: str, key: str) -> Path:
    """A host's own user data folder, holding the team's chain key (as the README says to
    copy it: <data>/batchpay/chain.key, 0600)."""
    folder = tmp_path / name
    keyfile = folder / "xdg-data" / "batchpay" / "chain.key"
    keyfile.parent.mkdir(parents=True, mode=0o700)
    keyfile.write_text(key + "\n", encoding="ascii")
    keyfile.chmod(0o600)
    return folder


def _intent(j: Journal, ref: str, run_id: str) -> int:
    quote = f"q-{run_id}-{ref}"
    return j.record_intent(ref, run_id, '{"amount":"1"}', {"id": quote},
                           {"quoteId": quote, "reason": "x"}, expires_at=9e9)


@pytest.mark.slow
def test_two_runs_of_one_sheet_at_once_on_two_hosts_pay_each_row_once(
        postgres: Any, sandbox_factory: Any, tmp_path: Path) -> None:
    service = sandbox_factory(state_path=tmp_path / "sandbox.sqlite3", settle_seconds=0.1,
                              latency_ms=5)
    url = postgres.journal_url()
    key = secrets.token_hex(32)
    sheet_rows = rows(24)
    sheet = write_sheet(tmp_path / "sheet.xlsx", sheet_rows)
    hosts = [host_folder(tmp_path, name, key) for name in ("laptop", "server")]
    runs = [start_runner("run", str(sheet), "--wait", "5", "--concurrency", "4",
                         "--out", str(host / "results.xlsx"),
                         env=runner_env(service.url, url, key=service.api_key, folder=host),
                         cwd=tmp_path) for host in hosts]
    done = [run.communicate(timeout=240) for run in runs]
    codes = sorted(run.returncode for run in runs)
    # the one that found the journal busy sent nothing (exit 2); one that came after the
    # other had finished found every row paid and sent nothing either (exit 0)
    assert codes in ([0, 0], [0, 2]), done
    paid = Counter(p["accountNumber"] for p in sandbox_payouts(service.url))
    assert paid == Counter(r["account_number"] for r in sheet_rows), paid
    with Journal(url) as journal:
        assert journal.verify(head=journal.head()).ok is False  # this host has no key...
    # ...the hosts that hold it verify the one chain both wrote
    done_verify = subprocess.run(
        [sys.executable, "-m", "batchpay", "verify"], capture_output=True, text=True,
        env=runner_env(service.url, url, key=service.api_key, folder=hosts[1]), cwd=tmp_path)
    assert done_verify.returncode == 0, done_verify.stderr


def test_two_hosts_racing_for_the_same_rows_claim_each_once(postgres: Any) -> None:
    """Without the run lock (a webhook receiver, a console and a run may all write), the
    check that a payout_ref was never sent and its intent are one step in the database:
    of two connections racing for every row, exactly one records each intent."""
    url = postgres.journal_url()
    with Journal(url) as first:
        first.bind_service("embedded")
    refs = [f"R{n}" for n in range(40)]
    won: dict[str, list[str]] = {"a": [], "b": []}
    refused: Counter[str] = Counter()
    start = threading.Barrier(2)

    def host(name: str) -> None:
        with Journal(url) as j:
            start.wait()
            for ref in refs:
                try:
                    _intent(j, ref, f"run-{name}")
                    won[name].append(ref)
                except AlreadySent:
                    refused[name] += 1

    threads = [threading.Thread(target=host, args=(n,)) for n in won]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert sorted(won["a"] + won["b"]) == sorted(refs)  # each ref claimed exactly once
    assert sum(refused.values()) == len(refs)
    with Journal(url) as j:
        attempts = j.db.execute("SELECT payout_ref, COUNT(*) FROM attempts GROUP BY payout_ref"
                                ).fetchall()
        assert {r[0]: r[1] for r in attempts} == dict.fromkeys(refs, 1)
        check = j.verify(head=j.head())
        assert check.ok, check.problem  # one chain, appended in the database's order
        assert check.events == 2 + len(refs)  # two opening events, one intent a ref


def test_the_run_lock_is_the_databases_and_dies_with_its_connection(postgres: Any) -> None:
    url = postgres.journal_url()
    first, second = Journal(url), Journal(url)
    first.lock()
    with pytest.raises(JournalLocked, match="Another batchpay run"):
        second.lock()
    # the holder's session ends (a killed process, a lost host): the server drops the lock
    # as soon as its backend sees the connection gone (a moment after the close: taking the
    # lock waits that moment out)
    first.store.pg.conn.close()  # type: ignore[attr-defined]
    second.lock()
    second.close()


def test_a_host_without_the_chain_key_cannot_write(postgres: Any, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    url = postgres.journal_url()
    monkeypatch.setenv("BATCHPAY_CHAIN_KEY", str(tmp_path / "team.key"))
    with Journal(url) as j:
        j.bind_service("embedded")
        _intent(j, "R1", "run-a")
        head = j.head()
    monkeypatch.setenv("BATCHPAY_CHAIN_KEY", str(tmp_path / "other-host.key"))
    (tmp_path / "other-host.key").write_text(secrets.token_hex(32) + "\n")
    (tmp_path / "other-host.key").chmod(0o600)
    with Journal(url) as j:
        with pytest.raises(JournalError, match="keyed with chain key"):
            _intent(j, "R2", "run-b")
        assert j.head() == head  # nothing was written
        assert not j.verify().ok
    monkeypatch.setenv("BATCHPAY_CHAIN_KEY", str(tmp_path / "team.key"))
    with Journal(url) as j:
        assert j.verify(head=head).ok and j.head() != GENESIS


def test_a_database_that_is_not_a_journal_is_refused(postgres: Any) -> None:
    import psycopg

    url = postgres.journal_url()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE customers (id INTEGER)")
    with pytest.raises(JournalError, match="not a batchpay journal"):
        Journal(url)


def test_an_unreachable_database_is_one_clear_error(tmp_path: Path) -> None:
    url = f"postgresql://batchpay:s3cret@/journal?host={tmp_path}&port=1"
    with pytest.raises(JournalError) as caught:
        Journal(url)
    assert "Cannot reach the journal database" in str(caught.value)
    assert "s3cret" not in str(caught.value)


def test_the_journal_setting_takes_a_database_address_and_never_shows_its_password(
        tmp_path: Path) -> None:
    from batchpay.settings.load import load_settings
    from batchpay.settings.model import DatabaseURL

    url = "postgresql://batchpay:s3cret@db.example.com/batchpay?sslmode=verify-full"
    user_file = tmp_path / "batchpay.toml"
    user_file.write_text(f'journal = "{url}"\n', encoding="utf-8")
    from_file = load_settings(env={}, files=[user_file])
    # kept as given (not made a path relative to the file's folder)
    assert isinstance(from_file.journal, DatabaseURL) and from_file.journal == url
    none = [tmp_path / "absent.toml"]  # a user without a settings file
    from_env = load_settings(env={"BATCHPAY_JOURNAL": url}, files=none)
    from_option = load_settings(env={}, files=none).with_options(journal=url)
    for settings in (from_file, from_env, from_option):
        assert settings.journal == url
        shown = " ".join([*settings.journal_lines(), *(v for _, v in settings.public_items()),
                          settings.journal_name])
        assert "s3cret" not in shown and "batchpay:***@db.example.com" in shown
    in_query = load_settings(env={}, files=none).with_options(
        journal="postgresql://batchpay@db/batchpay?sslmode=require&password=s3cret")
    assert "s3cret" not in in_query.journal_name and "password=***" in in_query.journal_name
    # a file keeps being a file, made absolute
    assert load_settings(env={"BATCHPAY_JOURNAL": "j.sqlite3"}, files=none).journal == (
        Path.cwd() / "j.sqlite3")


def test_a_command_on_an_unreachable_database_says_so_in_one_line(tmp_path: Path) -> None:
    from tests.support.e2e import batchpay

    url = f"postgresql://batchpay:s3cret@/journal?host={tmp_path}&port=1"
    for command in (["runs"], ["verify"], ["journal", "backup", str(tmp_path / "b.dump")]):
        result = batchpay(*command, "--journal", url)
        assert result.exit_code == 2, (command, result)
        assert "Cannot reach the journal database" in result.stderr
        assert "Traceback" not in result.stderr and "s3cret" not in result.stderr
