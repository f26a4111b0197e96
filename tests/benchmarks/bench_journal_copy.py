"""Benchmark `batchpay journal copy`: a SQLite journal moved into PostgreSQL, its chain
checked before and after.

    python tests/benchmarks/bench_journal_copy.py [--refs 2500]
    python tests/benchmarks/bench_journal_copy.py --short      # 500 refs, for CI

Builds a SQLite journal of N paid payout_refs (4 events each: 2,500 refs are 10,000
events), starts a PostgreSQL cluster of its own in a temporary folder (as
tests/support/postgres.py does), copies the journal into it (`moving.copy_journal`: check
the source, copy every table in one transaction, check the target, commit), then checks
the copy again through a new connection. Prints:
    refs=2500 events=10000 copy_s=3.1 verify_s=0.6 same_head=yes
and exits 1 unless the copy has the source's chain head.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: tests.support

from batchpay.journal.integrity import check  # noqa: E402
from batchpay.journal.moving import copy_journal  # noqa: E402
from batchpay.journal.store import Journal  # noqa: E402
from tests.benchmarks.bench_integrity import build  # noqa: E402  (the same journal)
from tests.support.postgres import Cluster  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--refs", type=int, default=2500)
    parser.add_argument("--short", action="store_true")
    args = parser.parse_args()
    refs = 500 if args.short else args.refs
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["BATCHPAY_CHAIN_KEY"] = str(Path(tmp) / "chain.key")  # not the user's
        path = Path(tmp) / "journal.sqlite3"
        build(path, refs)
        cluster = Cluster()
        try:
            url = cluster.journal_url()
            with Journal(path) as source:
                started = time.perf_counter()
                moved = copy_journal(source, url)
                copy_s = time.perf_counter() - started
            with Journal(url) as target:
                started = time.perf_counter()
                again = check(target, head=moved.head)
                verify_s = time.perf_counter() - started
        finally:
            cluster.stop()
    same = again.ok and again.head == moved.head and again.events == moved.events
    print(f"refs={refs} events={moved.events} copy_s={copy_s:.2f} verify_s={verify_s:.2f} "
          f"same_head={'yes' if same else 'no'}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
