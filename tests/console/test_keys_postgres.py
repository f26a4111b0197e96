"""The console's signing keys and form tokens in a PostgreSQL journal, read back from the
tables themselves: a key is stored sealed with a key derived from the chain key (no OpenSSH
text, no raw key bytes), opens on every host holding the team's chain key and on none
other, does not open as another user's, a plain key an earlier batchpay wrote is sealed at
its first use, and a session's form token is stored as its hash only. Two hosts are two
ConsoleDatabase objects on one real database, as in test_team_state."""

from __future__ import annotations

import base64
import hashlib
import re
import secrets
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from click.testing import CliRunner
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from batchpay import sshsig
from batchpay.cli import cli
from batchpay.console.state_postgres import ConsoleDatabase, TeamAccounts, TeamSessions
from batchpay.errors import SigningKeyLocked
from batchpay.journal.chain_keys import key_id, key_path, load_key
from batchpay.journal.store import Journal
from tests.support.postgres import journal_alone

PASSWORD = "correct horse battery"


@pytest.fixture
def url(postgres: Any) -> str:
    return journal_alone(postgres)


@pytest.fixture
def hosts(url: str, tmp_path: Path) -> Iterator[tuple[TeamAccounts, TeamAccounts]]:
    dbs = (ConsoleDatabase(url), ConsoleDatabase(url))
    yield TeamAccounts(tmp_path / "a", dbs[0]), TeamAccounts(tmp_path / "b", dbs[1])
    for db in dbs:
        db.close()


def stored(url: str, name: str) -> str:
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT private FROM console_keys WHERE name = %s",
                           (name,)).fetchone()
    assert row is not None, name
    return str(row[0])


def raw(key: Ed25519PrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.Raw, serialization.PrivateFormat.Raw,
                             serialization.NoEncryption())


def other_host_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, key: bytes | None) -> Path:
    """This process becomes a host whose chain key file holds `key` (None: no file)."""
    path = tmp_path / f"host-{secrets.token_hex(4)}" / "chain.key"
    path.parent.mkdir()
    if key is not None:
        path.write_text(key.hex() + "\n", encoding="ascii")
        path.chmod(0o600)
    monkeypatch.setenv("BATCHPAY_CHAIN_KEY", str(path))
    return path


def test_the_key_column_holds_no_private_key_and_every_host_of_the_team_opens_it(
        hosts: tuple[TeamAccounts, TeamAccounts], url: str) -> None:
    a, b = hosts
    a.add("mia", ("maker",), PASSWORD)
    key = a.signing_key("mia")
    text = stored(url, "mia")
    assert text.startswith("v1:") and text.count(":") == 3
    assert "PRIVATE KEY" not in text and "openssh" not in text.lower()
    assert sshsig.private_text(key).decode() not in text
    assert raw(key).hex() not in text and raw(key).hex().upper() not in text
    chain_key = load_key()  # made on this host (a new team: no journal write yet)
    assert chain_key is not None and text.split(":")[1] == key_id(chain_key)
    assert chain_key.hex() not in text
    # the other host (the same chain key) opens the same key: what one signs, it verifies
    signature = sshsig.sign(b.signing_key("mia"), b"a plan", "batchpay-test")
    signer = sshsig.verify(signature, b"a plan", "batchpay-test")
    assert sshsig.public_blob(signer) == sshsig.public_blob(key.public_key())
    assert a.fingerprint("mia") == b.fingerprint("mia")
    assert stored(url, "mia") == text  # opening it rewrites nothing


def test_a_dump_of_the_database_yields_no_signing_key(
        hosts: tuple[TeamAccounts, TeamAccounts], url: str, postgres: Any) -> None:
    a, _ = hosts
    a.add("mia", ("maker",), PASSWORD)
    key = a.signing_key("mia")
    schema = url.rsplit("%3D", 1)[1]  # the journal's own schema (search_path)
    dump = subprocess.run([str(postgres.bin / "pg_dump"), "--data-only", "--schema", schema,
                           "--dbname", url], capture_output=True, text=True, check=True).stdout
    assert "console_keys" in dump and "v1:" in dump
    assert "PRIVATE KEY" not in dump
    assert raw(key).hex() not in dump and base64.b64encode(raw(key)).decode() not in dump


def test_a_sealed_key_copied_onto_another_users_row_does_not_open(
        hosts: tuple[TeamAccounts, TeamAccounts], url: str) -> None:
    a, b = hosts
    a.add("mia", ("maker",), PASSWORD)
    a.add("abe", ("approver",), PASSWORD)
    with psycopg.connect(url) as conn:  # whoever can write the table gives abe mia's key
        conn.execute("UPDATE console_keys SET private = %s WHERE name = 'abe'",
                     (stored(url, "mia"),))
    with pytest.raises(SigningKeyLocked, match="abe .* does not open .* copied from another"):
        b.signing_key("abe")
    assert b.fingerprint("mia") == a.fingerprint("mia")


def test_a_host_without_the_teams_chain_key_opens_and_makes_no_key(
        hosts: tuple[TeamAccounts, TeamAccounts], url: str, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = hosts
    a.add("mia", ("maker",), PASSWORD)
    with Journal(url) as journal:  # the journal's first write keys it with this host's key
        journal.bind_service("https://sandbox.example")
    team_key = load_key()
    assert team_key is not None
    missing = other_host_key(tmp_path, monkeypatch, None)
    with pytest.raises(SigningKeyLocked,
                       match=rf"holds no chain key \({re.escape(str(missing))}\)") as refused:
        b.signing_key("mia")
    assert refused.value.hint is not None and str(missing) in refused.value.hint
    assert not missing.exists()  # not made here: the team's key is copied, never re-made
    with pytest.raises(SigningKeyLocked):
        b.add("abe", ("approver",), PASSWORD)
    assert b.get("abe") is None  # refused before the user was written
    other_host_key(tmp_path, monkeypatch, secrets.token_bytes(32))
    with pytest.raises(SigningKeyLocked, match=f"not the team's chain key {key_id(team_key)}"):
        b.signing_key("mia")
    done = CliRunner().invoke(cli, ["users", "list", "--journal", url])
    assert done.exit_code == 2, done.output
    assert "not the team's chain key" in done.output and "Traceback" not in done.output
    monkeypatch.delenv("BATCHPAY_CHAIN_KEY")
    assert key_path().is_file()
    assert b.fingerprint("mia") == a.fingerprint("mia")  # the team's key opens it again


def test_a_host_with_another_key_is_refused_before_the_journal_is_keyed(
        hosts: tuple[TeamAccounts, TeamAccounts], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A new team whose journal has no event yet: the keys sealed already name the key."""
    a, b = hosts
    a.add("mia", ("maker",), PASSWORD)
    other_host_key(tmp_path, monkeypatch, secrets.token_bytes(32))
    with pytest.raises(SigningKeyLocked, match="not the team's chain key"):
        b.add("abe", ("approver",), PASSWORD)


def test_a_plain_key_an_earlier_batchpay_wrote_is_sealed_at_first_use(
        hosts: tuple[TeamAccounts, TeamAccounts], url: str) -> None:
    a, b = hosts
    for name in ("mia", "abe"):
        a.add(name, ("maker",), PASSWORD)
    earlier = {name: Ed25519PrivateKey.generate() for name in ("mia", "abe")}
    with psycopg.connect(url) as conn:  # as console schema 1 kept them: OpenSSH text
        for name, key in earlier.items():
            conn.execute("UPDATE console_keys SET private = %s WHERE name = %s",
                         (sshsig.private_text(key).decode(), name))
    assert "OPENSSH PRIVATE KEY" in stored(url, "abe")
    assert raw(b.signing_key("mia")) == raw(earlier["mia"])  # the same key, read...
    for name, key in earlier.items():  # ...and every plain key sealed, abe's too
        text = stored(url, name)
        assert text.startswith("v1:") and "PRIVATE KEY" not in text, text
        assert raw(key).hex() not in text
    assert raw(a.signing_key("abe")) == raw(earlier["abe"])  # opens sealed on the other host
    assert a.fingerprint("mia") == sshsig.fingerprint(earlier["mia"].public_key())
    late = Ed25519PrivateKey.generate()  # a console of schema 1 still running writes one
    with psycopg.connect(url) as conn:
        conn.execute("UPDATE console_keys SET private = %s WHERE name = 'abe'",
                     (sshsig.private_text(late).decode(),))
    assert raw(b.signing_key("abe")) == raw(late)
    assert stored(url, "abe").startswith("v1:")  # sealed at its use too


def test_a_form_token_is_derived_on_every_host_and_stored_as_its_hash_only(
        url: str) -> None:
    dbs = ConsoleDatabase(url), ConsoleDatabase(url)
    try:
        a, b = TeamSessions(dbs[0]), TeamSessions(dbs[1])
        session = a.start("mia", "g1")
        found = b.get(session.id)
        assert found is not None and found.token_matches(session.form_token)
        assert not found.token_matches("x" * 22)
        with psycopg.connect(url) as conn:
            kept = conn.execute("SELECT form_token FROM console_sessions").fetchall()
        assert kept == [(hashlib.sha256(session.form_token.encode()).hexdigest(),)]
        assert session.form_token != a.start("mia", "g1").form_token  # one per session
    finally:
        for db in dbs:
            db.close()


def test_schema_2_hashes_the_plain_form_tokens_schema_1_kept(url: str) -> None:
    ConsoleDatabase(url).migrate()
    with psycopg.connect(url) as conn:  # a console of schema 1, a session open in it
        conn.execute("DELETE FROM console_schema_version")
        conn.execute("INSERT INTO console_schema_version VALUES (1, 'earlier')")
        conn.execute("INSERT INTO console_sessions VALUES ('h', 'mia', 'plain-token', 'g1', "
                     "0, 0)")
    ConsoleDatabase(url).migrate()
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT form_token FROM console_sessions").fetchall() == [
            (hashlib.sha256(b"plain-token").hexdigest(),)]
        assert [r[0] for r in conn.execute(
            "SELECT version FROM console_schema_version ORDER BY version")] == [1, 2]
