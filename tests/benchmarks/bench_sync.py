"""Benchmark `batchpay sync`: requests per tracked payout after a large run.

    python tests/benchmarks/bench_sync.py [--rows 1000]
    python tests/benchmarks/bench_sync.py --short      # a few seconds, for CI

Two cases, each on a fresh sandbox process (latency 1 ms) and a fresh journal:
- pending: `batchpay run SHEET --wait 0` pays N rows and leaves them PENDING; once they
  have settled at the sandbox, `batchpay sync` brings them up to date.
- dropped: the sandbox drops 10% of the payout answers (committed, connection closed). The
  run would look those up itself even with --wait 0 (one list request), so it is cut off
  with SIGKILL once 90% of the rows' intents are journaled, as a crash would: the dropped
  rows and those in flight are left in doubt (UNKNOWN) for `sync` to find by their quote
  ids; the last 10% were never sent and are not sync's business. Quotes live 3 s here and
  sync starts once they have expired, so it can also prove the rows whose request never
  left (killed between intent and send) NOT_SENT, and no row is left UNKNOWN.

The sandbox counts every API request; the difference across `sync` is its cost. Prints:
    case=pending rows=1000 tracked=1000 sync_requests=10 per_tracked=0.010 ...
Target: at most 0.1 requests per tracked payout, or the floor of one page per state of the
documented list (PENDING, COMPLETED, FAILED, REFUNDED: the least a scan that proves a request
never arrived reads), whichever is more. Exits 1 when missed, when sync fails, or when a
payout exists twice.
"""

from __future__ import annotations

import argparse
import json
import re
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from bench_engine import reset, sandbox_get

from tests.support.processes import (
    journaled_attempts,
    private_user_folders,
    runner_env,
    sandbox_process,
    start_runner,
)
from tests.support.sheets import rows, write_sheet

TARGET_PER_TRACKED = 0.1
FLOOR_REQUESTS = 4  # one page of each of the list's four states
SETTLE_SECONDS = 1.0
QUOTE_TTL_SECONDS = 3.0  # short, so that sync can prove "never received" for the dropped case


def requests_counted(url: str) -> int:
    return sum(sandbox_get(url, "stats")["requests"].values())


def journal_statuses(journal: Path) -> Counter[str]:
    db = sqlite3.connect(f"file:{journal}?mode=ro", uri=True, timeout=10)
    try:
        return Counter(dict(db.execute("SELECT status, COUNT(*) FROM payouts GROUP BY status")))
    finally:
        db.close()


def shown(statuses: Counter[str]) -> str:
    """Journal statuses as the results show them (SENDING is UNKNOWN to an operator)."""
    merged = Counter({("UNKNOWN" if k == "SENDING" else k): 0 for k in statuses})
    for k, v in statuses.items():
        merged["UNKNOWN" if k == "SENDING" else k] += v
    return ",".join(f"{k}={v}" for k, v in sorted(merged.items()))


def pay(url: str, sheet: Path, journal: Path, work: Path, *, kill_after_intents: int | None,
        concurrency: int) -> int:
    """`batchpay run --wait 0`; SIGKILLed once `kill_after_intents` intents are on disk."""
    proc = start_runner("run", str(sheet), "--wait", "0", "--quiet", "--concurrency",
                        str(concurrency), "--out", str(work / f"{sheet.stem}-run.xlsx"),
                        env=runner_env(url, journal), cwd=work)
    if kill_after_intents is not None:
        deadline = time.monotonic() + 600
        while proc.poll() is None and time.monotonic() < deadline:
            if journaled_attempts(journal) >= kill_after_intents:
                proc.send_signal(signal.SIGKILL)
                break
            time.sleep(0.01)
    proc.communicate(timeout=600)
    return proc.returncode


def sync(url: str, journal: Path, work: Path) -> tuple[int, dict[str, Any], int, float]:
    """`batchpay sync --json`: (exit code, its JSON, rows it says it tracked, seconds)."""
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "batchpay", "sync", "--json", "--out",
                           str(journal.with_name(journal.stem + "-synced.xlsx"))], env=runner_env(url, journal), cwd=work,
                          capture_output=True, text=True, timeout=600)
    seconds = time.perf_counter() - started
    tracked = re.search(r"Tracked (\d+) row", done.stderr)
    try:
        document = json.loads(done.stdout)
    except ValueError:
        document = {"error": done.stderr[-2000:]}
    return done.returncode, document, int(tracked.group(1)) if tracked else 0, seconds


def case(name: str, n: int, work: Path, *, drop_rate: float, concurrency: int) -> bool:
    options = ["--latency-ms", "1", "--settle-seconds", f"{SETTLE_SECONDS:g}",
               "--quote-ttl", f"{QUOTE_TTL_SECONDS:g}", "--drop-rate", f"{drop_rate:g}",
               "--seed", "11"]
    sheet_rows = rows(n)
    sheet = write_sheet(work / f"{name}.xlsx", sheet_rows)
    # "never received" needs the quote expired a read timeout before the sync's scan began:
    # a local sandbox answers in a millisecond, so a second is plenty
    journal = work / f"{name}-journal.sqlite3"
    # in the runner's own settings file: a folder's file may only lengthen read_timeout
    own = Path(private_user_folders(journal.parent)["XDG_CONFIG_HOME"]) / "batchpay"
    own.mkdir(parents=True, exist_ok=True)
    (own / "batchpay.toml").write_text("read_timeout = 1\n", encoding="utf-8")
    with sandbox_process(*options) as url:
        reset(url)
        started = time.perf_counter()
        run_exit = pay(url, sheet, journal, work, concurrency=concurrency,
                       kill_after_intents=max(1, n * 9 // 10) if drop_rate else None)
        run_seconds = time.perf_counter() - started
        before = journal_statuses(journal)
        # every payout has reached its final state (and, when dropped, every quote expired)
        time.sleep(max(SETTLE_SECONDS, QUOTE_TTL_SECONDS + 1 if drop_rate else 0) + 0.5)
        counted = requests_counted(url)
        sync_exit, document, tracked, sync_seconds = sync(url, journal, work)
        sync_requests = requests_counted(url) - counted
        paid = Counter(p["accountNumber"] for p in sandbox_get(url, "payouts")["data"])
    after = Counter(document.get("counts", {}))
    per_tracked = sync_requests / tracked if tracked else float("nan")
    duplicates = sum(c - 1 for c in paid.values() if c > 1)
    print(f"case={name} rows={n} drop_rate={drop_rate:g} run_exit={run_exit} "
          f"run_s={run_seconds:.1f} before_sync=[{shown(before)}] tracked={tracked} "
          f"sync_requests={sync_requests} per_tracked={per_tracked:.3f} "
          f"sync_s={sync_seconds:.2f} sync_exit={sync_exit} "
          f"after_sync=[{','.join(f'{k}={v}' for k, v in sorted(after.items()))}] "
          f"paid={sum(paid.values())} duplicates={duplicates}", flush=True)
    if "error" in document:
        print(document["error"], flush=True)
    return sync_exit in (0, 1) and duplicates == 0 and tracked > 0 and \
        sync_requests <= max(TARGET_PER_TRACKED * tracked, FLOOR_REQUESTS)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--short", action="store_true", help="40 rows, both cases")
    args = parser.parse_args(argv)
    n = 40 if args.short else args.rows
    with tempfile.TemporaryDirectory(prefix="bench-sync-") as tmp:
        ok = case("pending", n, Path(tmp), drop_rate=0, concurrency=args.concurrency)
        ok = case("dropped", n, Path(tmp), drop_rate=0.1, concurrency=args.concurrency) and ok
    if not ok:
        print(f"TARGET MISSED or sync failed (target <= {TARGET_PER_TRACKED} requests per "
              f"tracked payout or {FLOOR_REQUESTS} in all, no duplicates)", flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
