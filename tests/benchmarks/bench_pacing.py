"""Benchmark `--max-rps` pacing against a rate-limited sandbox: budget used, 429s provoked.

    python tests/benchmarks/bench_pacing.py [--rows 100] [--limit 10/second] [--max-rps 10]
    python tests/benchmarks/bench_pacing.py --short      # a few seconds, for CI

A sandbox runs as its own process with `--rate-limit LIMIT` (sliding windows, 429 beyond
them); `batchpay run SHEET --wait 0 --max-rps R --concurrency C` pays N rows through it.
With R at the limit, the run should use the whole budget and never be refused.

The achieved rate is measured at the sandbox: requests it admitted (429s excluded) from
the first answered to the last, timed by polling its uncounted /_sandbox/stats every
20 ms (Python start-up and the results workbook are not in it). Prints:
    limit=10/second max_rps=10 rows=100 requests=201 rate=9.8/s share=98.0% 429s=0 ...
and exits 1 when the share is below the target (95%), a 429 was answered, or a row was not
paid exactly once. Short mode checks nothing but that it runs.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from bench_engine import exactly_once, run_batch

from batchpay.sandbox.faults import parse_rate_limit
from tests.support.processes import sandbox_process
from tests.support.sheets import rows, write_sheet

TARGET_SHARE = 0.95


def limit_per_second(limit: str) -> float:
    """The tightest window of a sandbox rate limit ("10/second", "60/min,1000/hour"), per second."""
    return min(w.limit / w.seconds for w in parse_rate_limit(limit))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=100)
    parser.add_argument("--limit", default="10/second", help="the sandbox's --rate-limit")
    parser.add_argument("--max-rps", type=float, default=None,
                        help="the runner's --max-rps (default: the limit's rate)")
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--latency-ms", type=float, default=20.0)
    parser.add_argument("--short", action="store_true", help="10 rows, no target")
    args = parser.parse_args(argv)
    n = 10 if args.short else args.rows
    budget = limit_per_second(args.limit)
    max_rps = budget if args.max_rps is None else args.max_rps
    with tempfile.TemporaryDirectory(prefix="bench-pacing-") as tmp, sandbox_process(
            "--latency-ms", f"{args.latency_ms:g}", "--settle-seconds", "0.2",
            "--rate-limit", args.limit) as url:
        work = Path(tmp)
        sheet_rows = rows(n)
        sheet = write_sheet(work / "sheet.xlsx", sheet_rows)
        figures = run_batch(url, sheet, work, "--wait", "0", "--max-rps", f"{max_rps:g}",
                            "--concurrency", str(args.concurrency), sample=True)
    wrong = exactly_once(figures.payouts, sheet_rows)
    if figures.exit_code != 0 or wrong:
        print(f"FAILED exit={figures.exit_code} {wrong}\n{figures.stderr[-2000:]}", flush=True)
        return 1
    refused = sum(v for k, v in figures.requests.items() if k.endswith(" 429"))
    rate, span, _ = figures.sampler.rate()
    share = rate / budget
    print(f"limit={args.limit} max_rps={max_rps:g} concurrency={args.concurrency} rows={n} "
          f"requests={sum(figures.requests.values())} rate={rate:.2f}/s "
          f"share={share:.1%} 429s={refused} requests_s={span:.2f} "
          f"wall_s={figures.wall_seconds:.2f} max_in_1s={figures.max_in_1s}", flush=True)
    if args.short:
        return 0
    if share < TARGET_SHARE or refused:
        print(f"BELOW TARGET: {share:.1%} of the budget with {refused} x 429 "
              f"(target >= {TARGET_SHARE:.0%} with none)", flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
