"""Benchmark closing the books: every export of a month of N payouts, and its reconciliation
against the sandbox's transaction list over real HTTP.

    python tests/benchmarks/bench_books.py [--payouts 10000]
    python tests/benchmarks/bench_books.py --short      # 200 payouts, for CI

Pays N payouts at a sandbox (in its own books, without HTTP: quotes and payouts committed
as its API would), one in fifty with remark "fail" (FAILED, then REFUNDED), and writes a
journal of the same payouts (intent, answer, final states), then times each export and one
`reconcile` (four states, every page of the list, 100 a page): wall and CPU seconds (on a
shared machine the CPU figure is the steadier one). Prints one line:
    payouts=10000 movements=20200 ofx_s=.. ofx_cpu_s=.. xero_s=.. ... reconcile_s=..
    reconcile_cpu_s=.. list_requests=.. matched=20200 unmatched=0
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

from batchpay.days import Period
from batchpay.engine.exports import FORMATS, export_books
from batchpay.engine.reconcile import reconcile_period
from batchpay.journal.store import Journal
from batchpay.sandbox.checks import check_payout_request
from batchpay.sandbox.config import SandboxConfig
from batchpay.sandbox.server import RunningSandbox, start_in_thread
from batchpay.service import Service
from batchpay.settings.model import Books, Settings


def body(quote_id: str, n: int) -> dict[str, Any]:
    return {"quoteId": quote_id, "reason": f"Invoice {n}", "remark":
            "fail" if n % 50 == 0 else f"ref:R-{n:06d}",
            "recipient": {"name": f"张{n}", "type": "INDIVIDUAL", "paymentChannel":
                          "BANK_TRANSFER", "currency": "CNY", "country": "CN",
                          "account": {"accountNumber": f"6222{n:015d}", "bankName": "中国工商银行",
                                      "bankCity": "深圳"}}}


def pay(running: RunningSandbox, journal_path: Path, payouts: int) -> None:
    state = running.state
    with Journal(journal_path) as j, j.transaction(durable=True):
        j.bind_service(running.url)
        for n in range(payouts):
            quote = state.create_quote("BANK_TRANSFER", Decimal(100000 + n), "NGN", "NG",
                                       "CNY", "CN")
            sent = body(quote["id"], n)
            paid = state.create_payout(check_payout_request(sent))
            ref = f"R-{n:06d}"
            details = f'{{"account_number":"6222{n:015d}","recipient_name":"张{n}"}}'
            attempt = j.record_intent(
                ref, "run-1", details, dict(quote), sent, 9e9,
                amount=str(quote["source"]["amount"]), fee=str(quote["fee"]["amount"]),
                total_debit=str(quote["summary"]["total"]),
                target_amount=str(quote["target"]["amount"]), source_currency="NGN",
                target_currency="CNY")
            j.record_answer(attempt, "accepted", status="PENDING", run_id="run-1",
                            payout_id=paid["id"], reference_number=paid["referenceNumber"])
            ends = ("FAILED", "REFUNDED") if n % 50 == 0 else ("PROCESSING", "COMPLETED")
            for end in ends:
                j.apply_state(ref, end, source="webhook", payout_id=paid["id"],
                              quote_id=quote["id"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--payouts", type=int, default=10000)
    parser.add_argument("--short", action="store_true")
    args = parser.parse_args()
    payouts = 200 if args.short else args.payouts
    today = datetime.now(UTC).date()
    period = Period(today, today, "UTC")
    running = start_in_thread(SandboxConfig(port=0, settle_seconds=0.01))
    figures: dict[str, str] = {}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            journal = folder / "journal.sqlite3"
            pay(running, journal, payouts)
            time.sleep(0.1)  # every payout final at the sandbox, every refund credited
            movements = 0
            for fmt in FORMATS:
                started, cpu = time.perf_counter(), time.process_time()
                with Journal.existing(journal) as j:
                    done = export_books(j, period, fmt, folder / f"books-{fmt}", Books())
                figures[f"{fmt}_s"] = f"{time.perf_counter() - started:.2f}"
                figures[f"{fmt}_cpu_s"] = f"{time.process_time() - cpu:.2f}"
                movements = done.movements
            settings = Settings(base_url=running.url, api_key=running.api_key, journal=journal)

            @contextmanager
            def connect() -> Iterator[Service]:
                yield Service(running.url, running.api_key, embedded=False)

            started, cpu = time.perf_counter(), time.process_time()
            matched = reconcile_period(settings, period, folder / "reconcile.xlsx", None,
                                       connect)
            figures["reconcile_s"] = f"{time.perf_counter() - started:.2f}"
            # the process's CPU: the sandbox answering the list runs in it too
            figures["reconcile_cpu_s"] = f"{time.process_time() - cpu:.2f}"
    finally:
        running.stop()
    unmatched = len(matched.outside) + len(matched.missing) + len(matched.differ)
    print(f"payouts={payouts} movements={movements} "
          + " ".join(f"{k}={v}" for k, v in figures.items())
          + f" list_requests={matched.requests} matched={len(matched.matched)} "
          f"unmatched={unmatched}")
    return 0 if unmatched == 0 and len(matched.matched) == movements else 1


if __name__ == "__main__":
    sys.exit(main())
