"""Crash-safety soak: SIGKILL the runner at random moments, many times; nothing is paid twice.

    python tests/benchmarks/soak_crash.py [--trials 1000] [--rows 12] [--seed 20261121]
    python tests/benchmarks/soak_crash.py --short      # 2 trials, for CI

The long form of tests/engine/test_exactly_once.py::test_sigkill_at_random_moments_never_pays_twice.
One sandbox process (latency 15 ms, settle 0.2 s, state on disk) serves every trial; per
trial it is reset, `batchpay run SHEET --wait 0 --concurrency 4` starts on a fresh journal
and is killed with SIGKILL once a random number of intents (1..rows) is journaled, plus
0-30 ms; then `batchpay run SHEET --wait 10` runs to the end. Each valid row must then
have exactly one payout at the sandbox (counted there, not by the client), appear once in
the results, and be COMPLETED.

Prints progress every `--every` trials and a summary:
    trials=1000 duplicates=0 missing=0 failed_final_runs=0 killed_before_end=987 s_per_trial=3.1
Exits 1 on any duplicate payout, missing payout, failed final run or results that are not
one COMPLETED row per sheet row (the trial's files are then kept and their folder printed).
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from bench_engine import reset, sandbox_get

from tests.support.e2e import results
from tests.support.processes import kill_when, runner_env, sandbox_process, start_runner
from tests.support.sheets import rows, write_sheet


@dataclass
class Trial:
    duplicates: int  # payouts beyond the first for one account
    missing: int  # rows with no payout at all
    final_exit: int
    killed: bool  # the first run was killed before it ended by itself
    problem: str


def trial(url: str, work: Path, number: int, count: int, rng: random.Random) -> Trial:
    reset(url)
    sheet_rows = rows(count, start=number * 100)
    sheet = write_sheet(work / "sheet.xlsx", sheet_rows)
    journal = work / "journal.sqlite3"
    env = runner_env(url, journal)
    first = start_runner("run", str(sheet), "--wait", "0", "--concurrency", "4", "--quiet",
                         env=env, cwd=work)
    killed = kill_when(first, journal, rng.randint(1, count), rng.uniform(0, 0.03))
    out = work / "final.xlsx"
    final = start_runner("run", str(sheet), "--wait", "10", "--out", str(out), "--quiet",
                         env=env, cwd=work)
    _, stderr = final.communicate(timeout=120)
    paid = Counter(p["accountNumber"] for p in sandbox_get(url, "payouts")["data"])
    wanted = Counter(r["account_number"] for r in sheet_rows)
    duplicates = sum((paid - wanted).values())
    missing = sum((wanted - paid).values())
    problem = ""
    if final.returncode != 0:
        problem = f"final run exit {final.returncode}: {stderr[-1500:]}"
    elif out.exists():
        shown = Counter(str(r["payout_ref"]) for r in results(out))
        statuses = Counter(str(r["status"]) for r in results(out))
        if shown != Counter(r["payout_ref"] for r in sheet_rows):
            problem = f"results rows differ from the sheet: {shown}"
        elif set(statuses) != {"COMPLETED"}:
            problem = f"not all COMPLETED: {dict(statuses)}"
    return Trial(duplicates, missing, final.returncode, killed, problem)


def summary(done: list[Trial], seconds: float) -> str:
    return (f"trials={len(done)} duplicates={sum(t.duplicates for t in done)} "
            f"missing={sum(t.missing for t in done)} "
            f"failed_final_runs={sum(t.final_exit != 0 for t in done)} "
            f"other_problems={sum(bool(t.problem) and t.final_exit == 0 for t in done)} "
            f"killed_before_end={sum(t.killed for t in done)} "
            f"s_per_trial={seconds / max(len(done), 1):.2f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=1000)
    parser.add_argument("--rows", type=int, default=12)
    parser.add_argument("--seed", type=int, default=20261121)
    parser.add_argument("--every", type=int, default=10, help="print progress every N trials")
    parser.add_argument("--short", action="store_true", help="2 trials")
    args = parser.parse_args(argv)
    trials = 2 if args.short else args.trials
    rng = random.Random(args.seed)
    done: list[Trial] = []
    bad = 0
    started = time.perf_counter()
    root = Path(tempfile.mkdtemp(prefix="soak-crash-"))
    try:
        with sandbox_process("--latency-ms", "15", "--settle-seconds", "0.2",
                             state=root / "sandbox.sqlite3") as url:
            for number in range(trials):
                work = root / f"trial{number}"
                work.mkdir()
                outcome = trial(url, work, number, args.rows, rng)
                done.append(outcome)
                if outcome.duplicates or outcome.missing or outcome.problem:
                    bad += 1
                    print(f"trial {number}: duplicates={outcome.duplicates} "
                          f"missing={outcome.missing} {outcome.problem} (files kept in {work})",
                          flush=True)
                else:
                    shutil.rmtree(work)
                if (number + 1) % args.every == 0 or number + 1 == trials:
                    print(f"progress {summary(done, time.perf_counter() - started)}", flush=True)
    finally:
        if not bad:
            shutil.rmtree(root, ignore_errors=True)
    print(summary(done, time.perf_counter() - started), flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
