"""Time in tests, tied to what is measured, never a fixed fraction of a second.

A test that waits for something to happen polls for it, up to a generous deadline
(`until`, `settled`). A test that must see that something does *not* happen watches for a
window made of what the server has scheduled (a settle time, a retry's backoff) plus a
number of round trips measured to that server just now (`quiet_window`): on a loaded
machine the window grows with the machine's own latency instead of turning into a flaky
test.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import httpx

from tests.support.e2e import TLS, sandbox_payouts

FINAL = {"COMPLETED", "REFUNDED"}


def round_trip(url: str, samples: int = 5) -> float:
    """The median time of a real request to the sandbox at `url` (its stats), in seconds."""
    times = []
    with httpx.Client(verify=TLS, timeout=10) as client:
        for _ in range(samples):
            started = time.perf_counter()
            client.get(f"{url}/_sandbox/stats").raise_for_status()
            times.append(time.perf_counter() - started)
    return statistics.median(times)


def quiet_window(url: str, *, scheduled: float = 0.0, trips: int = 20) -> float:
    """How long to watch for something that must not come: what the server has scheduled
    to happen by then (`scheduled` seconds) plus `trips` round trips measured now."""
    return scheduled + trips * round_trip(url)


def until(done: Callable[[], bool], seconds: float = 10.0, every: float = 0.02) -> bool:
    """Poll `done` until it is true or `seconds` have passed; whether it came true."""
    deadline = time.monotonic() + seconds
    while not done():
        if time.monotonic() > deadline:
            return False
        time.sleep(every)
    return True


def settled(url: str, seconds: float = 20.0) -> None:
    """Wait until every payout the sandbox at `url` holds is final (COMPLETED, or FAILED and
    its refund credited: REFUNDED)."""
    assert until(lambda: all(p["state"] in FINAL for p in sandbox_payouts(url)), seconds,
                 every=0.05), [p["state"] for p in sandbox_payouts(url)]
