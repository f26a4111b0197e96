"""Benchmark `batchpay statement`: a month's statement of a journal of N payouts.

    python tests/benchmarks/bench_statement.py [--refs 5000]
    python tests/benchmarks/bench_statement.py --short      # 500 refs, for CI

Builds a journal of N payout_refs paid in one run (intent, answer, two webhook states
each), one in fifty failed and refunded, then times building the statement (chain and
tables checked, requests replayed from the chain) and writing its workbook. Prints:
    refs=5000 events=20001 build_s=0.40 write_s=0.30 lines=5000 refunds=100
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from batchpay.engine.statement import build_statement
from batchpay.engine.statement_book import write_statement
from batchpay.journal.store import Journal


def build(path: Path, refs: int) -> None:
    with Journal(path) as j, j.transaction(durable=True):
        for n in range(refs):
            ref = f"R-{n:06d}"
            details = f'{{"account_number":"6222{n:015d}","amount":"1000.00"}}'
            body = {"quoteId": f"q{n}", "reason": "goods",
                    "recipient": {"account": {"accountNumber": f"6222{n:015d}"}}}
            attempt = j.record_intent(ref, "run-1", details, {"id": f"q{n}"}, body, 9e9,
                                      amount="1000.00", fee="10.00", total_debit="1010.00",
                                      target_amount="4.35", source_currency="NGN",
                                      target_currency="CNY")
            j.record_answer(attempt, "accepted", status="PENDING", run_id="run-1",
                            payout_id=f"p{n}", reference_number=f"REF{n:010d}")
            ends = ("FAILED", "REFUNDED") if n % 50 == 0 else ("PROCESSING", "COMPLETED")
            for state in ends:
                j.apply_state(ref, state, source="webhook", payout_id=f"p{n}", quote_id=f"q{n}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--refs", type=int, default=5000)
    parser.add_argument("--short", action="store_true")
    args = parser.parse_args()
    refs = 500 if args.short else args.refs
    today = datetime.now(UTC).date()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "journal.sqlite3"
        build(path, refs)
        with Journal(path) as j:
            started = time.perf_counter()
            made = build_statement(j, today.replace(day=1), today)
            built = time.perf_counter() - started
        started = time.perf_counter()
        write_statement(made, Path(tmp) / "statement.xlsx")
        written = time.perf_counter() - started
    print(f"refs={refs} events={made.events} build_s={built:.2f} write_s={written:.2f} "
          f"lines={len(made.lines)} refunds={len(made.refunds)}")
    return 0 if len(made.lines) == refs else 1


if __name__ == "__main__":
    sys.exit(main())
