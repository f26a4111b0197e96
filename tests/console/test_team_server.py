"""Two consoles on one PostgreSQL journal: two `batchpay serve` processes, each a host of its
own (its own user data folder, the team's chain key copied into it), one database. A batch
uploaded on one is reviewed, approved and paid on the other; Pay pressed on both at once
pays once; a session ended on one is refused on the other; a plan signed on one verifies
on the other, and a third console on a host without the chain key signs nothing (the
signing keys in the database are sealed with it). Payouts are counted at the sandbox over
real HTTP."""

from __future__ import annotations

import hashlib
import re
import secrets
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from tests.journal.test_postgresql import host_folder
from tests.support.e2e import form_fields, sandbox_payouts
from tests.support.processes import private_user_folders, runner_env
from tests.support.sheets import rows, write_sheet

PASSWORD = "correct horse battery"
REPO = Path(__file__).resolve().parents[2]


@dataclass
class Host:
    """One `batchpay serve`: its address, its environment, its process."""

    url: str
    env: dict[str, str]
    proc: subprocess.Popen[bytes]


@dataclass
class Browser:
    """A user signed in on one host (the session cookie and the form token it carries)."""

    http: httpx.Client
    cookie: str
    csrf: str

    def get(self, path: str) -> httpx.Response:
        return self.http.get(path, headers={"Cookie": self.cookie})

    def post(self, path: str, files: Any = None, **fields: str) -> httpx.Response:
        return self.http.post(path, data={"csrf": self.csrf, **fields}, files=files,
                              headers={"Cookie": self.cookie})

    def form(self, batch: str, action: str) -> dict[str, str]:
        """The batch page's form for `action`, as a browser would send it."""
        page = self.get(f"/batches/{batch}").text
        values = form_fields(page, batch, action)
        assert values is not None, page[-3000:]
        return values


def batchpay(env: dict[str, str], *args: str, stdin: str = "") -> str:
    done = subprocess.run([sys.executable, "-m", "batchpay", *args], input=stdin, env=env,
                          capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, done.stderr
    return done.stdout


def start_host(env: dict[str, str], folder: Path) -> Host:
    log = folder / "serve.log"
    with log.open("w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "batchpay", "serve", "--port", "0"],
                                stdout=out, stderr=out, env=env, cwd=folder)
    deadline = time.monotonic() + 60
    while "login-link" not in log.read_text():
        assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
        time.sleep(0.05)
    link_file = next(folder.rglob("console/login-link"))
    return Host(link_file.read_text().strip().split("/login/")[0], env, proc)


def sign_in(host: Host, name: str) -> Browser:
    http = httpx.Client(base_url=host.url, timeout=60)
    answer = http.post("/login", data={"name": name, "password": PASSWORD})
    assert answer.status_code == 303, answer.text
    cookie = answer.headers["set-cookie"].split(";")[0]
    page = http.get("/", headers={"Cookie": cookie}).text
    csrf = re.search(r'name="csrf" value="([^"]+)"', page)
    assert csrf is not None, page[:500]
    return Browser(http, cookie, csrf.group(1))


def stage(url: str, batch: str) -> str:
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT meta::json ->> 'stage' FROM console_batches WHERE id = %s",
                           (batch,)).fetchone()
    assert row is not None
    return str(row[0])


def wait_for(url: str, batch: str, wanted: str, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while (now := stage(url, batch)) != wanted:
        assert time.monotonic() < deadline, f"{batch} is {now}, not {wanted}"
        time.sleep(0.1)


def upload(browser: Browser, sheet: Path) -> str:
    answer = browser.post("/upload", files={"sheet": (sheet.name, sheet.read_bytes())})
    assert answer.status_code == 303, answer.text
    return str(answer.headers["location"]).rsplit("/", 1)[1]


def reviewed_and_approved(maker: Browser, approver: Browser, url: str, batch: str) -> None:
    assert maker.post(f"/batches/{batch}/review", **maker.form(batch, "review")
                      ).status_code == 303
    wait_for(url, batch, "reviewed")
    answer = approver.post(f"/batches/{batch}/approve", **approver.form(batch, "approve"))
    assert answer.status_code == 303, answer.text
    assert stage(url, batch) == "approved"


@pytest.fixture
def team(postgres: Any, sandbox_factory: Any, tmp_path: Path) -> Iterator[tuple[Any, str,
                                                                              list[Host]]]:
    service = sandbox_factory(state_path=tmp_path / "sandbox.sqlite3", settle_seconds=0.1)
    url = postgres.journal_url()
    key = secrets.token_hex(32)
    envs = []
    for name in ("host-a", "host-b"):
        folder = host_folder(tmp_path, name, key)
        envs.append({**runner_env(service.url, url, key=service.api_key, folder=folder),
                     "PYTHONPATH": str(REPO)})
    for name, role in (("mia", "maker"), ("abe", "approver")):
        batchpay(envs[0], "users", "add", name, "--role", role, "--password-stdin",
                 stdin=PASSWORD + "\n")
    hosts: list[Host] = []
    try:
        for env, name in zip(envs, ("host-a", "host-b"), strict=True):
            hosts.append(start_host(env, tmp_path / name))
        yield service, url, hosts
    finally:
        for host in hosts:
            host.proc.terminate()
        for host in hosts:
            host.proc.wait(15)


@pytest.mark.slow
def test_a_batch_made_on_one_console_is_reviewed_approved_and_paid_on_the_other(
        team: tuple[Any, str, list[Host]], tmp_path: Path) -> None:
    service, url, (a, b) = team
    maker_a, maker_b = sign_in(a, "mia"), sign_in(b, "mia")
    approver_a = sign_in(a, "abe")
    sheet_rows = rows(6)
    batch = upload(maker_a, write_sheet(tmp_path / "november.xlsx", sheet_rows))
    assert "november" in maker_b.get(f"/batches/{batch}").text  # the other host has it
    reviewed_and_approved(maker_b, approver_a, url, batch)
    answer = maker_b.post(f"/batches/{batch}/pay", **maker_b.form(batch, "pay"))
    assert answer.status_code == 303, answer.text
    wait_for(url, batch, "paid")
    paid = Counter(p["accountNumber"] for p in sandbox_payouts(service.url))
    assert paid == Counter(r["account_number"] for r in sheet_rows), paid
    # the results workbook written on B is downloaded from A
    results = maker_a.get(f"/batches/{batch}/files/results")
    assert results.status_code == 200 and results.content[:2] == b"PK"


@pytest.mark.slow
def test_pay_pressed_on_both_consoles_at_once_pays_once(
        team: tuple[Any, str, list[Host]], tmp_path: Path) -> None:
    service, url, (a, b) = team
    maker_a, maker_b = sign_in(a, "mia"), sign_in(b, "mia")
    sheet_rows = rows(6, start=101)
    batch = upload(maker_a, write_sheet(tmp_path / "december.xlsx", sheet_rows))
    reviewed_and_approved(maker_a, sign_in(b, "abe"), url, batch)
    forms = [(maker, maker.form(batch, "pay")) for maker in (maker_a, maker_b)]
    start = threading.Barrier(2)
    answers: list[int] = []

    def press(maker: Browser, fields: dict[str, str]) -> None:
        start.wait()
        answers.append(maker.post(f"/batches/{batch}/pay", **fields).status_code)

    threads = [threading.Thread(target=press, args=pair) for pair in forms]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert sorted(answers) == [303, 409], answers
    wait_for(url, batch, "paid")
    paid = Counter(p["accountNumber"] for p in sandbox_payouts(service.url))
    assert paid == Counter(r["account_number"] for r in sheet_rows), paid


@pytest.mark.slow
def test_a_session_ended_on_one_console_is_refused_on_the_other(
        team: tuple[Any, str, list[Host]]) -> None:
    _service, url, (a, b) = team
    maker = sign_in(a, "mia")
    on_b = Browser(httpx.Client(base_url=b.url, timeout=30), maker.cookie, maker.csrf)
    assert on_b.get("/").status_code == 200 and "mia" in on_b.get("/").text  # valid on B
    session_id = maker.cookie.split("=", 1)[1]
    with psycopg.connect(url) as conn:  # the database keeps the id's SHA-256 only
        kept = [str(r[0]) for r in conn.execute("SELECT id_hash FROM console_sessions")]
    assert hashlib.sha256(session_id.encode()).hexdigest() in kept and session_id not in kept
    assert maker.post("/logout").status_code == 303  # signed out on A
    assert on_b.get("/").status_code == 303  # B sends it to sign in
    assert on_b.post("/upload", files={"sheet": ("x.csv", b"a")}).status_code == 403
    # a user removed on one host (`batchpay users remove` there) is signed out on the other
    approver = sign_in(b, "abe")
    assert approver.get("/").status_code == 200
    batchpay(a.env, "users", "remove", "abe")
    assert approver.get("/").status_code == 303


@pytest.mark.slow
def test_a_plan_signed_on_one_console_verifies_on_the_other_a_keyless_host_signs_nothing(
        team: tuple[Any, str, list[Host]], tmp_path: Path) -> None:
    service, url, (a, b) = team
    maker_a = sign_in(a, "mia")
    sheet_rows = rows(4, start=201)
    batch = upload(maker_a, write_sheet(tmp_path / "january.xlsx", sheet_rows))
    assert maker_a.post(f"/batches/{batch}/review", **maker_a.form(batch, "review")
                        ).status_code == 303
    wait_for(url, batch, "reviewed")  # the plan, signed on A with mia's key
    # a third console on a host that was never given the team's chain key
    keyless = tmp_path / "host-c"
    keyless.mkdir()
    c = start_host({**a.env, **private_user_folders(keyless)}, keyless)
    try:
        approver_c = sign_in(c, "abe")
        refused = approver_c.post(f"/batches/{batch}/approve",
                                  **approver_c.form(batch, "approve"))
        assert refused.status_code == 409, refused.text
        assert "holds no chain key" in refused.text and "Traceback" not in refused.text
        assert stage(url, batch) == "reviewed"  # nothing signed there
    finally:
        c.proc.terminate()
        c.proc.wait(15)
    assert not list(keyless.rglob("chain.key"))  # nor a key of its own made
    approver_b = sign_in(b, "abe")  # approved on B, with abe's key opened there
    answer = approver_b.post(f"/batches/{batch}/approve", **approver_b.form(batch, "approve"))
    assert answer.status_code == 303, answer.text
    # paid on A: `run --plan` there verifies the signatures made on A and on B
    assert maker_a.post(f"/batches/{batch}/pay", **maker_a.form(batch, "pay")
                        ).status_code == 303
    wait_for(url, batch, "paid")
    paid = Counter(p["accountNumber"] for p in sandbox_payouts(service.url))
    assert paid == Counter(r["account_number"] for r in sheet_rows), paid
    with psycopg.connect(url) as conn:  # and the database holds no key anyone can use
        keys = dict(conn.execute("SELECT name, private FROM console_keys").fetchall())
    assert sorted(keys) == ["abe", "mia"]
    assert all(k.startswith("v1:") and "PRIVATE KEY" not in k for k in keys.values()), keys
