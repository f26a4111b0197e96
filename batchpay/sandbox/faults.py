"""Fault injection and traffic accounting: rate-limit windows, request counters, dice.

Rate limits are sliding windows ("100/min,1000/hour"). A request the windows admit is
counted in every window whatever its outcome (an injected 500 was still a request the
service received); a request refused with 429, or with 401 before the windows, is not
counted, so a client that waits `Retry-After` seconds gets through.
"""

from __future__ import annotations

import math
import random
import re
import threading
from collections import deque
from dataclasses import dataclass

WINDOW_UNITS: dict[str, float] = {
    "s": 1, "sec": 1, "second": 1, "seconds": 1,
    "min": 60, "minute": 60, "minutes": 60,
    "h": 3600, "hour": 3600, "hours": 3600,
    "d": 86400, "day": 86400, "days": 86400,
}
_WINDOW = re.compile(r"\s*(\d+)\s*/\s*(\d*\.?\d*)\s*([a-z]+)\s*", re.IGNORECASE)


@dataclass(frozen=True)
class Window:
    limit: int
    seconds: float


def parse_rate_limit(text: str) -> list[Window]:
    """'100/min,1000/hour' → windows; '5/2s' is 5 per 2 seconds. ValueError says what is wrong."""
    windows: list[Window] = []
    for part in text.split(","):
        match = _WINDOW.fullmatch(part)
        unit = match.group(3).lower() if match else ""
        if not match or unit not in WINDOW_UNITS:
            raise ValueError(
                f"{part.strip()!r} is not a rate limit: write N/unit, e.g. 100/min,1000/hour "
                f"(units: s, min, hour, day)"
            )
        count = float(match.group(2)) if match.group(2) else 1.0
        limit = int(match.group(1))
        if limit < 1 or count <= 0:
            raise ValueError(f"{part.strip()!r}: the limit and the window must be above 0")
        windows.append(Window(limit, count * WINDOW_UNITS[unit]))
    return windows


class RateLimiter:
    """Sliding windows: a request passes when every window has room, and is then counted."""

    def __init__(self, windows: list[Window]) -> None:
        self.windows = windows
        self._lock = threading.Lock()
        self._times: list[deque[float]] = [deque() for _ in windows]

    def admit(self, now: float) -> float | None:
        """None when admitted (and counted); else the seconds until a window has room."""
        with self._lock:
            waits: list[float] = []
            for window, times in zip(self.windows, self._times, strict=True):
                while times and times[0] <= now - window.seconds:
                    times.popleft()
                if len(times) >= window.limit:
                    waits.append(times[0] + window.seconds - now)
            if waits:
                return max(waits)
            for times in self._times:
                times.append(now)
            return None

    def reset(self) -> None:
        with self._lock:
            for times in self._times:
                times.clear()


def retry_after_header(wait_seconds: float) -> str:
    """Whole seconds, at least 1, never before the oldest request leaves its window."""
    return str(max(1, math.ceil(wait_seconds)))


class Traffic:
    """Counts of requests by "METHOD /path/template status", and the busiest second."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.counts: dict[str, int] = {}
        self._last_second: deque[float] = deque()
        self.max_in_1s = 0

    def arrived(self, now: float) -> None:
        with self._lock:
            self._last_second.append(now)
            while self._last_second[0] <= now - 1.0:
                self._last_second.popleft()
            self.max_in_1s = max(self.max_in_1s, len(self._last_second))

    def answered(self, key: str) -> None:
        with self._lock:
            self.counts[key] = self.counts.get(key, 0) + 1

    def snapshot(self) -> dict[str, object]:
        with self._lock:
            return {"requests": dict(self.counts), "max_requests_in_1s": self.max_in_1s}

    def reset(self) -> None:
        with self._lock:
            self.counts.clear()
            self._last_second.clear()
            self.max_in_1s = 0


class Dice:
    """Seeded draws, so that a run with the same seed and the same requests fails the same way."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self._lock = threading.Lock()
        self._random = random.Random(seed)

    def roll(self, share: float) -> bool:
        """True for `share` of the calls (0: never, 1: always)."""
        if share <= 0:
            return False
        with self._lock:
            return self._random.random() < share

    def reset(self) -> None:
        with self._lock:
            self._random = random.Random(self.seed)
