"""Days and time zones: where a day begins, in one place.

The journal writes every moment in UTC (``2026-11-30T16:05:00.123456Z``), but a finance
team closes its month in its own days: in Shanghai, November ends at 16:00 UTC on the
30th. The ``time_zone`` setting (an IANA name such as ``Asia/Shanghai``; default the
machine's zone) says whose days a statement, an export or a reconciliation counts in. A
period is turned into UTC bounds once, here, written in the clock's stored form
(`batchpay.clock`) so that they compare as text with the journal's moments; a moment is
turned back into a local day here too.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

from batchpay.clock import FALLBACK_ZONE as FALLBACK_ZONE
from batchpay.clock import machine_zone as machine_zone
from batchpay.clock import parse, stamp
from batchpay.clock import zone as zone
from batchpay.errors import UsageError


def parse_day(text: str, option: str) -> date:
    try:
        return date.fromisoformat(text.strip())
    except ValueError:
        raise UsageError(f"{option} {text!r} is not a date: write it as YYYY-MM-DD "
                         "(e.g. 2026-11-30).") from None


@dataclass(frozen=True)
class Period:
    """[start, end] in the days of `zone_name`, both included."""

    start: date
    end: date
    zone_name: str = FALLBACK_ZONE

    def __post_init__(self) -> None:
        if self.end < self.start:
            raise UsageError(f"--to {self.end} is before --from {self.start}.")

    @property
    def tz(self) -> ZoneInfo:
        return zone(self.zone_name)

    @property
    def first_moment(self) -> datetime:
        return datetime.combine(self.start, time(0), self.tz).astimezone(UTC)

    @property
    def end_moment(self) -> datetime:
        """The first moment after the period (its last day's end), in UTC."""
        return datetime.combine(self.end + timedelta(days=1), time(0), self.tz).astimezone(UTC)

    @property
    def since(self) -> str:
        return stamp(self.first_moment)

    @property
    def until(self) -> str:
        return stamp(self.end_moment)

    def widened(self, days: int) -> tuple[str, str]:
        """The bounds moved out by `days` on each side (a payout made at 23:59:59 that the
        service dates a second later still finds its pair)."""
        return (stamp(self.first_moment - timedelta(days=days)),
                stamp(self.end_moment + timedelta(days=days)))

    def holds(self, at: str) -> bool:
        return self.since <= stamp(parse(at)) < self.until

    def day_of(self, at: str) -> date:
        """The local day of a moment."""
        return parse(at).astimezone(self.tz).date()

    def local(self, at: str) -> datetime:
        return parse(at).astimezone(self.tz)

    @property
    def label(self) -> str:
        return f"{self.start.isoformat()} to {self.end.isoformat()} ({self.zone_name})"
