"""The console's state in a PostgreSQL journal, store by store: two hosts are two
ConsoleDatabase objects (their own connections) with their own working folders, on one
real database. The tables come to an existing journal, users and keys are the team's,
links and sessions are kept as hashes and work on either host, a batch's files follow the
database, and the Pay claim is a row only one host gets in."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
from click.testing import CliRunner
from starlette.testclient import TestClient

from batchpay.cli import cli
from batchpay.console.app import create_app
from batchpay.console.batches import BatchRefused, PayProcess
from batchpay.console.batches_postgres import TeamBatches
from batchpay.console.follower import Follower
from batchpay.console.sessions import COOKIE, IDLE_SECONDS
from batchpay.console.state import open_accounts, open_state
from batchpay.console.state_postgres import (
    CONSOLE_SCHEMA_VERSION,
    ConsoleDatabase,
    TeamAccounts,
    TeamSessions,
)
from batchpay.errors import JournalError
from batchpay.journal.store import Journal
from batchpay.settings.load import load_settings
from tests.support.postgres import journal_alone

PASSWORD = "correct horse battery"


@pytest.fixture
def url(postgres: Any) -> str:
    return journal_alone(postgres)


@pytest.fixture
def hosts(url: str) -> Iterator[tuple[ConsoleDatabase, ConsoleDatabase]]:
    pair = (ConsoleDatabase(url), ConsoleDatabase(url))
    yield pair
    for db in pair:
        db.close()


def tables(url: str) -> set[str]:
    with psycopg.connect(url) as conn:
        return {r[0] for r in conn.execute(
            "SELECT table_name FROM information_schema.tables "
            "WHERE table_schema = current_schema()")}


def test_an_existing_journal_gets_the_console_tables_once(url: str) -> None:
    assert not {t for t in tables(url) if t.startswith("console_")}
    state = open_state(load_settings(env={"BATCHPAY_JOURNAL": url}))
    assert state.shared and state.accounts.users() == []  # made at the first use
    assert {"console_users", "console_sessions", "console_batches", "console_batch_files",
            "console_pay_claims", "console_keys", "console_links"} <= tables(url)
    open_state(load_settings(env={"BATCHPAY_JOURNAL": url})).batches.all()  # no change
    with psycopg.connect(url) as conn:
        versions = [r[0] for r in conn.execute("SELECT version FROM console_schema_version")]
        assert versions == [CONSOLE_SCHEMA_VERSION]
        conn.execute("INSERT INTO console_schema_version VALUES (99, 'later')")
    with pytest.raises(JournalError, match="newer batchpay"):
        open_state(load_settings(env={"BATCHPAY_JOURNAL": url})).sessions.login_link("mia")


def test_a_file_journal_keeps_the_console_in_its_folder(tmp_path: Path) -> None:
    journal = tmp_path / "journal.sqlite3"
    state = open_state(load_settings(env={"BATCHPAY_JOURNAL": str(journal)}))
    assert not state.shared and type(state.accounts).__name__ == "Accounts"
    state.accounts.add("mia", ("maker",), PASSWORD)
    assert (tmp_path / "console" / "users.json").is_file()


def test_users_and_their_keys_are_the_teams(hosts: tuple[ConsoleDatabase, ConsoleDatabase],
                                           tmp_path: Path, url: str) -> None:
    a, b = (TeamAccounts(tmp_path / name, db) for name, db in zip("ab", hosts, strict=True))
    a.add("mia", ("maker",), PASSWORD)
    found = b.get("mia")
    assert found is not None and found.roles == ("maker",)
    assert b.authenticate("mia", PASSWORD) is not None
    assert a.fingerprint("mia") == b.fingerprint("mia")  # one key, whichever host signs
    assert not (tmp_path / "a" / "keys").exists()  # in the database, not on a disk
    # two hosts adding users at the same moment: both kept (one change after the other)
    start = threading.Barrier(2)

    def add(accounts: TeamAccounts, name: str) -> None:
        start.wait()
        accounts.add(name, ("approver",), PASSWORD)

    threads = [threading.Thread(target=add, args=(acc, name))
               for acc, name in ((a, "abe"), (b, "ada"))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert [u.name for u in a.users()] == ["abe", "ada", "mia"]
    b.remove("mia")
    assert a.get("mia") is None
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT COUNT(*) FROM console_keys WHERE name = 'mia'"
                            ).fetchone() == (0,)
    assert isinstance(open_accounts(load_settings(env={"BATCHPAY_JOURNAL": url})),
                      TeamAccounts)


def test_links_and_sessions_work_on_either_host_and_are_kept_hashed(
        hosts: tuple[ConsoleDatabase, ConsoleDatabase], url: str) -> None:
    now = [1_000_000.0]
    a, b = (TeamSessions(db, clock=lambda: now[0]) for db in hosts)
    token = a.login_link("mia")
    session = b.redeem(token, lambda name: "g1")
    assert session is not None and session.user == "mia"
    assert a.redeem(token, lambda name: "g1") is None  # spent, on any host
    found = a.get(session.id)
    assert found is not None and found.token_matches(session.form_token)
    assert a.count("mia", "g1") == 1 and a.count("mia", "g2") == 0
    with psycopg.connect(url) as conn:
        kept = {r[0] for r in conn.execute("SELECT id_hash FROM console_sessions")}
    assert kept == {hashlib.sha256(session.id.encode()).hexdigest()}
    now[0] += IDLE_SECONDS + 1  # a working day unused
    assert b.get(session.id) is None
    other = a.start("abe", "g1")
    b.end_user("abe")
    assert a.get(other.id) is None


def test_a_batchs_files_follow_the_database(hosts: tuple[ConsoleDatabase, ConsoleDatabase],
                                            tmp_path: Path) -> None:
    a, b = (TeamBatches(tmp_path / name, db) for name, db in zip("ab", hosts, strict=True))
    made = a.create("November 2026.csv", b"payout_ref,amount\nr1,10\n", "mia")
    on_b = b.get(made.id)
    assert on_b is not None and on_b.sheet.read_bytes() == b"payout_ref,amount\nr1,10\n"
    on_b.checked.write_bytes(b"checked on b")  # written by the check on host B...
    b.update(made.id, stage="checked")
    again = a.get(made.id)  # ...read on host A
    assert again is not None and again.stage == "checked"
    assert again.checked.read_bytes() == b"checked on b"
    on_b.checked.write_bytes(b"checked again on b")
    b.update(made.id, stage="checked")
    assert a.all()[0].checked.read_bytes() == b"checked again on b"  # a stale copy replaced
    stale = on_b.folder / "sheet.plan.json.sig"  # an approval a new review makes stale
    stale.write_bytes(b"signature")
    b.update(made.id, stage="reviewed")
    assert a.get(made.id) is not None and (again.folder / stale.name).is_file()
    stale.unlink()  # deleted by the review on B...
    b.update(made.id, stage="reviewed")
    assert a.get(made.id) is not None and not (again.folder / stale.name).exists()  # ...on A
    assert b.get(made.id) is not None and not stale.exists()  # and never comes back


def test_the_pay_claim_is_one_row_whichever_host_asks(
        hosts: tuple[ConsoleDatabase, ConsoleDatabase], tmp_path: Path, url: str) -> None:
    a, b = (TeamBatches(tmp_path / name, db) for name, db in zip("ab", hosts, strict=True))
    batch = a.create("sheet.csv", b"x", "mia")
    a.update(batch.id, stage="approved")
    results: list[str] = []
    start = threading.Barrier(2)

    def claim(batches: TeamBatches) -> None:
        start.wait()
        try:
            batches.claim_payment(batch.id, "mia")
            results.append("claimed")
        except BatchRefused as exc:
            results.append(f"refused {exc.status_code}")

    threads = [threading.Thread(target=claim, args=(side,)) for side in (a, b)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert sorted(results) == ["claimed", "refused 409"]
    assert not (tmp_path / "a" / batch.id / "pay.claim").exists()  # a row, not a file
    with pytest.raises(BatchRefused):
        b.discard(batch.id, "mia")
    a.release_payment(batch.id, "Nothing was paid: test", "")
    assert b.claim_payment(batch.id, "mia").stage == "paying"  # free again after a release
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT COUNT(*) FROM console_pay_claims").fetchone() == (1,)


def test_a_page_while_the_database_is_away_says_so(tmp_path: Path) -> None:
    gone = f"postgresql://batchpay@/journal?host={tmp_path}&port=5432"
    app = create_app(load_settings(env={"BATCHPAY_JOURNAL": gone}),
                     allowed_hosts={"testserver"}, https=False)  # starts: nothing read yet
    client = TestClient(app, base_url="https://testserver", raise_server_exceptions=False)
    signed = TestClient(app, base_url="https://testserver", raise_server_exceptions=False,
                        cookies={COOKIE: "x" * 22})
    for answer in (client.get("/login"), signed.get("/")):
        assert answer.status_code == 503, answer.text
        assert "Cannot reach the journal database" in answer.text
        assert "Traceback" not in answer.text


def test_a_payment_of_a_lost_host_is_judged_by_the_journals_run_lock(
        hosts: tuple[ConsoleDatabase, ConsoleDatabase], tmp_path: Path, url: str) -> None:
    """Another host's payment goes on while its run holds the journal's run lock (the
    database drops it with a lost host's connection), or while its claim is fresh; else it
    stopped, and this console offers Resume payment."""
    from batchpay.console import payment

    settings = load_settings(env={"BATCHPAY_JOURNAL": url})
    batches = TeamBatches(tmp_path / "b", hosts[1])
    made = batches.create("sheet.csv", b"x", "mia")
    long_ago = (datetime.now(UTC) - timedelta(minutes=10)).isoformat(timespec="seconds")
    batch = batches.update(made.id, stage="paying", paid_at=long_ago,
                           pay_process=PayProcess(host="a-lost-host", pid=1))
    assert payment.going_on(settings, batch) == ""
    with Journal(url) as running:  # a run of that host's, going on
        running.lock()
        assert payment.going_on(settings, batch) == "elsewhere"
    fresh = batches.update(made.id, paid_at=datetime.now(UTC).isoformat(timespec="seconds"))
    assert payment.going_on(settings, fresh) == "elsewhere"  # its run may be starting


def test_journal_copy_brings_a_file_journals_console_along(postgres: Any,
                                                          tmp_path: Path) -> None:
    journal = tmp_path / "laptop" / "journal.sqlite3"
    Journal(journal).close()
    state = open_state(load_settings(env={"BATCHPAY_JOURNAL": str(journal)}))
    state.accounts.add("mia", ("maker",), PASSWORD)
    fingerprint = state.accounts.fingerprint("mia")
    paid = state.batches.create("november.csv", b"payout_ref,amount\n", "mia")
    state.batches.claim_payment(paid.id, "mia")
    url = str(postgres.journal_url())
    copied = CliRunner().invoke(cli, ["journal", "copy", "--to", url, "--journal",
                                      str(journal)])
    assert copied.exit_code == 0, copied.output
    assert "Copied the console: 1 users and their keys, 1 batches." in copied.output
    team = open_state(load_settings(env={"BATCHPAY_JOURNAL": url}))
    assert team.accounts.authenticate("mia", PASSWORD) is not None
    assert team.accounts.fingerprint("mia") == fingerprint  # the same key: old plans verify
    with psycopg.connect(url) as conn:  # sealed on its way in, as the team's keys are
        kept = conn.execute("SELECT private FROM console_keys WHERE name = 'mia'").fetchone()
    assert kept is not None and kept[0].startswith("v1:") and "PRIVATE KEY" not in kept[0]
    found = team.batches.get(paid.id)
    assert found is not None and found.stage == "paying"
    assert found.sheet.read_bytes() == b"payout_ref,amount\n"
    assert found.folder != paid.folder  # this host's working copy, written from the database
    with pytest.raises(BatchRefused, match="paid once"):
        team.batches.claim_payment(paid.id, "mia")  # its claim came with it


def test_one_console_of_the_team_follows_the_paid_batches(
        hosts: tuple[ConsoleDatabase, ConsoleDatabase], tmp_path: Path) -> None:
    """Each refresh spends the API key's requests: the consoles take turns, never both."""
    a, b = (TeamBatches(tmp_path / name, db) for name, db in zip("ab", hosts, strict=True))
    assert a.follows_here() and a.follows_here()
    assert not b.follows_here()
    assert Follower(load_settings(), b, every=0).round() == 0  # B leaves them to A
    a.stop_following()  # A stops (or its host is lost: the database drops its lock)
    assert b.follows_here() and not a.follows_here()
    b.stop_following()
