"""Benchmark the check of the service's own payout list before paying: requests and seconds.

    python tests/benchmarks/bench_service_ledger.py [--history 3000] [--limit 100/min]
                                                    [--days 62]
    python tests/benchmarks/bench_service_ledger.py --short      # 300 payouts, for CI

A sandbox (in a thread, rate-limited with `--rate-limit LIMIT`: 429 beyond it) is seeded
with HISTORY payouts made by someone else, all within the window read (`--days`, the
default of service_check_days; what the list costs is the payouts in the window: 3,000 a
month is about 6,200 in 62 days). The list is then read as a run reads it before paying
(engine.service_ledger), through the client and its pacing, in two ways:

  windows  the provider's sliding windows kept by the client (what a run does against the
           real service): a fresh budget lets the pages go at once;
  even     --max-rps at the limit (LIMIT spread evenly): the slowest a run spaces them.

and a third time with the window's budget already spent by the run's other requests
(`spent`: a full window, the worst case). Prints one line per way:
    way=windows history=3000 days=62 limit=100/min requests=32 seconds=0.9 429s=0 held_refs=3000
and exits 1 when a 429 was answered or the requests differ from what the list's documented
reading costs (`expected_requests`): one page of PENDING (the history has settled), then
COMPLETED, which the sandbox lists oldest first: its first page, then every page from the
newest back to the first again (the whole history is within the window).
"""

from __future__ import annotations

import argparse
import asyncio
import math
import sys
import time
from collections.abc import Callable
from decimal import Decimal

import httpx

from batchpay.engine.service_ledger import read_service_ledger
from batchpay.journal.store import Journal
from batchpay.provider.client import PayoutClient
from batchpay.provider.pacing import Pacer, parse_windows
from batchpay.sandbox.config import SandboxConfig
from batchpay.sandbox.server import start_in_thread
from batchpay.settings.model import Settings


class KeptWindows(Pacer):
    """The provider's windows, kept although the sandbox says it is one (the client turns
    them off for the sandbox, which has no limits of its own; this one has)."""

    @property  # type: ignore[override]
    def windows_enabled(self) -> bool:
        return True

    @windows_enabled.setter
    def windows_enabled(self, value: bool) -> None:
        pass


def seed(running: object, history: int) -> None:
    state = running.state  # type: ignore[attr-defined]
    state.set_wallet("NGN", Decimal(10) ** 12)
    for n in range(history):
        quote = state.create_quote("BANK_TRANSFER", Decimal(100000 + n), "NGN", "NG", "CNY", "CN")
        state.create_payout({
            "quoteId": quote["id"], "reason": "earlier", "remark": f"ref:H-{n:06d}",
            "recipient": {"name": f"earlier {n}", "type": "INDIVIDUAL", "currency": "CNY",
                          "country": "CN", "paymentChannel": "BANK_TRANSFER",
                          "account": {"accountNumber": f"99{n:017d}", "bankName": "中国银行"}}})


async def scan(url: str, key: str, pacer: Pacer, days: int) -> tuple[int, float, int]:
    with Journal(":memory:") as journal:
        async with PayoutClient(url, key, pacer=pacer, concurrency=1) as client:
            started = time.perf_counter()
            ledger = await read_service_ledger(client, journal, days=days, repeat_days=20,
                                               max_pages=200)
            seconds = time.perf_counter() - started
            return client.requests_sent, seconds, len(ledger.by_ref)


def expected_requests(history: int) -> int:
    pages = max(1, math.ceil(history / 100))
    return 1 + 1 + (pages if pages > 1 else 0)


def refused(url: str) -> int:
    counts = httpx.get(f"{url}/_sandbox/stats", timeout=10).json()["requests"]
    return int(sum(n for name, n in counts.items() if "429" in name))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--history", type=int, default=3000)
    parser.add_argument("--limit", default="100/min")
    parser.add_argument("--days", type=int, default=Settings.service_check_days)
    parser.add_argument("--short", action="store_true")
    parser.add_argument("--no-spent", action="store_true", help="skip the full-window case")
    args = parser.parse_args()
    history = 300 if args.short else args.history
    [window] = parse_windows(args.limit)
    per_second = window.limit / window.seconds
    config = SandboxConfig(port=0, rate_limit=args.limit, settle_seconds=0.1)
    running = start_in_thread(config)
    failed = False
    try:
        started = time.perf_counter()
        seed(running, history)
        print(f"seeded history={history} in {time.perf_counter() - started:.1f} s")
        # the history settled (the documented reading counts one page of PENDING): the
        # last payouts seeded are PENDING for settle_seconds
        time.sleep(config.settle_seconds * 2)
        def spent() -> Pacer:
            pacer = KeptWindows(windows=args.limit)
            for _ in range(window.limit):  # the run's own requests used the whole window
                pacer.reserve()
            return pacer

        ways: list[tuple[str, Callable[[], Pacer]]] = [
            ("windows", lambda: KeptWindows(windows=args.limit)),
            ("even", lambda: Pacer(max_rps=per_second))]
        if not args.short and not args.no_spent:
            ways.append(("spent", spent))
        used, expected = 0, expected_requests(history)
        for name, make in ways:
            if used + expected > window.limit:  # the sandbox's window must be empty again
                time.sleep(window.seconds + 1)
                used = 0
            pacer = make()
            before = refused(running.url)
            requests, seconds, held = asyncio.run(scan(running.url, running.api_key, pacer,
                                                           args.days))
            answered_429 = refused(running.url) - before
            used += requests
            print(f"way={name} history={history} days={args.days} limit={args.limit} "
                  f"requests={requests} seconds={seconds:.1f} 429s={answered_429} "
                  f"held_refs={held}")
            failed |= answered_429 > 0 or requests != expected
    finally:
        running.stop()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
