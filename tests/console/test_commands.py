"""`batchpay users` and `batchpay serve` as an operator runs them: users with roles and
hashed passwords; the console served over HTTPS with the login link it prints, and a
binding beyond loopback refused without TLS."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from batchpay.cli import cli
from tests.support.e2e import batchpay


def test_users_add_and_list(tmp_path: Path) -> None:
    journal = tmp_path / "j" / "journal.sqlite3"
    runner = CliRunner()
    added = runner.invoke(cli, ["users", "add", "li-wei", "--role", "approver", "--role",
                                "auditor", "--password-stdin", "--journal", str(journal)],
                          input="a long enough password\n")
    assert added.exit_code == 0, added.output
    # its approvers-file line: an approver's key approves plans, and makes none
    assert 'li-wei namespaces="batchpay-plan-v1" ssh-ed25519 AAAA' in added.output
    short = runner.invoke(cli, ["users", "add", "mia", "--role", "maker", "--password-stdin",
                                "--journal", str(journal)], input="short\n")
    assert short.exit_code == 2 and "at least 12 characters" in short.output
    maker = runner.invoke(cli, ["users", "add", "maya", "--role", "maker", "--password-stdin",
                                "--journal", str(journal)], input="a long enough password\n")
    assert 'maya namespaces="batchpay-plan-maker-v1" ssh-ed25519 AAAA' in maker.output
    twice = runner.invoke(cli, ["users", "add", "li-wei", "--role", "maker",
                                "--password-stdin", "--journal", str(journal)],
                          input="a long enough password\n")
    assert twice.exit_code == 2 and "exists already" in twice.output
    listed = runner.invoke(cli, ["users", "list", "--journal", str(journal)])
    assert re.search(r"^li-wei  approver, auditor  SHA256:", listed.output, re.M)
    users = json.loads((journal.parent / "console" / "users.json").read_text())["users"]
    assert users["li-wei"]["password"].startswith("argon2id$")
    key = journal.parent / "console" / "keys" / "li-wei_ed25519"
    assert key.stat().st_mode & 0o077 == 0


def self_signed(folder: Path) -> tuple[Path, Path]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = dt.datetime.now(dt.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=1))
            .not_valid_after(now + dt.timedelta(days=1))
            .sign(key, hashes.SHA256()))
    cert_path, key_path = folder / "cert.pem", folder / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


@pytest.mark.slow
def test_serve_over_https_prints_a_one_time_login_link(tmp_path: Path) -> None:
    cert, key = self_signed(tmp_path)
    log = tmp_path / "serve.log"
    env = {**os.environ, "BATCHPAY_JOURNAL": str(tmp_path / "j" / "journal.sqlite3"),
           "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    with log.open("w") as err:
        proc = subprocess.Popen([sys.executable, "-m", "batchpay", "serve", "--port", "0",
                                 "--tls-cert", str(cert), "--tls-key", str(key)],
                                stdout=err, stderr=err, env=env)
    try:
        deadline = time.monotonic() + 30
        while not (found := re.search(r"(https://127\.0\.0\.1:\d+)/login/(\S+)",
                                      log.read_text())):
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)
        base, token = found.group(1), found.group(2)
        with httpx.Client(base_url=base, verify=False) as client:
            answer = client.get(f"/login/{token}", follow_redirects=False)
            assert answer.status_code == 303
            assert "__Host-batchpay-session=" in answer.headers["set-cookie"]
            assert answer.headers["strict-transport-security"].startswith("max-age=")
            page = client.get("/", headers={"Cookie": answer.headers["set-cookie"].split(";")[0]})
            # the owner administers: the users and settings, and no upload of a sheet
            assert page.status_code == 200 and "Users and settings" in page.text
            assert "Payout sheet" not in page.text
            assert client.get(f"/login/{token}", follow_redirects=False).status_code == 403
            assert client.get("/login", headers={"Host": "evil.example"}).status_code == 400
    finally:
        proc.terminate()
        proc.wait(10)


def test_serve_beyond_loopback_without_tls_is_refused(tmp_path: Path) -> None:
    refused = batchpay("serve", "--host", "0.0.0.0", "--journal",
                       str(tmp_path / "j" / "journal.sqlite3"))
    assert refused.exit_code == 2
    assert "only over HTTPS" in refused.stderr and "Traceback" not in refused.stderr


@pytest.mark.slow
def test_a_teams_console_leaves_its_login_link_in_a_private_file_never_in_its_log(
        tmp_path: Path) -> None:
    """With users who sign in by password, the console's output (what a service manager's
    log keeps) holds no login link: the link is in console/login-link, 0600. It signs in
    the owner, who administers only; with an approver among the users, approval is on."""
    journal = tmp_path / "j" / "journal.sqlite3"
    added = CliRunner().invoke(cli, ["users", "add", "li-wei", "--role", "approver",
                                     "--password-stdin", "--journal", str(journal)],
                               input="a long enough password\n")
    assert added.exit_code == 0, added.output
    log = tmp_path / "serve.log"
    env = {**os.environ, "BATCHPAY_JOURNAL": str(journal),
           "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    link_file = journal.parent / "console" / "login-link"
    with log.open("w") as err:
        proc = subprocess.Popen([sys.executable, "-m", "batchpay", "serve", "--port", "0"],
                                stdout=err, stderr=err, env=env)
    try:
        deadline = time.monotonic() + 30
        while "login-link" not in log.read_text():
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)
        assert "/login/" not in log.read_text()
        assert link_file.stat().st_mode & 0o777 == 0o600
        link = link_file.read_text().strip()
        base, token = link.split("/login/")
        with httpx.Client(base_url=base) as client:
            answer = client.get(f"/login/{token}", follow_redirects=False)
            assert answer.status_code == 303
            cookie = answer.headers["set-cookie"].split(";")[0]
            page = client.get("/", headers={"Cookie": cookie}).text
            assert "owner (owner)" in page and "Payout sheet" not in page
            assert "Two-person approval on" in page
    finally:
        proc.terminate()
        proc.wait(10)
    users = json.loads((journal.parent / "console" / "users.json").read_text())["users"]
    assert users["owner"]["roles"] == ["owner"] and users["owner"]["password"] == ""
