"""A journal database lost in the middle of a run: the run stops sending, says why and exits
with the journal's code, never a traceback; the next run resolves the rows in flight, as
after a crash, and every row is paid once, counted at the sandbox."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from batchpay.statuses import EXIT_FAILED
from tests.support.postgres import Cluster
from tests.support.processes import journaled_attempts, runner_env, sandbox_process, start_runner
from tests.support.sheets import rows, write_sheet

ROWS = 30


def cut_off(cluster: Cluster, journal: str) -> int:
    """Terminate every server connection of batchpay's (the run's journal and budget), from
    another connection, as a failed-over or restarted server does; how many were cut."""
    with psycopg.connect(cluster.url(), autocommit=True) as admin:
        cut = admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE application_name LIKE 'batchpay%' AND pid <> pg_backend_pid()").fetchall()
    return len(cut)


@pytest.mark.slow
def test_a_lost_database_stops_the_run_and_the_next_run_pays_each_row_once(
        tmp_path: Path, postgres: Cluster) -> None:
    sheet_rows = rows(ROWS)
    sheet = write_sheet(tmp_path / "sheet.xlsx", sheet_rows)
    journal = postgres.journal_url()
    with sandbox_process("--latency-ms", "60", "--settle-seconds", "0.2") as url:
        env = runner_env(url, journal, folder=tmp_path)
        proc = start_runner("run", str(sheet), "--yes", "--wait", "0", "--concurrency", "2",
                            env=env, cwd=tmp_path)
        deadline = time.monotonic() + 60
        while journaled_attempts(journal) < 4 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert cut_off(postgres, journal) >= 1
        out, err = proc.communicate(timeout=120)
        made = len(httpx.get(f"{url}/_sandbox/payouts").json()["data"])
        # it stopped: not every row was sent, and no payout was made after it ended
        assert proc.returncode == EXIT_FAILED, out + err
        assert "Traceback" not in out + err
        assert "journal" in err and "run again" in err, err
        assert made < ROWS, f"{made} payouts: the run went on after its database was lost"
        time.sleep(0.5)
        assert len(httpx.get(f"{url}/_sandbox/payouts").json()["data"]) == made

        again = start_runner("run", str(sheet), "--yes", "--wait", "10", env=env, cwd=tmp_path)
        out2, err2 = again.communicate(timeout=180)
        assert again.returncode == 0, out2 + err2
        payouts: list[dict[str, Any]] = httpx.get(f"{url}/_sandbox/payouts").json()["data"]
    paid = Counter(p["accountNumber"] for p in payouts)
    assert paid == Counter(r["account_number"] for r in sheet_rows)  # each row once
