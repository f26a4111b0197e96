"""The request budget a run, a sync, a listener and a console share: where it is kept, and
what a run says of it before sending.

The provider's windows (the `rate_limit` setting) are per API key. Every command that
talks to a real service books its requests in one table (batchpay.journal.budget): in the
journal's database, or in the one `rate_budget` names when several journals pay with one
key. The embedded sandbox, and a sandbox not started with `--client-windows`, have no
windows: the client switches them off on its first answer, and nothing is booked after it.

Before sending, a run says how long its rows take at the budget left, counted from the
bookings already made by every process using the key:

    2,000 rows: about 3 h 45 min at 100 requests/min; 312 requests of today's 10,000
    already used
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from batchpay.journal.budget import SharedBudget, next_slot
from batchpay.provider.pacing import Pacer, Window
from batchpay.settings.model import DatabaseURL, Settings, journal_location

REQUESTS_PER_ROW = 2  # a quote, then the payout
DAY = 86400.0


def shared_budget(settings: Settings, api_key: str | None, *,
                  embedded: bool = False) -> SharedBudget | None:
    """The key's budget in the journal's database (or `rate_budget`'s); None for the
    embedded sandbox, an in-memory journal, a journal file not made yet (a command that
    makes none, as `banks` before any run, keeps the windows in its process) or no
    windows at all."""
    if embedded or not settings.rate_limit.strip():
        return None
    if settings.rate_budget.strip():
        return SharedBudget(journal_location(settings.rate_budget), api_key or "")
    where = settings.journal
    if not isinstance(where, DatabaseURL) and (str(where) == ":memory:"
                                               or not Path(where).is_file()):
        return None
    return SharedBudget(where, api_key or "")


def estimate(pacer: Pacer, rows: int) -> str | None:
    """What paying `rows` rows takes at the budget left (None: no shared windows here)."""
    shared = pacer.shared
    if not isinstance(shared, SharedBudget) or not pacer.windows_enabled or not pacer.windows:
        return None
    windows = pacer.windows
    longest = max(windows, key=lambda w: w.seconds)
    now, booked = shared.booked(longest.seconds + pacer.margin)
    seconds = finish_after(now, booked, windows, rows * REQUESTS_PER_ROW, pacer.margin)
    rate = min(w.limit / w.seconds for w in windows) * 60
    used = sum(1 for at in booked if at > now - longest.seconds)
    of = (f"today's {longest.limit:,}" if longest.seconds == DAY
          else f"the {longest.limit:,} per {duration(longest.seconds, exact=True)}")
    return (f"{rows:,} row(s): about {duration(seconds)} at {rate:,.4g} requests/min; "
            f"{used:,} requests of {of} already used")


def finish_after(now: float, booked: Sequence[float], windows: Sequence[Window],
                 requests: int, margin: float) -> float:
    """Seconds from `now` until the last of `requests` more requests may leave, each
    booked as the shared budget books it, after those `booked` already (oldest first)."""
    times = list(booked)
    latest: float | None = times[-1] if times else None
    for _ in range(requests):
        kth = [times[-w.limit] if len(times) >= w.limit else None for w in windows]
        latest = next_slot(now, latest, kth, [(w.limit, w.seconds) for w in windows], margin)
        times.append(latest)
    return max(0.0, (latest if latest is not None and requests else now) - now)


def duration(seconds: float, *, exact: bool = False) -> str:
    """`43 min`, `3 h 45 min`, `2 days 4 h`, `40 s` (rounded up to the unit shown, so that
    an estimate is never shorter than the wait)."""
    if exact:
        for unit, size in (("day", DAY), ("hour", 3600.0), ("min", 60.0)):
            if seconds >= size and seconds % size == 0:
                count = int(seconds // size)
                return unit if count == 1 else f"{count} {unit}s" if unit != "min" \
                    else f"{count} min"
        return f"{seconds:g} s"
    if seconds < 60:
        return f"{max(1, -int(-seconds // 1))} s" if seconds > 0 else "no wait"
    minutes = -int(-seconds // 60)
    if minutes < 60:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    days, hours = divmod(hours, 24)
    return f"{days} day{'s' if days > 1 else ''} {hours} h" if hours else \
        f"{days} day{'s' if days > 1 else ''}"
