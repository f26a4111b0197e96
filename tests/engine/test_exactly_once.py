"""Exactly once under crashes and faults, proven at the sandbox over real HTTP.

The runner is killed with SIGKILL at random moments while it pays (the sandbox runs as
its own process and keeps its state), then run again to completion: every valid row must
have exactly one payout at the sandbox and appear exactly once in the results.
"""

from __future__ import annotations

import os
import random
import time
from collections import Counter
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.e2e import batchpay, results, sandbox_payouts
from tests.support.postgres import BOTH_STORES
from tests.support.processes import (
    journaled_attempts,
    kill_when,
    runner_env,
    sandbox_process,
    start_runner,
)
from tests.support.sheets import HEADERS, rows, write_sheet

CRASH_TRIALS = int(os.environ.get("BATCHPAY_CRASH_TRIALS", "20"))


def _assert_exactly_once(url: str, sheet_rows: list[dict[str, Any]], out: Path) -> None:
    payouts = sandbox_payouts(url)
    paid = Counter(p["accountNumber"] for p in payouts)
    expected = Counter(r["account_number"] for r in sheet_rows)
    assert paid == expected, f"duplicates or gaps: {paid - expected} / {expected - paid}"
    got = Counter(str(r["payout_ref"]) for r in results(out))
    assert got == Counter(r["payout_ref"] for r in sheet_rows)
    invoices = {r["account_number"]: r["target_amount"] for r in sheet_rows
                if r.get("target_amount") is not None}
    for p in payouts:  # an invoice row is never paid short, crash or not
        if p["accountNumber"] in invoices:
            assert Decimal(str(p["targetAmount"])) >= invoices[p["accountNumber"]], p


def invoice_rows(count: int, start: int) -> list[dict[str, Any]]:
    """Rows that give what the recipient must receive (CNY), not the source amount."""
    return [dict(r, amount=None, target_amount=Decimal(400 + 37 * n) + Decimal("0.37"))
            for n, r in enumerate(rows(count, start=start))]


@pytest.mark.slow
@BOTH_STORES
@pytest.mark.parametrize("kind", ["amount", "invoice"])
def test_sigkill_at_random_moments_never_pays_twice(tmp_path: Path, kind: str, store: str,
                                                    request: pytest.FixtureRequest,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(20261121)
    count = 12
    # invoice rows against a sandbox that rounds down and moves its rates
    options = ("--rounding", "down", "--rate-drift", "0.002") if kind == "invoice" else ()
    trials = CRASH_TRIALS if kind == "amount" else max(10, CRASH_TRIALS // 2)
    if store == "postgresql":  # the same moments on the database's store: half as many
        trials = max(5, trials // 2)
    with sandbox_process("--latency-ms", "15", "--settle-seconds", "0.2", *options,
                         state=tmp_path / "sandbox.sqlite3") as url:
        landed = 0  # trials whose kill struck a live run after its intents were journaled
        for trial in range(trials):
            httpx.post(f"{url}/_sandbox/reset", timeout=10).raise_for_status()
            work = tmp_path / f"trial{trial}"
            work.mkdir()
            if kind == "invoice":
                sheet_rows = invoice_rows(count, trial * 100)
                sheet = write_sheet(work / "sheet.xlsx", sheet_rows, HEADERS + ["target_amount"])
            else:
                sheet_rows = rows(count, start=trial * 100)
                sheet = write_sheet(work / "sheet.xlsx", sheet_rows)
            journal: Path | str = work / "journal.sqlite3"
            if store == "postgresql":  # a new journal each trial, on the one server
                journal = request.getfixturevalue("postgres").journal_url()
            env = runner_env(url, journal, folder=work)
            proc = start_runner("run", str(sheet), "--wait", "0", "--concurrency", "4",
                                "--quiet", env=env, cwd=work)
            intents = rng.randint(1, count)
            if kill_when(proc, journal, intents, rng.uniform(0, 0.03)):
                assert journaled_attempts(journal) >= intents, (trial, "killed before its intents")
                landed += 1
            # run again to completion, from the journal the killed process left on disk (in
            # this process: only the killed run needs to be a process of its own)
            out = work / "final.xlsx"
            monkeypatch.chdir(work)
            final = batchpay("run", str(sheet), "--wait", "10", "--out", str(out), "--quiet",
                             env=env)
            assert final.exit_code == 0, (trial, final)
            _assert_exactly_once(url, sheet_rows, out)
            assert {r["status"] for r in results(out)} == {"COMPLETED"}
        # a run that ends before it is killed proves nothing: most kills must land mid-run (a
        # change that hid the intents from `journaled_attempts` would let every run finish)
        assert landed >= trials // 2, f"only {landed} of {trials} kills landed mid-run"


@pytest.fixture
def faulty(cli_sandbox: Any) -> Any:
    return lambda **faults: cli_sandbox(settle_seconds=0.3, **faults)


@pytest.mark.slow
@BOTH_STORES
def test_errors_and_dropped_responses_end_completed_without_duplicates(
        faulty: Any, tmp_path: Path, no_backoff: None) -> None:
    service = faulty(error_rate=0.1, drop_rate=0.1, seed=7)
    sheet_rows = rows(40)
    sheet = write_sheet(tmp_path / "nov.xlsx", sheet_rows)
    out = tmp_path / "r.xlsx"
    first = batchpay("run", str(sheet), "--wait", "20", "--out", str(out))
    assert first.exit_code in (0, 1), first
    synced = batchpay("sync", "--out", str(out), "--overwrite")
    assert synced.exit_code == 0, synced
    _assert_exactly_once(service.url, sheet_rows, out)
    assert {r["status"] for r in results(out)} == {"COMPLETED"}
    stats = httpx.get(f"{service.url}/_sandbox/stats").json()["requests"]
    assert stats.get("POST /v2/payout 500", 0) + stats.get("POST /v1/quote 500", 0) > 0


@pytest.mark.slow
def test_rate_limited_service_pays_every_row_once(faulty: Any, tmp_path: Path) -> None:
    service = faulty(rate_limit="20/second")
    sheet_rows = rows(30)
    sheet = write_sheet(tmp_path / "nov.xlsx", sheet_rows)
    out = tmp_path / "r.xlsx"
    result = batchpay("run", str(sheet), "--concurrency", "8", "--wait", "15", "--out", str(out))
    assert result.exit_code == 0, result
    _assert_exactly_once(service.url, sheet_rows, out)
    stats = httpx.get(f"{service.url}/_sandbox/stats").json()["requests"]
    assert any(k.endswith(" 429") for k in stats), stats  # the limit was really hit


@BOTH_STORES
def test_sync_resolves_rows_left_unknown_by_dropped_responses(faulty: Any,
                                                              tmp_path: Path) -> None:
    service = faulty(drop_rate=0.5, seed=3, quote_ttl=1)
    sheet_rows = rows(10)
    sheet = write_sheet(tmp_path / "nov.xlsx", sheet_rows)
    out = tmp_path / "r.xlsx"
    # --wait 0: no time to resolve doubts in the run; sync must do it
    first = batchpay("run", str(sheet), "--wait", "0", "--out", str(out))
    assert first.exit_code in (0, 1), first
    time.sleep(1.2)  # every quote has expired: sync may now also prove "never received"
    synced = batchpay("sync", "--out", str(out), "--overwrite")
    assert synced.exit_code in (0, 1), synced
    statuses = Counter(r["status"] for r in results(out))
    assert "UNKNOWN" not in statuses, (statuses, synced)
    # every dropped payout was committed by the sandbox: sync finds them all, none twice
    paid = Counter(p["accountNumber"] for p in sandbox_payouts(service.url))
    assert max(paid.values()) == 1
    assert len(paid) == sum(statuses[s] for s in ("PENDING", "PROCESSING", "COMPLETED"))
