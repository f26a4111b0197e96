"""One request budget per API key: the provider's windows booked in the journal's database,
shared by every process (and host) paying with the key.

The proof is at the sandbox, over real HTTP: two `batchpay run` processes started at once
(two hosts: their own user folders and journals, one budget) against a sandbox that
enforces the same windows answer 0 x 429, and together use the windows to at least 90 %
over the run: requests admitted / what the windows allowed from the first to the last.
"""

from __future__ import annotations

import math
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from batchpay.engine.budget import duration, finish_after
from batchpay.journal.budget import SharedBudget, key_hash
from batchpay.provider.pacing import Window
from tests.support.postgres import BOTH_STORES
from tests.support.processes import runner_env, sandbox_process, start_runner
from tests.support.sheets import rows, write_sheet

LIMIT, SECONDS = 20, 10.0  # the windows, scaled down from 100/min: 20 requests per 10 s
ROWS = 27  # per run: 2 requests a row, plus the run's reads (wallets, banks, payout list)


def budget_where(store: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    if store == "postgresql":
        return str(request.getfixturevalue("postgres").journal_url())
    return str(tmp_path / "budget" / "budget.sqlite3")


def keeps_windows(times: list[float], limit: int, seconds: float) -> bool:
    """No `limit` + 1 bookings within any `seconds`."""
    ordered = sorted(times)
    return all(ordered[i + limit] - ordered[i] >= seconds for i in range(len(ordered) - limit))


@BOTH_STORES
def test_two_processes_booking_at_once_keep_the_windows(store: str, tmp_path: Path,
                                                        request: pytest.FixtureRequest) -> None:
    """Two budgets on one database (two processes' connections), booking from threads at
    once: the bookings together keep the windows, and the table holds no key."""
    where = budget_where(store, tmp_path, request)
    budgets = [SharedBudget(where, "the-secret-key") for _ in range(2)]
    other = SharedBudget(where, "another-key")  # a budget of its own, not counted with ours
    booked: list[float] = []
    lock = threading.Lock()

    def book(budget: SharedBudget) -> None:
        for _ in range(6):
            delay = budget.reserve([(3, 0.5)], 0.01)
            with lock:
                booked.append(time.time() + delay)  # on SQLite the clock is this machine's
            other.reserve([(100, 1.0)], 0.0)

    threads = [threading.Thread(target=book, args=(b,)) for b in budgets for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    now, times = budgets[0].booked(60)
    assert len(times) == 24
    assert keeps_windows(times, 3, 0.5)
    assert times[-1] - times[0] >= 7 * 0.5  # 24 bookings, 3 per half second
    for b in [*budgets, other]:
        b.close()
    if store == "sqlite":
        db = sqlite3.connect(where)
        keys = {r[0] for r in db.execute("SELECT key_hash FROM request_budget")}
        db.close()
        assert keys == {key_hash("the-secret-key"), key_hash("another-key")}
        assert b"the-secret-key" not in Path(where).read_bytes()


def test_the_estimate_counts_the_budget_already_used() -> None:
    """4,000 requests at 100/min and 1,000/hour, 312 of them spent: the hour window binds."""
    windows = [Window(100, 60.0), Window(1000, 3600.0), Window(10000, 86400.0)]
    now = 1_000_000.0
    spent = [now - 7200 + i for i in range(312)]  # two hours ago: out of the minute and hour
    assert 3 * 3600 < finish_after(now, spent, windows, 4000, 0.05) < 4 * 3600
    # a full window is left 5 % of it later, at most 2 s (the network's and a busy host's jitter)
    assert finish_after(now, [], [Window(100, 60.0)], 200, 0.05) == pytest.approx(62.0)
    assert finish_after(now, [], [Window(100, 60.0)], 100, 0.05) == 0
    assert duration(42 * 60 + 1) == "43 min" and duration(3 * 3600 + 45 * 60) == "3 h 45 min"
    assert duration(86400, exact=True) == "day" and duration(10, exact=True) == "10 s"


class Admitted:
    """Polls the sandbox's uncounted /_sandbox/stats every 20 ms: when the requests it
    admitted (429s excluded) began and ended, within a poll's interval."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.samples: list[tuple[float, int, int]] = []  # (time, admitted, refused)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()

    def _poll(self) -> None:
        with httpx.Client(timeout=10) as client:
            while not self._stop.is_set():
                counts = client.get(f"{self.url}/_sandbox/stats").json()["requests"]
                refused = sum(v for k, v in counts.items() if k.endswith(" 429"))
                self.samples.append((time.monotonic(), sum(counts.values()) - refused, refused))
                self._stop.wait(0.02)

    def stop(self) -> tuple[int, int, float]:
        """(requests admitted, 429s, seconds from the first admitted to the last)."""
        self._stop.set()
        self._thread.join()
        _, final, refused = self.samples[-1]
        first = next(t for t, n, _ in self.samples if n > 0)
        last = next(t for t, n, _ in self.samples if n == final)
        return final, refused, last - first


@pytest.mark.slow
@BOTH_STORES
def test_two_runs_at_once_share_the_windows(store: str, tmp_path: Path,
                                            request: pytest.FixtureRequest) -> None:
    with sandbox_process("--rate-limit", f"{LIMIT}/{SECONDS:g}s", "--client-windows",
                         "--settle-seconds", "0.2") as url:
        two_runs_at_once(url, store, tmp_path, request)


def two_runs_at_once(url: str, store: str, tmp_path: Path,
                     request: pytest.FixtureRequest) -> None:
    budget = budget_where(store, tmp_path, request)
    runners, sheets_rows = [], []
    admitted = Admitted(url)
    for host in (1, 2):
        folder = tmp_path / f"host{host}"
        journal: str | Path = (request.getfixturevalue("postgres").journal_url()
                               if store == "postgresql" else folder / "journal.sqlite3")
        env = runner_env(url, journal, folder=folder)
        settings = Path(env["XDG_CONFIG_HOME"]) / "batchpay" / "batchpay.toml"
        settings.parent.mkdir(parents=True)
        settings.write_text(f'rate_limit = "{LIMIT}/{SECONDS:g}s"\nrate_budget = "{budget}"\n')
        sheet_rows = rows(ROWS, start=100 * host)
        sheets_rows += sheet_rows
        sheet = write_sheet(folder / "sheet.xlsx", sheet_rows)
        runners.append(start_runner("run", str(sheet), "--yes", "--wait", "0",
                                    "--concurrency", "4", env=env, cwd=folder))
    outputs = [r.communicate(timeout=240) for r in runners]
    sent, refused, span = admitted.stop()
    stats = httpx.get(f"{url}/_sandbox/stats").json()["requests"]
    for runner, (out, err) in zip(runners, outputs, strict=True):
        assert runner.returncode == 0, err[-3000:]
        assert "Traceback" not in err
        assert f"{ROWS} row(s): about" in out + err  # the estimate, before sending
    payouts: list[dict[str, Any]] = httpx.get(f"{url}/_sandbox/payouts").json()["data"]
    paid = sorted(p["accountNumber"] for p in payouts)
    assert paid == sorted(r["account_number"] for r in sheets_rows)  # each row once
    assert refused == 0, f"{refused} x 429: {stats}"
    allowed = LIMIT * (math.floor(span / SECONDS) + 1)
    print(f"budget used: {sent} requests of the {allowed} the windows allowed in {span:.1f} s "
          f"({sent / allowed:.1%})")
    assert sent / allowed >= 0.90, (sent, allowed, span)


@pytest.mark.parametrize("client_windows", [False, True])
def test_a_sandbox_started_with_client_windows_keeps_the_clients_windows(
        sandbox_factory: Any, client_windows: bool) -> None:
    """The client switches the provider's windows off for the sandbox, unless the sandbox
    says (`--client-windows`) that it is there to try them."""
    import asyncio

    from batchpay.provider.client import PayoutClient
    from batchpay.provider.pacing import Pacer

    running = sandbox_factory(client_windows=client_windows)

    async def first_answer() -> bool:
        async with PayoutClient(running.url, running.api_key,
                                pacer=Pacer(0, "100/min")) as client:
            await client.wallets()
            assert client.is_sandbox
            return client.pacer.windows_enabled

    assert asyncio.run(first_answer()) is client_windows


def test_two_pacers_on_one_budget_wait_for_each_other(tmp_path: Path) -> None:
    """Two processes' pacers (each its own connection to the journal file) sending at once:
    the windows are booked in the file, not kept per pacer, so together they keep them."""
    import asyncio

    from batchpay.provider.pacing import Pacer

    where = str(tmp_path / "journal.sqlite3")
    pacers = [Pacer(0, "3/0.5s", shared=SharedBudget(where, "k")) for _ in range(2)]

    async def send_all() -> float:
        started = time.monotonic()
        await asyncio.gather(*(p.acquire() for p in pacers for _ in range(8)))
        return time.monotonic() - started

    took = asyncio.run(send_all())
    _, times = SharedBudget(where, "k").booked(60)
    for p in pacers:
        p.close()
    assert len(times) == 16 and keeps_windows(times, 3, 0.5)
    assert took >= 5 * 0.5  # 16 requests, 3 a half second: the sixth half second at least
