"""Client-side pacing: even spacing (``--max-rps``) and the provider's sliding windows.

The service allows 100 requests a minute, 1,000 an hour and 10,000 a day per key and
answers 429 beyond that. Provoking a 429 costs a request and a wait, so the client keeps
the same windows itself and never sends the request that would exceed one. The sandbox
has no such limits, so the client switches the windows off (``windows_enabled``) once a
response carries the sandbox header.

Every ``acquire`` reserves a send time synchronously (no ``await`` between reading and
writing the schedule), which makes the schedule consistent across all tasks of one event
loop without a lock; the task then sleeps until its time.

The windows are per key, not per process: with ``shared`` (the journal's request budget,
batchpay.journal.budget) they are booked there instead, where every process and host using
the key books too; even spacing (``--max-rps``) stays this process's own.
"""

from __future__ import annotations

import asyncio
import math
import re
import time
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from batchpay.errors import UsageError

UNIT_SECONDS = {
    "s": 1.0, "sec": 1.0, "second": 1.0,
    "m": 60.0, "min": 60.0, "minute": 60.0,
    "h": 3600.0, "hour": 3600.0,
    "d": 86400.0, "day": 86400.0,
}
WINDOW_SYNTAX = re.compile(r"^\s*(\d+)\s*/\s*(\d*\.?\d*)\s*([a-z]+?)s?\s*$", re.IGNORECASE)
WINDOWS_HINT = "Write limits like 100/min,1000/hour,10000/day (units: sec, min, hour, day)."


@dataclass
class Window:
    """At most ``limit`` requests in any ``seconds``-long interval."""

    limit: int
    seconds: float
    sent: deque[float] = field(default_factory=deque, repr=False)

    def earliest(self, now: float, margin: float) -> float:
        """The first time a new request keeps the window; forgets sends that left it."""
        while self.sent and self.sent[0] <= now - self.seconds - margin:
            self.sent.popleft()
        if len(self.sent) < self.limit:
            return now
        # the limit-th most recent send must have left the window (plus a margin for
        # clock and network differences between us and the service)
        oldest = self.sent[-self.limit]
        at = oldest + self.seconds + margin
        while at - self.seconds < oldest:  # float rounding must not put it back inside
            at = math.nextafter(at, math.inf)
        return at


def parse_windows(text: str | None) -> list[Window]:
    """``"100/min,1000/hour"`` → windows; empty or None → none. Bad text → UsageError."""
    if text is None or not text.strip():
        return []
    windows = []
    for part in text.split(","):
        match = WINDOW_SYNTAX.match(part)
        unit = match and UNIT_SECONDS.get(match.group(3).lower())
        if not match or not unit:
            raise UsageError(f"Cannot read the rate limit {part.strip()!r} in {text!r}.",
                             hint=WINDOWS_HINT)
        limit = int(match.group(1))
        multiple = float(match.group(2)) if match.group(2) not in ("", ".") else 1.0
        if limit < 1 or multiple <= 0:
            raise UsageError(f"The rate limit {part.strip()!r} must allow at least one "
                             "request in a period longer than zero.", hint=WINDOWS_HINT)
        windows.append(Window(limit=limit, seconds=multiple * unit))
    return windows


class SharedWindows(Protocol):
    """Send times booked where every process using the key books (blocking calls)."""

    def reserve(self, windows: Sequence[tuple[int, float]], margin: float) -> float: ...

    def close(self) -> None: ...


RPS_MARGIN_SECONDS = 0.04  # what a second of --max-rps leaves for jitter: 4% of the budget


class Pacer:
    """Spaces requests evenly at ``max_rps`` and keeps every sliding window.

    ``windows_enabled`` is turned off by the client when the service is the sandbox.
    ``clock`` and ``sleep`` can be replaced in tests.
    """

    def __init__(
        self,
        max_rps: float = 0,
        windows: str | None = None,
        *,
        margin: float = 0.05,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        shared: SharedWindows | None = None,
    ) -> None:
        if not isinstance(max_rps, int | float) or math.isnan(max_rps) or max_rps < 0 \
                or math.isinf(max_rps):
            raise UsageError(f"--max-rps must be a number of requests per second, 0 or more "
                             f"(got {max_rps!r}).", hint="Use 0 for no pacing, e.g. --max-rps 2.5.")
        self.max_rps = float(max_rps)
        self.windows = parse_windows(windows)
        self.windows_enabled = True
        self.margin = margin
        self._clock = clock
        self._sleep = sleep
        self.shared = shared
        self._next_even_slot = -math.inf
        self._last_reserved = -math.inf
        # even spacing alone lets jitter put R+1 requests into one second of the service's
        # sliding window; this window keeps every second at R with a small margin
        self._rps_window = (Window(limit=math.ceil(self.max_rps),
                                   seconds=math.ceil(self.max_rps) / self.max_rps)
                            if self.max_rps > 0 else None)

    def __repr__(self) -> str:
        windows = ",".join(f"{w.limit}/{w.seconds:g}s" for w in self.windows)
        return (f"Pacer(max_rps={self.max_rps:g}, windows={windows!r}, "
                f"windows_enabled={self.windows_enabled})")

    @property
    def active(self) -> bool:
        return self.max_rps > 0 or (self.windows_enabled and bool(self.windows))

    def reserve(self) -> float:
        """Book the next send time and return how long to wait for it (0 = now)."""
        if not self.active:
            return 0.0
        now = self._clock()
        at = max(now, self._last_reserved)  # first come, first served
        windows = ([(w, self.margin) for w in self.windows]
                   if self.windows_enabled and self.shared is None else [])
        if self._rps_window is not None:
            at = max(at, self._next_even_slot)
            windows.append((self._rps_window, RPS_MARGIN_SECONDS))
        for window, margin in windows:
            at = max(at, window.earliest(now, margin))
        for window, _ in windows:
            window.sent.append(at)
        if self._rps_window is not None:
            self._next_even_slot = at + 1.0 / self.max_rps
        self._last_reserved = at
        return at - now

    async def acquire(self) -> None:
        """Wait until this request may be sent without a burst or a broken window."""
        delay = self.reserve()
        if self.shared is not None and self.windows_enabled and self.windows:
            if delay > 0:  # this process's even spacing first, then the key's windows
                await self._sleep(delay)
            # a database round trip: off the event loop, so other requests go meanwhile; the
            # time to send is fixed where the booking returns, so that the hop back to the
            # loop is not added to the wait (a late request crowds the ones booked after it)
            shared, windows = self.shared, [(w.limit, w.seconds) for w in self.windows]
            send_at = await asyncio.to_thread(
                lambda: self._clock() + shared.reserve(windows, self.margin))
            delay = send_at - self._clock()
        if delay > 0:
            await self._sleep(delay)

    def close(self) -> None:
        """Let go of the shared budget's connection (the client's ``aclose`` calls this)."""
        if self.shared is not None:
            self.shared.close()
