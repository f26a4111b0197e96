"""Benchmark the shared request budget: what one booking costs, on each store.

    python tests/benchmarks/bench_budget.py [--bookings 2000]
    python tests/benchmarks/bench_budget.py --short      # 200 bookings, for CI

Every request to a service with windows books its send time in the journal's database
(batchpay.journal.budget) before it leaves: one short transaction. Against a real service
the windows allow 100 requests a minute, so a booking may take milliseconds; this prints
how many, with the provider's windows (100/min, 1,000/hour, 10,000/day: the bookings land
further and further in the future, and every one reads the day window's 10,000th-latest),
for a SQLite journal file and for a PostgreSQL journal (a cluster of its own in a temporary
folder, over a Unix socket, as tests/support/postgres.py starts it):
    store=sqlite bookings=2000 ms_per_booking=1.04
    store=postgresql bookings=2000 ms_per_booking=7.48
(a 2-core machine under a load of 17: a minute's window allows one request per 0.6 s).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: tests.support

from batchpay.journal.budget import SharedBudget  # noqa: E402
from batchpay.journal.store import Journal  # noqa: E402
from tests.support.postgres import Cluster  # noqa: E402

WINDOWS = [(100, 60.0), (1000, 3600.0), (10000, 86400.0)]


def per_booking(where: str, bookings: int) -> float:
    budget = SharedBudget(where, "bench-key")
    try:
        started = time.perf_counter()
        for _ in range(bookings):
            budget.reserve(WINDOWS, 0.05)
        return (time.perf_counter() - started) / bookings
    finally:
        budget.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bookings", type=int, default=2000)
    parser.add_argument("--short", action="store_true", help="200 bookings")
    args = parser.parse_args()
    n = 200 if args.short else args.bookings
    with tempfile.TemporaryDirectory(prefix="bench-budget-") as tmp:
        journal = Path(tmp) / "journal.sqlite3"
        Journal(journal).close()  # a journal file as a run finds it (WAL mode)
        seconds = per_booking(str(journal), n)
        print(f"store=sqlite bookings={n} ms_per_booking={seconds * 1000:.2f}", flush=True)
    cluster = Cluster()
    try:
        seconds = per_booking(cluster.journal_url(), n)
        print(f"store=postgresql bookings={n} ms_per_booking={seconds * 1000:.2f}", flush=True)
    finally:
        cluster.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
