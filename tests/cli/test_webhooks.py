"""The webhook receiver (`batchpay listen`, and the listener the embedded run starts).

Signed events move the journal forward; anything unsigned or forged gets 401 and changes
nothing (compared table by table, before and after). Events are trusted by `data.state`,
may arrive many times and in any order, and an event about a payout the journal does not
know by id resolves the row in doubt that sent its quote. A FAILED or REFUNDED is applied
only as the service's record of the payout confirms it (tests/security/test_webhook_claims.py
proves that against the sandbox; here the record is given as the service would send it).
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import itertools
import json
import os
import re
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest

from batchpay.engine import paying
from batchpay.engine.doubt import apply_event, service_lookup, to_confirm
from batchpay.engine.tracking import refresh
from batchpay.journal.store import Journal
from batchpay.provider.client import PayoutClient
from batchpay.provider.endpoints import Headers
from batchpay.provider.models import Payout
from batchpay.sandbox.webhooks_out import EVENT_NAMES
from batchpay.service import Service
from batchpay.serving import ServerThread
from batchpay.settings.load import load_settings
from batchpay.statuses import FINAL as FINAL_STATES
from batchpay.statuses import SENDING
from batchpay.webhooks import SignatureCheck, create_listener, sign
from tests.support.e2e import TLS, batchpay, results
from tests.support.sheets import rows, write_sheet

SECRET = "whsec-test-5f2a9c"
RUN = "run-1"


# --------------------------------------------------------------------------- helpers

def record_sent(j: Journal, ref: str, quote: str, payout_id: str, state: str = "PENDING") -> int:
    """A row whose payout request was answered: the ledger knows its payout id."""
    attempt = j.record_intent(ref, RUN, "{}", {"id": quote}, {"quoteId": quote}, expires_at=9e9)
    j.record_answer(attempt, "accepted", status=state, run_id=RUN, payout_id=payout_id,
                    reference_number=f"REF{ref}")
    return attempt


def record_in_doubt(j: Journal, ref: str, quote: str, status: str = SENDING) -> int:
    """A row whose payout request may have reached the service: quote known, no payout id."""
    attempt = j.record_intent(ref, RUN, "{}", {"id": quote}, {"quoteId": quote}, expires_at=9e9)
    if status != SENDING:
        j.set_status(ref, status, run_id=RUN, error="no answer")
    return attempt


def event(state: str, payout_id: str, quote: str, name: str | None = None) -> dict[str, Any]:
    return {"event": name or EVENT_NAMES[state], "data": {
        "id": payout_id, "referenceNumber": "ABCDEFGHJK123", "state": state, "type": "SEND",
        "reason": "Invoice", "remark": None, "quote": {"id": quote, "rate": 230},
        "recipient": {"name": "张三"}, "created": "2025-11-20T08:00:00Z",
        "processed": "2025-11-20T08:00:01Z"}}


def service_says(payload: dict[str, Any]) -> Payout:
    """The service's record of the event's payout, in the state the event names."""
    return Payout.from_json(payload["data"])


def raw(payload: Any) -> bytes:
    return json.dumps(payload, ensure_ascii=False).encode()


def snapshot(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every table that a webhook could change, row by row."""
    db = sqlite3.connect(path)
    try:
        return {table: [tuple(r) for r in db.execute(f"SELECT * FROM {table} ORDER BY 1")]
                for table in ("events", "payouts", "attempts", "meta")}
    finally:
        db.close()


def webhook_events(j: Journal, ref: str | None = None) -> list[sqlite3.Row]:
    query = "SELECT * FROM events WHERE kind = 'payout.webhook'"
    args: tuple[str, ...] = ()
    if ref is not None:
        query, args = query + " AND payout_ref = ?", (ref,)
    return list(j.db.execute(query + " ORDER BY seq", args))


@pytest.fixture
def journal_path(tmp_path: Path) -> Path:
    return tmp_path / "journal" / "journal.sqlite3"


@pytest.fixture
def journal(journal_path: Path) -> Iterator[Journal]:
    j = Journal(journal_path)
    yield j
    j.close()


Listen = Callable[..., str]


@pytest.fixture
def listen(journal_path: Path, journal: Journal) -> Iterator[Listen]:
    """Serve the listener for real (uvicorn in a thread) over the test's journal."""
    servers: list[ServerThread] = []

    def start(secret: str | None = SECRET, **check: Any) -> str:
        app = create_listener(journal_path, SignatureCheck(secret, **check))
        server = ServerThread(app, what="webhook listener").start()
        servers.append(server)
        return server.url + "/webhook"

    yield start
    for server in servers:
        server.stop()


def post(url: str, body: bytes, headers: dict[str, str]) -> httpx.Response:
    return httpx.post(url, content=body, headers={"Content-Type": "application/json", **headers}, verify=TLS,
                      timeout=10)


# --------------------------------------------------------------------------- signatures

def test_sha512_signature_is_accepted_and_moves_the_row(listen: Listen, journal: Journal) -> None:
    record_sent(journal, "R1", "q1", "p1")
    url = listen()
    body = raw(event("PROCESSING", "p1", "q1"))
    answer = post(url, body, {"X-Signature": sign(body, SECRET)["X-Signature"]})
    assert answer.status_code == 200, answer.text
    assert journal.entry("R1").status == "PROCESSING"  # type: ignore[union-attr]


def test_sha256_header_alone_is_accepted(listen: Listen, journal: Journal) -> None:
    record_sent(journal, "R1", "q1", "p1")
    url = listen()
    body = raw(event("COMPLETED", "p1", "q1"))
    header = sign(body, SECRET)["X-meCash-Signature"]
    assert header.startswith("sha256=")
    answer = post(url, body, {"X-meCash-Signature": header})
    assert answer.status_code == 200, answer.text
    assert journal.entry("R1").status == "COMPLETED"  # type: ignore[union-attr]


def _tampered(body: bytes) -> tuple[bytes, dict[str, Any]]:
    return body.replace(b"COMPLETED", b"REFUNDED"), sign(body, SECRET)


FORGERIES: dict[str, Callable[[bytes], tuple[bytes, dict[str, Any]]]] = {
    "tampered body": _tampered,
    "wrong secret": lambda body: (body, sign(body, "not-the-secret")),
    "missing header": lambda body: (body, {}),
    "empty header": lambda body: (body, {"X-Signature": "", "X-meCash-Signature": ""}),
    "digest of another body": lambda body: (body, sign(body + b" ", SECRET)),
    "not hex, not even ASCII": lambda body: (body, {"X-Signature": b"\xe9" * 128}),
    "sha256 digest in the sha512 header": lambda body: (
        body, {"X-Signature": sign(body, SECRET)["X-meCash-Signature"][7:]}),
}


@pytest.mark.parametrize("forgery", list(FORGERIES))
def test_forged_or_unsigned_events_get_401_and_change_nothing(
        forgery: str, listen: Listen, journal: Journal, journal_path: Path) -> None:
    record_sent(journal, "R1", "q1", "p1")
    url = listen()
    before = snapshot(journal_path)
    body, headers = FORGERIES[forgery](raw(event("COMPLETED", "p1", "q1")))
    answer = httpx.post(url, content=body, headers=headers, timeout=10, verify=TLS)
    assert answer.status_code == 401, (forgery, answer.status_code, answer.text)
    assert snapshot(journal_path) == before


def test_an_algorithm_not_allowed_is_refused(listen: Listen, journal: Journal,
                                             journal_path: Path) -> None:
    record_sent(journal, "R1", "q1", "p1")
    url = listen(algorithms=("sha512",))
    before = snapshot(journal_path)
    body = raw(event("COMPLETED", "p1", "q1"))
    only_sha256 = {"X-meCash-Signature": sign(body, SECRET)["X-meCash-Signature"]}
    assert post(url, body, only_sha256).status_code == 401
    assert snapshot(journal_path) == before
    # the allowed one still works
    assert post(url, body, {"X-Signature": sign(body, SECRET)["X-Signature"]}).status_code == 200
    assert journal.entry("R1").status == "COMPLETED"  # type: ignore[union-attr]


def test_header_names_and_algorithms_are_settings(tmp_path: Path) -> None:
    toml = tmp_path / "batchpay.toml"
    toml.write_text('signature_algorithms = ["sha256"]\n'
                    '[headers]\nsignature_sha256 = "X-Hook-Signature"\n', encoding="utf-8")
    settings = load_settings(env={"BATCHPAY_WEBHOOK_SECRET": SECRET}, files=[toml])
    assert settings.webhook_secret == SECRET
    check = SignatureCheck(settings.webhook_secret, settings.headers,
                           settings.signature_algorithms)
    body = raw(event("COMPLETED", "p1", "q1"))
    good = sign(body, SECRET)
    assert check.verify(body, {"X-Hook-Signature": good["X-meCash-Signature"]})
    # the default names are not looked at any more, and sha512 is not accepted
    assert not check.verify(body, {"X-meCash-Signature": good["X-meCash-Signature"]})
    assert not check.verify(body, {"X-Signature": good["X-Signature"]})
    assert not check.verify(body, {"X-Hook-Signature": sign(body, "other")["X-meCash-Signature"]})


def test_signatures_are_compared_in_constant_time(monkeypatch: pytest.MonkeyPatch) -> None:
    import batchpay.webhooks as webhooks

    compared: list[tuple[Any, Any]] = []
    real = hmac.compare_digest

    def spy(a: Any, b: Any) -> bool:
        compared.append((a, b))
        return real(a, b)

    monkeypatch.setattr(webhooks.hmac, "compare_digest", spy)
    body = raw(event("COMPLETED", "p1", "q1"))
    check = SignatureCheck(SECRET, Headers(), ("sha512",))
    assert check.verify(body, {"X-Signature": sign(body, SECRET)["X-Signature"]})
    assert not check.verify(body, {"X-Signature": "0" * 128})
    assert len(compared) == 2
    expected = hmac.new(SECRET.encode(), body, hashlib.sha512).hexdigest()
    assert expected.encode() in {c if isinstance(c, bytes) else c.encode()
                                 for pair in compared for c in pair}


def test_answers_2xx_within_a_second(listen: Listen, journal: Journal) -> None:
    for n in range(20):
        record_sent(journal, f"R{n}", f"q{n}", f"p{n}")
    url = listen()
    slowest = 0.0
    for n in range(20):
        for state in ("PROCESSING", "COMPLETED"):
            body = raw(event(state, f"p{n}", f"q{n}"))
            started = time.perf_counter()
            answer = post(url, body, sign(body, SECRET))
            slowest = max(slowest, time.perf_counter() - started)
            assert 200 <= answer.status_code < 300
    assert slowest < 1.0, slowest
    assert {e.status for e in journal.entries().values()} == {"COMPLETED"}


# --------------------------------------------------------------------------- what an event does

@pytest.mark.parametrize(("name", "state", "start"), [
    ("payout.pending", "PROCESSING", "PENDING"),
    ("payout.completed", "PROCESSING", "PENDING"),
    ("payout.pending", "COMPLETED", "PENDING"),  # the name is wrong, the state is right
])
def test_the_state_in_data_is_trusted_not_the_event_name(
        name: str, state: str, start: str, listen: Listen, journal: Journal) -> None:
    record_sent(journal, "R1", "q1", "p1", state=start)
    url = listen()
    body = raw(event(state, "p1", "q1", name=name))
    assert post(url, body, sign(body, SECRET)).status_code == 200
    assert journal.entry("R1").status == state  # type: ignore[union-attr]


@pytest.mark.parametrize(("name", "state", "start"), [
    ("payout.failed", "REFUNDED", "PROCESSING"),
    ("payout.failed", "REFUNDED", "FAILED"),
    ("payout.pending", "FAILED", "PENDING"),
])
def test_a_failure_is_applied_by_data_state_once_the_service_confirms_it(
        name: str, state: str, start: str, journal: Journal) -> None:
    record_sent(journal, "R1", "q1", "p1", state=start)
    payload = event(state, "p1", "q1", name=name)
    assert apply_event(journal, payload) == "claim"  # not confirmed: kept as a claim
    assert journal.entry("R1").status == start  # type: ignore[union-attr]
    assert apply_event(journal, payload, service_says(payload)) == "applied"
    assert journal.entry("R1").status == state  # type: ignore[union-attr]


def test_refunded_is_final_only_once_the_service_says_so(journal: Journal) -> None:
    """A REFUNDED claim while the service still shows the payout FAILED moves it to FAILED
    (what the service confirms), keeps the claim, and leaves REFUNDED for the service's word."""
    record_sent(journal, "R1", "q1", "p1", state="PROCESSING")
    payload = event("REFUNDED", "p1", "q1")
    assert apply_event(journal, payload, service_says(event("FAILED", "p1", "q1"))) == "claim"
    assert journal.entry("R1").status == "FAILED"  # type: ignore[union-attr]
    claims = journal.events_of("webhook.claim")
    assert [(c["claimed_state"], c["service_state"]) for c in claims] == [("REFUNDED", "FAILED")]
    assert apply_event(journal, payload, service_says(payload)) == "applied"
    assert journal.entry("R1").status == "REFUNDED"  # type: ignore[union-attr]
    assert journal.verify().ok


@pytest.mark.parametrize("record", ["another payout", "another quote", "none"])
def test_a_failure_the_service_record_does_not_back_is_a_claim(
        record: str, journal: Journal) -> None:
    """The record must be the row's own payout: its id, made with the row's quote. A row in
    doubt matched by its quote is not freed by an event naming a payout of another quote."""
    record_in_doubt(journal, "R1", "q1", "UNKNOWN")
    payload = event("FAILED", "p-forged", "q1")
    records = {"another payout": service_says(event("FAILED", "p-other", "q1")),
               "another quote": service_says(event("FAILED", "p-forged", "q-other")),
               "none": None}
    assert apply_event(journal, payload, records[record]) == "claim"
    entry = journal.entry("R1")
    assert entry is not None and (entry.status, entry.payout_id) == ("UNKNOWN", "")
    assert len(journal.events_of("webhook.claim")) == 1


def test_only_a_failure_that_would_move_a_row_is_looked_up(journal: Journal) -> None:
    """A lookup costs a request of the key's budget: duplicates, late events, other states
    and unknown payouts cost none."""
    record_sent(journal, "R1", "q1", "p1", state="COMPLETED")
    record_sent(journal, "R2", "q2", "p2", state="PENDING")
    assert to_confirm(journal, event("FAILED", "p1", "q1")) is None  # COMPLETED stays
    assert to_confirm(journal, event("COMPLETED", "p2", "q2")) is None
    assert to_confirm(journal, event("FAILED", "p-x", "q-x")) is None
    assert to_confirm(journal, event("FAILED", "p2", "q-other")) is None
    assert to_confirm(journal, {"hello": "world"}) is None
    assert to_confirm(journal, event("FAILED", "p2", "q2")) == "p2"


def test_ten_deliveries_of_one_event_make_one_transition(listen: Listen,
                                                         journal: Journal) -> None:
    record_sent(journal, "R1", "q1", "p1")
    url = listen()
    body = raw(event("COMPLETED", "p1", "q1"))
    answers = [post(url, body, sign(body, SECRET)).status_code for _ in range(10)]
    assert answers == [200] * 10
    changes = webhook_events(journal, "R1")
    assert len(changes) == 1
    assert json.loads(changes[0]["data"])["status"] == "COMPLETED"


PATHS = {
    "completed": ("PENDING", "PROCESSING", "COMPLETED"),
    "failed then refunded": ("PENDING", "PROCESSING", "FAILED", "REFUNDED"),
}


@pytest.mark.parametrize("path", list(PATHS))
@pytest.mark.parametrize("start", ["answered", "in doubt", "unknown"])
def test_every_order_of_a_payouts_events_ends_in_the_same_state(path: str, start: str) -> None:
    states = PATHS[path]
    for order in itertools.permutations(states):
        with Journal(":memory:") as j:
            if start == "answered":
                record_sent(j, "R1", "q1", "p1")
            else:
                record_in_doubt(j, "R1", "q1", SENDING if start == "in doubt" else "UNKNOWN")
            for state in order:  # the service confirms each failure as it is told
                payload = event(state, "p1", "q1")
                apply_event(j, payload, service_says(payload))
            # and every event again, in the same order: duplicates change nothing
            changes = len(webhook_events(j))
            for state in order:
                payload = event(state, "p1", "q1")
                assert apply_event(j, payload, service_says(payload)) == "unchanged"
            entry = j.entry("R1")
            assert entry is not None
            assert (entry.status, entry.payout_id) == (states[-1], "p1"), order
            assert len(webhook_events(j)) == changes


@pytest.mark.parametrize("doubt", [SENDING, "UNKNOWN"])
def test_an_unknown_payout_id_resolves_the_row_in_doubt_by_its_quote(
        doubt: str, listen: Listen, journal: Journal) -> None:
    attempt = record_in_doubt(journal, "R1", "q-lost", doubt)
    record_sent(journal, "R2", "q2", "p2")
    url = listen()
    body = raw(event("PROCESSING", "p-new", "q-lost"))
    answer = post(url, body, sign(body, SECRET))
    assert answer.status_code == 200
    entry = journal.entry("R1")
    assert entry is not None
    assert (entry.status, entry.payout_id, entry.reference_number, entry.error) == (
        "PROCESSING", "p-new", "ABCDEFGHJK123", "")
    assert journal.attempt(attempt).outcome == "found"
    assert journal.entry("R2").status == "PENDING"  # type: ignore[union-attr]


def _resent_after_failure(j: Journal) -> None:
    record_sent(j, "R1", "q-old", "p-old", state="FAILED")
    j.record_intent("R1", RUN, "{}", {"id": "q-new"}, {"quoteId": "q-new"}, expires_at=9e9)


UNMATCHED: dict[str, tuple[Callable[[Journal], Any], dict[str, Any]]] = {
    "unknown payout and quote": (
        lambda j: record_sent(j, "R1", "q1", "p1"), event("COMPLETED", "p-x", "q-x")),
    "quote of a row not in doubt": (
        lambda j: record_sent(j, "R1", "q1", "p1"), event("COMPLETED", "p-x", "q1")),
    "quote of a row never sent": (
        lambda j: j.record_answer(record_in_doubt(j, "R1", "q1"), "not_sent",
                                  status="NOT_SENT", error="not sent"),
        event("COMPLETED", "p-x", "q1")),
    "late event of an earlier payout of a ref paid again": (
        _resent_after_failure, event("REFUNDED", "p-old", "q-old")),
    "no state": (lambda j: record_sent(j, "R1", "q1", "p1"),
                 {"event": "payout.completed", "data": {"id": "p1"}}),
    "not a payout": (lambda j: record_sent(j, "R1", "q1", "p1"), {"hello": "world"}),
    "a state the service does not have": (
        lambda j: record_sent(j, "R1", "q1", "p1"), event("PENDING", "p1", "q1") | {
            "data": event("PENDING", "p1", "q1")["data"] | {"state": "CANCELLED"}}),
}


@pytest.mark.parametrize("case", list(UNMATCHED))
def test_other_events_are_acknowledged_and_change_nothing(
        case: str, listen: Listen, journal: Journal, journal_path: Path) -> None:
    prepare, payload = UNMATCHED[case]
    prepare(journal)
    url = listen()
    before = snapshot(journal_path)
    body = raw(payload)
    answer = post(url, body, sign(body, SECRET))
    assert 200 <= answer.status_code < 300, answer.text
    assert snapshot(journal_path) == before


def test_a_webhook_that_outruns_the_payouts_own_answer_is_not_undone(journal: Journal) -> None:
    """The PENDING answer of a payout request can be recorded after a webhook already told a
    later state (the sandbox announces at once; the answer travels back meanwhile)."""
    attempt = record_in_doubt(journal, "R1", "q1")
    assert apply_event(journal, event("COMPLETED", "p1", "q1")) == "applied"
    journal.record_answer(attempt, "accepted", status="PENDING", run_id=RUN, payout_id="p1",
                          reference_number="ABCDEFGHJK123")
    assert journal.entry("R1").status == "COMPLETED"  # type: ignore[union-attr]


# --------------------------------------------------------------------------- `batchpay listen`

def test_listen_refuses_to_start_without_a_secret(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("BATCHPAY_WEBHOOK_SECRET", raising=False)
    monkeypatch.delenv("BATCHPAY_JOURNAL", raising=False)
    result = batchpay("listen", "--port", "0")
    assert result.exit_code == 2, result
    assert "secret" in result.stderr.lower()
    assert "BATCHPAY_WEBHOOK_SECRET" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / ".batchpay").exists()  # nothing was opened or created


def _start_listen(tmp_path: Path, *args: str, secret: str | None) -> tuple[Any, str, str]:
    """`batchpay listen --port 0` as a process; returns it, its URL and what it said first."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BATCHPAY_")}
    env.update(NO_COLOR="1", COLUMNS="200")
    if secret is not None:
        env["BATCHPAY_WEBHOOK_SECRET"] = secret
    proc = subprocess.Popen(
        [sys.executable, "-m", "batchpay", "listen", "--port", "0", "--journal",
         str(tmp_path / "journal.sqlite3"), *args],
        env=env, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    said = ""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line and proc.poll() is not None:
            break
        said += line
        match = re.search(r"(http://127\.0\.0\.1:(\d+)/webhook)", said)
        if match and match.group(2) != "0":
            url = match.group(1)
            for _ in range(200):
                try:
                    httpx.get(url.replace("/webhook", "/health"), timeout=1, verify=TLS)
                    return proc, url, said
                except httpx.HTTPError:
                    time.sleep(0.05)
    proc.kill()
    raise AssertionError(f"listen did not start: {said}")


def _stop(proc: Any) -> None:
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)


def test_listen_checks_the_secret_from_the_environment(tmp_path: Path) -> None:
    with Journal(tmp_path / "journal.sqlite3") as j:
        record_sent(j, "R1", "q1", "p1")
    proc, url, said = _start_listen(tmp_path, secret=SECRET)
    try:
        assert "INSECURE" not in said
        body = raw(event("COMPLETED", "p1", "q1"))
        assert post(url, body, sign(body, "guess")).status_code == 401
        assert post(url, body, {}).status_code == 401
        assert post(url, body, sign(body, SECRET)).status_code == 200
    finally:
        _stop(proc)
    with Journal(tmp_path / "journal.sqlite3") as j:
        assert j.entry("R1").status == "COMPLETED"  # type: ignore[union-attr]
        assert len(webhook_events(j)) == 1


def test_listen_insecure_says_so_loudly_and_accepts_unsigned_events(tmp_path: Path) -> None:
    with Journal(tmp_path / "journal.sqlite3") as j:
        record_sent(j, "R1", "q1", "p1")
    proc, url, said = _start_listen(tmp_path, "--insecure-no-signature", secret=None)
    try:
        assert "INSECURE" in said and "NOT checked" in said
        body = raw(event("PROCESSING", "p1", "q1"))
        assert post(url, body, {}).status_code == 200
    finally:
        _stop(proc)
    with Journal(tmp_path / "journal.sqlite3") as j:
        assert j.entry("R1").status == "PROCESSING"  # type: ignore[union-attr]


# --------------------------------------------------------------------------- end to end

def test_embedded_run_reaches_final_statuses_through_webhooks(
        tmp_path: Path, data_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("BATCHPAY_BASE_URL", "BATCHPAY_API_KEY", "BATCHPAY_JOURNAL",
                "BATCHPAY_WEBHOOK_SECRET"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(tmp_path)
    # watch the list polling of the run: which rows each poll asks about that the journal
    # already holds as final (a webhook told it): those cost list requests for nothing
    polls: list[set[str]] = []
    real_refresh = paying.refresh

    async def watched(client: Any, journal: Journal, entries: list[Any], **kw: Any) -> Any:
        now = journal.entries(e.payout_ref for e in entries)
        polls.append({ref for ref, e in now.items() if e.status in FINAL_STATES})
        return await real_refresh(client, journal, entries, **kw)

    monkeypatch.setattr(paying, "refresh", watched)
    sheet = write_sheet(tmp_path / "nov.xlsx", rows(4))
    out = tmp_path / "out.xlsx"
    result = batchpay("run", str(sheet), "--out", str(out), "--wait", "20")
    assert result.exit_code == 0, result
    assert {r["status"] for r in results(out)} == {"COMPLETED"}
    with Journal(data_home / "batchpay" / "journals" / "embedded" / "journal.sqlite3") as j:
        finals = {}
        for e in j.db.execute("SELECT * FROM events WHERE kind LIKE 'payout.%' ORDER BY seq"):
            if json.loads(e["data"]).get("status") == "COMPLETED":
                finals[e["payout_ref"]] = e["kind"]
        assert len(webhook_events(j)) > 0
    assert set(finals) == {f"T-{n:05d}" for n in range(1, 5)}
    # the settle time is 2 s: the webhooks tell it before the list is polled a third time
    assert "payout.webhook" in finals.values(), finals
    # later, with every row final, `sync` has nothing left to ask the service
    synced = batchpay("sync")
    assert synced.exit_code == 0, synced
    assert re.search(r"Tracked 0 row\(s\)\s+with\s+0\s+request\(s\)", synced.stderr), synced
    # and a row a webhook made final costs no more list requests in the run
    assert polls, "the run never polled: the test proves nothing about polling"
    assert [final for final in polls if final] == [], "rows final by webhook were polled"


def _payout_body(quote_id: str, n: int, remark: str | None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "quoteId": quote_id, "reason": f"Invoice {n}",
        "recipient": {
            "name": f"张{n}", "type": "INDIVIDUAL", "paymentChannel": "BANK_TRANSFER",
            "currency": "CNY", "country": "CN",
            "account": {"accountNumber": f"6222{n:015d}", "bankName": "中国银行",
                        "bankCity": "深圳"}}}
    if remark:
        body["remark"] = remark
    return body


def test_polling_only_and_webhooks_only_reach_identical_statuses(
        sandbox_factory: Any, tmp_path: Path) -> None:
    """One sandbox history, two journals: one learns only from the (recorded, then
    replayed) webhooks the sandbox sent, the other only from the list endpoint."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    deliveries: list[tuple[bytes, dict[str, str]]] = []

    async def record(request: Request) -> Response:
        deliveries.append((await request.body(), {
            k: request.headers[k] for k in ("X-Signature", "X-meCash-Signature")}))
        return Response(status_code=204)

    recorder = ServerThread(Starlette(routes=[Route("/hook", record, methods=["POST"])]),
                            what="recorder").start()
    try:
        service = sandbox_factory(settle_seconds=0.3, webhook_url=recorder.url + "/hook",
                                  webhook_secret=SECRET)
        by_hooks_path = tmp_path / "hooks.sqlite3"
        by_polls_path = tmp_path / "polls.sqlite3"
        remarks = [None, "fail", None, None, "fail", None]
        lost = {2, 4}  # their answers never reach the journal: both must find them by quote
        asyncio.run(_make_payouts(service, [by_hooks_path, by_polls_path], remarks, lost))
        expected_events = sum(4 if r == "fail" else 3 for r in remarks)
        deadline = time.monotonic() + 15
        while len(deliveries) < expected_events and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(deliveries) == expected_events
    finally:
        recorder.stop()

    # every FAILED and REFUNDED replayed is confirmed with the sandbox, still running
    lookup = service_lookup(load_settings(env={}, files=[]),
                            Service(service.url, service.api_key, embedded=False))
    listener = ServerThread(create_listener(by_hooks_path, SignatureCheck(SECRET), lookup),
                            what="webhook listener").start()
    try:
        for body, headers in reversed(deliveries):  # the worst order: newest first
            assert post(listener.url + "/webhook", body, headers).status_code == 200
    finally:
        listener.stop()

    asyncio.run(_poll_until_final(service, by_polls_path))
    outcomes = []
    for path in (by_hooks_path, by_polls_path):
        with Journal(path) as j:
            outcomes.append({ref: (e.status, e.payout_id, e.reference_number)
                             for ref, e in j.entries().items()})
            kinds = {r[0] for r in j.db.execute("SELECT DISTINCT kind FROM events")}
            assert ("payout.webhook" in kinds) == (path == by_hooks_path)
    assert outcomes[0] == outcomes[1]
    assert [outcomes[0][f"R{n}"][0] for n in range(len(remarks))] == [
        "REFUNDED" if r == "fail" else "COMPLETED" for r in remarks]
    assert all(payout_id for _, payout_id, _ in outcomes[0].values())


async def _make_payouts(service: Any, journals: list[Path], remarks: list[str | None],
                        lost: set[int]) -> None:
    opened = [Journal(p) for p in journals]
    try:
        async with PayoutClient(service.url, service.api_key) as client:
            for n, remark in enumerate(remarks):
                quote = await client.create_quote(
                    source_amount=Decimal(100000 + n), source_currency="NGN",
                    source_country="NG", target_currency="CNY", target_country="CN",
                    payment_channel="BANK_TRANSFER")
                body = _payout_body(quote.id, n, remark)
                attempts = [j.record_intent(f"R{n}", RUN, "{}", quote.raw, body, expires_at=9e9)
                            for j in opened]
                payout = await client.submit_payout(body)
                if n in lost:
                    continue
                for j, attempt in zip(opened, attempts, strict=True):
                    j.record_answer(attempt, "accepted", status=payout.state, run_id=RUN,
                                    payout_id=payout.id,
                                    reference_number=payout.reference_number or "")
    finally:
        for j in opened:
            j.close()


async def _poll_until_final(service: Any, path: Path) -> None:
    with Journal(path) as j:
        async with PayoutClient(service.url, service.api_key) as client:
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline:
                open_ = [e for e in j.entries().values() if e.status not in FINAL_STATES
                         or e.status == "FAILED"]
                if not open_:
                    return
                await refresh(client, j, open_, max_pages=10)
                await asyncio.sleep(0.1)
    raise AssertionError("the list never showed every payout final")
