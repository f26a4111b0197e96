"""Pacing: even spacing at --max-rps and sliding windows, with a fake clock and for real."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Coroutine
from typing import Any, TypeVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from batchpay.errors import UsageError
from batchpay.provider.pacing import RPS_MARGIN_SECONDS, Pacer, parse_windows

T = TypeVar("T")


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def send_times(pacer: Pacer, clock: FakeClock, arrivals: list[float]) -> list[float]:
    """When each request would leave, if the requests arrive at these times."""
    sent = []
    for arrival in arrivals:
        clock.now = arrival
        sent.append(arrival + pacer.reserve())
    return sent


def most_in_any_interval(times: list[float], seconds: float) -> int:
    """The largest number of times within any half-open interval of that length."""
    ordered = sorted(times)
    best, first = 0, 0
    for last, t in enumerate(ordered):
        while ordered[first] <= t - seconds:
            first += 1
        best = max(best, last - first + 1)
    return best


def test_max_rps_spaces_every_request_evenly() -> None:
    clock = FakeClock()
    pacer = Pacer(max_rps=4, clock=clock)
    sent = send_times(pacer, clock, [1000.0] * 8)
    assert sent[:4] == [1000.0, 1000.25, 1000.5, 1000.75]
    assert all(b - a >= 0.25 for a, b in zip(sent, sent[1:], strict=False))
    # never more than 4 in any second, even a second measured 40 ms late...
    assert most_in_any_interval(sent, 1.0 + RPS_MARGIN_SECONDS) <= 4
    # ...and no more than that margin of the budget is given up
    assert sent[-1] - sent[0] == pytest.approx(7 * 0.25 + RPS_MARGIN_SECONDS)


def test_after_a_pause_the_next_request_goes_at_once() -> None:
    clock = FakeClock()
    pacer = Pacer(max_rps=2, clock=clock)
    assert send_times(pacer, clock, [1000.0, 1000.0, 1010.0]) == [1000.0, 1000.5, 1010.0]


def test_five_per_second_never_exceeds_five_in_any_second() -> None:
    clock = FakeClock()
    pacer = Pacer(windows="5/sec", margin=0, clock=clock)
    sent = send_times(pacer, clock, [1000.0] * 23)
    assert most_in_any_interval(sent, 1.0) == 5
    assert sent[:5] == [1000.0] * 5 and sent[5] == 1001.0


def test_the_documented_windows_hold_a_long_batch() -> None:
    clock = FakeClock()
    pacer = Pacer(windows="100/min,1000/hour,10000/day", clock=clock)
    sent = send_times(pacer, clock, [1000.0 + n * 0.1 for n in range(1200)])
    assert most_in_any_interval(sent, 60) <= 100
    assert most_in_any_interval(sent, 3600) <= 1000
    assert sent[100] >= 1060.0  # the 101st waits for the minute
    assert sent[1000] >= 4600.0  # the 1001st waits for the hour


def test_windows_switch_off_for_the_sandbox() -> None:
    clock = FakeClock()
    pacer = Pacer(windows="2/min", clock=clock)
    pacer.windows_enabled = False
    assert send_times(pacer, clock, [1000.0] * 10) == [1000.0] * 10
    assert not pacer.active


@settings(max_examples=60, deadline=None)
@given(
    gaps=st.lists(st.floats(min_value=0, max_value=0.7), min_size=1, max_size=60),
    limit=st.integers(min_value=1, max_value=6),
    seconds=st.sampled_from([0.5, 1.0, 3.0]),
    max_rps=st.sampled_from([0.0, 2.0, 10.0]),
)
def test_any_arrival_pattern_keeps_window_and_spacing(gaps: list[float], limit: int,
                                                     seconds: float, max_rps: float) -> None:
    clock = FakeClock()
    pacer = Pacer(max_rps=max_rps, windows=f"{limit}/{seconds}s", margin=0, clock=clock)
    arrivals = [1000.0 + sum(gaps[: n + 1]) for n in range(len(gaps))]
    sent = send_times(pacer, clock, arrivals)
    assert all(s >= a for s, a in zip(sent, arrivals, strict=True))
    assert sent == sorted(sent)
    assert most_in_any_interval(sent, seconds) <= limit
    if max_rps:
        assert all(b - a >= 1 / max_rps - 1e-9 for a, b in zip(sent, sent[1:], strict=False))


def test_real_time_max_rps_20_across_concurrent_tasks() -> None:
    pacer = Pacer(max_rps=20)
    stamps: list[float] = []

    async def one() -> None:
        await pacer.acquire()
        stamps.append(time.monotonic())

    started: list[float] = []

    async def scenario() -> float:
        started.append(time.monotonic())
        await asyncio.gather(*(one() for _ in range(10)))
        return time.monotonic() - started[0]

    elapsed = run(scenario())
    assert elapsed >= 0.45
    stamps.sort()
    # the n-th acquire returns no earlier than n slots of 1/20 s after the start (a busy
    # machine may run a task late, never early: only the lower bound is a property)
    assert all(stamp - started[0] >= n * 0.05 - 0.005 for n, stamp in enumerate(stamps))


def test_real_time_window_is_never_exceeded() -> None:
    pacer = Pacer(windows="3/0.5s")
    stamps: list[float] = []

    async def one() -> None:
        await pacer.acquire()
        stamps.append(time.monotonic())

    async def scenario() -> None:
        await asyncio.gather(*(one() for _ in range(9)))

    run(scenario())
    assert most_in_any_interval(stamps, 0.5) <= 3
    assert max(stamps) - min(stamps) >= 1.0


def test_no_pacing_means_no_wait() -> None:
    pacer = Pacer()
    assert not pacer.active
    started = time.monotonic()

    async def scenario() -> None:
        await asyncio.gather(*(pacer.acquire() for _ in range(200)))

    run(scenario())
    assert time.monotonic() - started < 1.0  # paced at even 200 a second, they would take 1 s


@pytest.mark.parametrize(("text", "expected"), [
    ("100/min,1000/hour,10000/day", [(100, 60.0), (1000, 3600.0), (10000, 86400.0)]),
    ("5/sec", [(5, 1.0)]), ("5/s", [(5, 1.0)]), ("3/10s", [(3, 10.0)]),
    (" 2 / minutes ", [(2, 60.0)]), ("7/1.5h", [(7, 5400.0)]), ("", []), (None, []),
])
def test_windows_parse(text: str | None, expected: list[tuple[int, float]]) -> None:
    assert [(w.limit, w.seconds) for w in parse_windows(text)] == expected


@pytest.mark.parametrize("text", ["fast", "100", "0/min", "5/year", "5/0min", "-1/min",
                                  "100/min,,1000/hour", "1.5/min"])
def test_bad_windows_are_a_usage_error(text: str) -> None:
    with pytest.raises(UsageError) as caught:
        Pacer(windows=text)
    assert "100/min,1000/hour,10000/day" in (caught.value.hint or "")


@pytest.mark.parametrize("rate", [-1, float("nan"), float("inf")])
def test_bad_max_rps_is_a_usage_error(rate: float) -> None:
    with pytest.raises(UsageError):
        Pacer(max_rps=rate)


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)
