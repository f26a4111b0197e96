"""Benchmark invoice rows: how many quotes a target_amount row takes to find its source amount.

    python tests/benchmarks/bench_invoices.py [--rows 1000]
    python tests/benchmarks/bench_invoices.py --short      # 60 rows, for CI

Each case runs `batchpay run --dry-run` (which calibrates every invoice row and pays
nothing) on a sheet of invoice rows (CNY 10 to 500,000, NGN and USD wallets, in a
mixed order) against a fresh sandbox process: once with stable rates, once with
`--rate-drift 0.002`. Every quote is a request under the provider's 100/minute limit, so
quotes per row is the figure. Also checked: no row delivers less than its invoice, and
none more than the bound. Prints, per case:
    case=stable rows=1000 mean_quotes=1.04 max_quotes=3 short=0 over_bound=0 quote_failed=0 s=9.1
Targets: mean <= 1.1 stable, <= 2.0 with drift 0.2%. Exits 1 when a row delivers less than
its invoice or more than the bound, or a quote fails (in every mode), or a mean misses its
target (full size only: 60 rows say little about a mean).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: tests.support

import openpyxl  # noqa: E402

from tests.support.processes import runner_env, sandbox_process  # noqa: E402
from tests.support.sheets import HEADERS, rows, write_sheet  # noqa: E402

BOUND = {"NGN": Decimal("0.01"), "USD": Decimal("0.08")}
TARGET_MEAN = {"stable": 1.1, "drift": 2.0}


def invoice_sheet(path: Path, count: int) -> Path:
    sheet_rows: list[dict[str, Any]] = []
    for n, values in enumerate(rows(count)):
        # spread over the corridor's range, small and large mixed, both rate directions
        whole = 10 + (n * 7919 * 13) % 499_900
        cents = (n * 37) % 100
        values.update(amount=None, target_amount=Decimal(whole) + Decimal(cents) / 100,
                      source_currency="USD" if n % 3 == 0 else "NGN")
        sheet_rows.append(values)
    return write_sheet(path, sheet_rows, HEADERS + ["target_amount"])


def results(path: Path) -> list[dict[str, Any]]:
    wb = openpyxl.load_workbook(path, read_only=True)
    try:
        lines = list(wb["Results"].iter_rows(values_only=True))
    finally:
        wb.close()
    return [dict(zip(lines[0], line, strict=False)) for line in lines[1:]]


def run_case(name: str, count: int, options: tuple[str, ...], work: Path,
             short_mode: bool) -> list[str]:
    sheet = invoice_sheet(work / f"{name}.xlsx", count)
    out = work / f"{name}-dry.xlsx"
    with sandbox_process("--latency-ms", "1", *options) as url:
        env = runner_env(url, work / f"{name}.sqlite3")
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "batchpay", "run", str(sheet), "--dry-run", "--quiet",
             "--concurrency", "4", "--out", str(out)],
            env=env, cwd=work, capture_output=True, text=True, timeout=1800, check=False)
        seconds = time.perf_counter() - started
    if done.returncode not in (0, 1):
        raise SystemExit(f"{name}: batchpay exited {done.returncode}: {done.stderr}")
    found = results(out)
    quoted = [r for r in found if r["quotes_used"]]
    used = [int(r["quotes_used"]) for r in quoted]
    short = sum(Decimal(str(r["delivered_amount"])) < Decimal(str(r["target_amount"]))
                for r in quoted)
    over = sum(Decimal(str(r["delivered_amount"])) - Decimal(str(r["target_amount"]))
               > BOUND[r["source_currency"]] for r in quoted)
    failed = sum(r["status"] == "QUOTE_FAILED" for r in found)
    mean = sum(used) / len(used) if used else float("nan")
    print(f"case={name} rows={count} mean_quotes={mean:.2f} max_quotes={max(used, default=0)}"
          f" short={short} over_bound={over} quote_failed={failed} s={seconds:.1f}", flush=True)
    wrong = []
    if short or over or failed or not quoted:
        wrong.append("rows short of their invoice, over the bound, failed or none quoted")
    if not short_mode and not mean <= TARGET_MEAN[name]:
        wrong.append(f"mean quotes {mean:.2f} above the target {TARGET_MEAN[name]}")
    return wrong


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--short", action="store_true")
    args = parser.parse_args()
    count = 60 if args.short else args.rows
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        missed = [f"{name}: {why}"
                  for name, options in (("stable", ()), ("drift", ("--rate-drift", "0.002")))
                  for why in run_case(name, count, options, work, args.short)]
    for why in missed:
        print(f"target missed: {why}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
