"""A webhook that says FAILED or REFUNDED frees a row for `rerun` to pay again, and a signature
only proves that the sender holds the secret (leaked, shared, or not checked at all with
--insecure-no-signature). Such an event is applied only as the service's own record of the
payout (`GET /v1/transaction/{id}`) confirms it; otherwise it is kept in the journal as a
chained `webhook.claim` and changes no status. Tried over real HTTP: a sandbox, `batchpay
listen` as its own process, and the payouts counted at the sandbox."""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from batchpay.journal.store import Journal
from batchpay.sandbox.server import RunningSandbox
from batchpay.webhooks import sign
from tests.support.e2e import TLS, Outcome, batchpay, by_ref, sandbox_payouts, sandbox_stats
from tests.support.processes import listener_process
from tests.support.sheets import rows, write_sheet

LEAKED = "whsec-leaked-to-the-attacker-51c2"


@pytest.fixture
def journal(tmp_path: Path) -> Path:
    return tmp_path / "journal" / "journal.sqlite3"


@pytest.fixture
def start(cli_sandbox: Callable[..., RunningSandbox], journal: Path) -> Callable[..., Any]:
    """A sandbox the CLI points at (environment), the journal under tmp_path."""
    return lambda **options: cli_sandbox(journal=journal, **options)


def listener_env(secret: str | None) -> dict[str, str]:
    """The environment `batchpay listen` runs in: the test's (the sandbox, its key, the
    journal, user folders per test) with the webhook secret, or none."""
    env = {k: v for k, v in os.environ.items() if k != "BATCHPAY_WEBHOOK_SECRET"}
    env.update(NO_COLOR="1", COLUMNS="200")
    if secret is not None:
        env["BATCHPAY_WEBHOOK_SECRET"] = secret
    return env


def service_record(service: RunningSandbox, payout_id: str) -> dict[str, Any]:
    answer = httpx.get(f"{service.url}/v1/transaction/{payout_id}", verify=TLS, timeout=10,
                       headers={"X-API-KEY": service.api_key})
    answer.raise_for_status()
    record: dict[str, Any] = answer.json()["data"]
    return record


def wait_for(what: Callable[[], bool], seconds: float = 20) -> None:
    deadline = time.monotonic() + seconds
    while not what():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def statuses(journal: Path) -> dict[str, str]:
    with Journal(journal) as j:
        return {ref: str(e.status) for ref, e in j.entries().items()}


def pay(*args: str) -> Outcome:
    return batchpay(*args)


@pytest.mark.parametrize("signed", [True, False], ids=["leaked secret", "no signature"])
def test_a_forged_failure_of_a_completed_payout_frees_nothing(
        start: Callable[..., RunningSandbox], journal: Path, tmp_path: Path,
        signed: bool) -> None:
    service = start(settle_seconds=2.0)
    sheet = write_sheet(tmp_path / "nov.xlsx", rows(3))
    out = tmp_path / "nov-results.xlsx"
    first = pay("run", str(sheet), "--wait", "0", "--out", str(out))
    assert first.exit_code == 0, first
    # the journal still says PENDING; at the service every payout is COMPLETED by now
    assert set(statuses(journal).values()) <= {"PENDING", "PROCESSING"}, statuses(journal)
    wait_for(lambda: {p["state"] for p in sandbox_payouts(service.url)} == {"COMPLETED"})
    paid = len(sandbox_payouts(service.url))
    assert paid == 3
    with Journal(journal) as j:
        payouts = {ref: e.payout_id for ref, e in j.entries().items()}

    options = () if signed else ("--insecure-no-signature",)
    answers = []
    with listener_process(*options, env=listener_env(LEAKED if signed else None),
                          cwd=tmp_path) as url:
        for payout_id in payouts.values():
            record = service_record(service, payout_id) | {"state": "FAILED"}
            body = json.dumps({"event": "payout.failed", "data": record}).encode()
            answer = httpx.post(url, content=body, verify=TLS, timeout=20, headers={
                "Content-Type": "application/json", **(sign(body, LEAKED) if signed else {})})
            assert answer.status_code == 200, answer.text
            answers.append(answer.json()["message"])

    # the operator reruns the results; a row a failure freed is held as "previously failed",
    # and the operator confirms it as its message says (the details are right: an honest
    # step), then reruns again. Not one payout more, either time.
    for attempt in ("again", "after-confirm"):
        again = pay("rerun", str(out), "--wait", "0", "--out", str(tmp_path / f"{attempt}.xlsx"))
        assert len(sandbox_payouts(service.url)) == paid, again
        for cells in by_ref(tmp_path / f"{attempt}.xlsx").values():
            told = re.search(r"`batchpay payees confirm (\S+) --account-last4 (\d+)`",
                             str(cells["error"] or ""))
            if told:
                batchpay("payees", "confirm", told[1], "--account-last4", told[2])
    assert again.exit_code == 0, again
    assert {r["status"] for r in by_ref(tmp_path / "after-confirm.xlsx").values()} == {
        "COMPLETED"}
    # nothing was freed: each row took the state the service itself shows, and the claims
    # are kept in the journal's hash chain
    assert answers == ["claim"] * 3
    assert set(statuses(journal).values()) == {"COMPLETED"}
    with Journal(journal) as j:
        claims = j.events_of("webhook.claim")
        assert j.verify().ok
    assert sorted(c["payout_id"] for c in claims) == sorted(payouts.values())
    assert {(c["claimed_state"], c["service_state"]) for c in claims} == {("FAILED", "COMPLETED")}
    assert batchpay("verify", "--journal", str(journal)).exit_code == 0


def test_a_genuine_failure_then_refund_from_the_sandbox_is_applied(
        start: Callable[..., RunningSandbox], journal: Path, tmp_path: Path) -> None:
    service = start(settle_seconds=0.5)
    sheet_rows = rows(2)
    sheet_rows[1]["remark"] = "fail"  # the sandbox fails it at the bank, then refunds it
    sheet = write_sheet(tmp_path / "nov.xlsx", sheet_rows)
    journal.parent.mkdir()
    Journal(journal).close()  # the listener records into a journal that is there already
    with listener_process(env=listener_env(LEAKED), cwd=tmp_path) as url:
        service.state.set_webhook(url, LEAKED)
        first = pay("run", str(sheet), "--wait", "0", "--out", str(tmp_path / "nov-results.xlsx"))
        assert first.exit_code in (0, 1), first
        wait_for(lambda: statuses(journal) == {"T-00001": "COMPLETED", "T-00002": "REFUNDED"})
        service.state.set_webhook(None, None)
    with Journal(journal) as j:
        assert j.events_of("webhook.claim") == []
        told = [json.loads(e["data"])["status"] for e in j.db.execute(
            "SELECT data FROM events WHERE kind = 'payout.webhook' AND payout_ref = 'T-00002'")]
    assert "REFUNDED" in told  # by the webhook, confirmed: not by a poll of the run
    looked_up = {k: v for k, v in sandbox_stats(service.url)["requests"].items()
                 if k.startswith("GET /v1/transaction/{id}")}
    assert looked_up.get("GET /v1/transaction/{id} 200", 0) >= 1, looked_up


def test_listen_for_a_real_service_needs_the_key_it_confirms_with(
        tmp_path: Path, journal: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the key no failure could be confirmed: the listener refuses to start, before
    it listens anywhere, rather than run with every FAILED kept as a claim."""
    journal.parent.mkdir()
    Journal(journal).close()
    monkeypatch.setenv("BATCHPAY_BASE_URL", "https://pay.example.com")
    monkeypatch.delenv("BATCHPAY_API_KEY", raising=False)
    monkeypatch.setenv("BATCHPAY_WEBHOOK_SECRET", LEAKED)
    monkeypatch.chdir(tmp_path)
    outcome = batchpay("listen", "--port", "0", "--journal", str(journal))
    assert outcome.exit_code == 2, outcome
    assert "No API key for https://pay.example.com" in outcome.stderr
    assert "Listening" not in outcome.stderr and "Traceback" not in outcome.stderr
