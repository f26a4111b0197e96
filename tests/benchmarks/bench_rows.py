"""Benchmark the table Rows: a reviewed batch's page, a hundred rows at a time.

    python tests/benchmarks/bench_rows.py [--rows 2000] [--short]

`batchpay serve` as its own process against a sandbox process, an N-row sheet uploaded and
reviewed (nothing paid); then, over HTTP as a browser asks them, prints:
- first_view_s: the batch's page first shown after the review (the dry run's rows and the
  plan read and checked once);
- view_again_s: the same page again;
- page_ms: the median of the pages of the table after it (Next page: page 2, 3 ... 10);
- filter_ms: the page filtered to the held rows (none here) and to the new rows.
A page must be a slice of the stored review, never a new read or a new quote: page_ms stays
far under a second at 2,000 rows.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from batchpay.console.accounts import Accounts, console_folder  # noqa: E402
from tests.benchmarks.bench_console import MAKER, Console, build  # noqa: E402
from tests.support.processes import benchmark_rows, runner_env, sandbox_process  # noqa: E402


def timed(console: Console, path: str) -> float:
    started = time.perf_counter()
    answer = console.get(path)
    assert answer.status_code == 200 and 'aria-label="Rows"' in answer.text, answer.text[:2000]
    return time.perf_counter() - started


def main() -> None:
    rows = benchmark_rows(__doc__ or "", default=2000, short=200)
    with tempfile.TemporaryDirectory(prefix="bench-rows-") as name:
        folder = Path(name)
        sheet = folder / f"payouts-{rows}.xlsx"
        build(sheet, rows)
        with sandbox_process("--settle-seconds", "0.5", state=folder / "sandbox.sqlite3") as url:
            httpx.put(f"{url}/_sandbox/wallet", json={"currency": "NGN",
                                                      "balance": "1000000000000000"},
                      timeout=10).raise_for_status()
            env = runner_env(url, folder / "journal" / "journal.sqlite3")
            Accounts(console_folder(folder / "journal")).add(MAKER, ("maker",), None)
            env["PYTHONPATH"] = str(REPO)
            console = Console(env, folder)
            try:
                batch, _ = console.upload(sheet)
                console.post(f"/batches/{batch}/review")
                while True:  # a long review goes on after the request
                    started = time.perf_counter()
                    text = console.get(f"/batches/{batch}").text
                    first = time.perf_counter() - started  # the last: the review's first view
                    if "This page refreshes itself" not in text:
                        break
                    time.sleep(0.5)
                again = timed(console, f"/batches/{batch}")
                pages = [timed(console, f"/batches/{batch}?page={n}")
                         for n in range(2, min(10, -(-rows // 100)) + 1)]
                held = timed(console, f"/batches/{batch}?finding=held")
                new = timed(console, f"/batches/{batch}?finding=new&page=2")
            finally:
                console.stop()
        print(f"case=rows rows={rows} first_view_s={first:.2f} view_again_s={again:.2f} "
              f"page_ms={statistics.median(pages) * 1000:.0f} "
              f"filter_ms=held:{held * 1000:.0f},new:{new * 1000:.0f}")


if __name__ == "__main__":
    main()
