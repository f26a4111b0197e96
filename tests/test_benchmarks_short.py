"""The benchmark scripts still run: each in its short mode, as CI would, printing its figures.

The figures themselves are not asserted (a shared CI machine times nothing reliably);
what is asserted is that each script exits 0 and prints its figure lines, so that the
scripts cannot rot unnoticed between the times someone runs them at full size.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import psycopg
import pytest

BENCHMARKS = Path(__file__).parent / "benchmarks"
NUMBER = r"\d+(?:\.\d+)?"

# script -> the lines its short mode must print (one regex per line, all must match)
EXPECTED = {
    "bench_advice.py": [
        rf"^payees=3 rows=6 advise_s={NUMBER} per_advice_s={NUMBER} mails=3 pdf_kb=\d+$",
    ],
    "bench_approval.py": [
        rf"^rows=500 plan_mb={NUMBER} sign_s={NUMBER} read_s={NUMBER} verify_s={NUMBER} "
        rf"rebuild_s={NUMBER}$",
    ],
    "bench_console.py": [
        rf"^first_page_s={NUMBER} idle_rss_mb={NUMBER}$",
        rf"^case=sample rows=25 upload_check_s={NUMBER}$",
        rf"^case=sheet rows=200 upload_check_s={NUMBER} review_s={NUMBER} pay_s={NUMBER} "
        rf"progress_ms={NUMBER} peak_rss_mb={NUMBER} paid=200 counts=\[COMPLETED=200\]$",
        rf"^case=cli rows=200 dry_run_s={NUMBER} run_s={NUMBER} paid=200 "
        rf"console_over_cli review={NUMBER} pay={NUMBER}$",
        rf"^case=resume rows=200 sent_at_kill=\d+ resume_s={NUMBER} paid=200 "
        r"distinct_quotes=200$",
    ],
    "bench_books.py": [
        rf"^payouts=200 movements=404 ofx_s={NUMBER} ofx_cpu_s={NUMBER} xero_s={NUMBER} "
        rf"xero_cpu_s={NUMBER} camt053_s={NUMBER} camt053_cpu_s={NUMBER} kingdee_s={NUMBER} "
        rf"kingdee_cpu_s={NUMBER} yonyou_s={NUMBER} yonyou_cpu_s={NUMBER} journal_s={NUMBER} "
        rf"journal_cpu_s={NUMBER} reconcile_s={NUMBER} reconcile_cpu_s={NUMBER} "
        r"list_requests=\d+ matched=404 unmatched=0$",
    ],
    "bench_engine.py": [
        rf"^concurrency=4 rows=32 rows_per_s={NUMBER} bound=40\.0 share={NUMBER}% ",
        rf"^concurrency=16 rows=32 rows_per_s={NUMBER} bound=160\.0 share={NUMBER}% ",
    ],
    "bench_pacing.py": [
        rf"^limit=10/second max_rps=10 concurrency=4 rows=10 requests=\d+ rate={NUMBER}/s "
        rf"share={NUMBER}% 429s=\d+ ",
    ],
    "bench_sync.py": [
        rf"^case=pending rows=40 .*tracked=40 sync_requests=\d+ per_tracked={NUMBER} "
        r".*after_sync=\[COMPLETED=40\] paid=40 duplicates=0$",
        rf"^case=dropped rows=40 drop_rate=0\.1 .*before_sync=\[.*UNKNOWN=\d+.*\] "
        rf"tracked=\d+ sync_requests=\d+ per_tracked={NUMBER} .*"
        r"after_sync=\[(?![^]]*UNKNOWN)[^]]*\] .*duplicates=0$",
    ],
    "bench_intake.py": [
        rf"^read_sheet\s+{NUMBER} s",
        rf"^batchpay validate \(proc\)\s+{NUMBER} s\s+peak {NUMBER} MB\s+exit 0",
        rf"^ratio\s+{NUMBER}",
    ],
    "bench_hostile.py": [
        rf"^file=xfd1048576 bytes=[\d,]+ exit=2 s={NUMBER} peak_mb={NUMBER} said=.*reaches row",
        rf"^file=cells_200000 bytes=[\d,]+ exit=2 s={NUMBER} peak_mb={NUMBER} said=.*100,000 cells",
        rf"^file=csv_fields_4mb bytes=[\d,]+ exit=2 s={NUMBER} peak_mb={NUMBER} said=.*cells",
    ],
    "bench_journal_writes.py": [
        rf"^store=sqlite rows=160 group=16 cpu_us_per_row=\d+ server_cpu_us_per_row=nan "
        rf"wall_us_per_row=\d+ statements_per_row={NUMBER} groups=11 chain_ok=True events=322 ",
        rf"^store=postgresql rows=160 group=16 cpu_us_per_row=\d+ server_cpu_us_per_row=\d+ "
        rf"wall_us_per_row=\d+ statements_per_row={NUMBER} groups=11 chain_ok=True events=322 ",
    ],
    "bench_journal_copy.py": [
        rf"^refs=500 events=2001 copy_s={NUMBER} verify_s={NUMBER} same_head=yes$",
    ],
    "bench_budget.py": [
        rf"^store=sqlite bookings=200 ms_per_booking={NUMBER}$",
        rf"^store=postgresql bookings=200 ms_per_booking={NUMBER}$",
    ],
    "bench_integrity.py": [
        rf"^refs=500 events=2001 journal_mb={NUMBER} check_s={NUMBER}$",
    ],
    "bench_service_ledger.py": [
        rf"^way=windows history=300 days=62 limit=100/min requests=5 seconds={NUMBER} 429s=0 ",
        rf"^way=even history=300 days=62 limit=100/min requests=5 seconds={NUMBER} 429s=0 ",
    ],
    "bench_listener.py": [
        rf"^idle=2000 opened=2000 delivery_ms={NUMBER} status=200 journal=COMPLETED "
        rf"listener_peak_mb={NUMBER}$",
    ],
    "bench_invoices.py": [
        rf"^case=stable rows=60 mean_quotes={NUMBER} max_quotes=\d+ short=0 over_bound=0 "
        rf"quote_failed=0 s={NUMBER}$",
        rf"^case=drift rows=60 mean_quotes={NUMBER} max_quotes=\d+ short=0 over_bound=0 "
        rf"quote_failed=\d+ s={NUMBER}$",
    ],
    "bench_payees.py": [
        rf"^rows=500 history=500 validate_s={NUMBER} with_register_s={NUMBER} added_s=-?{NUMBER} "
        rf"register_s={NUMBER} changed=10 new=10$",
    ],
    "bench_results.py": [
        rf"^rows=2000 write_seconds={NUMBER} \(target {NUMBER}\) cpu_seconds={NUMBER} "
        rf"peak_rss_mb={NUMBER} \(target {NUMBER}\) process_seconds={NUMBER} "
        rf"file_mb={NUMBER} OK$",
    ],
    "bench_rows.py": [
        rf"^case=rows rows=200 first_view_s={NUMBER} view_again_s={NUMBER} page_ms={NUMBER} "
        rf"filter_ms=held:{NUMBER},new:{NUMBER}$",
    ],
    "bench_statement.py": [
        rf"^refs=500 events=2001 build_s={NUMBER} write_s={NUMBER} lines=500 refunds=10$",
    ],
    "soak_crash.py": [
        r"^trials=2 duplicates=0 missing=0 failed_final_runs=0 other_problems=0 "
        rf"killed_before_end=\d s_per_trial={NUMBER}$",
    ],
}
# how each script is made short (default: --short)
SHORT = {"bench_intake.py": ["--rows", "300"], "bench_results.py": ["--rows", "2000"]}


@pytest.mark.slow
@pytest.mark.parametrize("script", sorted(EXPECTED))
def test_benchmark_runs_in_short_mode(script: str, tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, str(BENCHMARKS / script),
                           *SHORT.get(script, ["--short"])],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, f"{script} exited {done.returncode}\n{done.stdout}\n{done.stderr}"
    for pattern in EXPECTED[script]:
        assert re.search(pattern, done.stdout, re.MULTILINE), (pattern, done.stdout)


@pytest.mark.slow
def test_the_engine_benchmark_takes_an_existing_database(postgres: Any, tmp_path: Path) -> None:
    """`bench_engine.py --journal postgresql://...`: each run a journal of its own in a new
    schema of that database (a journal shared by two runs would pay the second run's rows
    from the first's: not exactly once, exit 1), all dropped again at the end."""
    address = postgres.url()

    def rows_inserted() -> int:  # into this database, by every connection so far
        with psycopg.connect(address) as conn:
            row = conn.execute("SELECT tup_inserted FROM pg_stat_database "
                               "WHERE datname = current_database()").fetchone()
        assert row is not None
        return int(row[0])

    before = rows_inserted()
    done = subprocess.run([sys.executable, str(BENCHMARKS / "bench_engine.py"), "--short",
                           "--journal", address], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path)
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    assert f"journal in PostgreSQL at {address} (a new schema per run)" in done.stdout
    for pattern in EXPECTED["bench_engine.py"]:
        assert re.search(pattern, done.stdout, re.MULTILINE), (pattern, done.stdout)
    # the journals were in this database: two runs of 32 rows, a ledger row each at least
    assert rows_inserted() - before >= 64
    with psycopg.connect(address) as conn:
        left = conn.execute("SELECT nspname FROM pg_namespace "
                            "WHERE nspname LIKE 'batchpay_bench_%'").fetchall()
    assert left == []
