"""Benchmark the check every run, rerun and sync makes before sending: the journal's hash
chain, and its ledger and payout requests replayed from the chain.

    python tests/benchmarks/bench_integrity.py [--refs 10000]
    python tests/benchmarks/bench_integrity.py --short      # 500 refs, for CI

Builds a journal of N paid payout_refs (intent, answer, two webhook states each: 4 events
per ref), then times `integrity.check`. Prints:
    refs=10000 events=40001 journal_mb=21.3 check_s=0.42
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from batchpay.journal.integrity import check
from batchpay.journal.store import Journal


def build(path: Path, refs: int) -> None:
    with Journal(path) as j, j.transaction(durable=True):
        for n in range(refs):
            ref = f"R-{n:06d}"
            details = f'{{"account_number":"6222{n:015d}","amount":"1000.00"}}'
            body = {"quoteId": f"q{n}", "reason": "goods",
                    "recipient": {"account": {"accountNumber": f"6222{n:015d}"}}}
            attempt = j.record_intent(ref, "run-1", details, {"id": f"q{n}"}, body, 9e9,
                                      amount="1000.00", source_currency="NGN",
                                      target_currency="CNY")
            j.record_answer(attempt, "accepted", status="PENDING", run_id="run-1",
                            payout_id=f"p{n}", reference_number=f"REF{n:010d}")
            for state in ("PROCESSING", "COMPLETED"):
                j.apply_state(ref, state, source="webhook", payout_id=f"p{n}", quote_id=f"q{n}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--refs", type=int, default=10000)
    parser.add_argument("--short", action="store_true")
    args = parser.parse_args()
    refs = 500 if args.short else args.refs
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "journal.sqlite3"
        build(path, refs)
        with Journal(path) as j:
            started = time.perf_counter()
            result = check(j)
            elapsed = time.perf_counter() - started
        size = path.stat().st_size + Path(str(path) + "-wal").stat().st_size \
            if Path(str(path) + "-wal").exists() else path.stat().st_size
    print(f"refs={refs} events={result.events} journal_mb={size / 2**20:.1f} "
          f"check_s={elapsed:.2f}")
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
