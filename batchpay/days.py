"""Days and time zones: where a day begins, in one place.

The journal writes every moment in UTC (``2026-11-30T16:05:00.123456Z``), but a finance
team closes its month in its own days: in Shanghai, November ends at 16:00 UTC on the
30th. The ``time_zone`` setting (an IANA name such as ``Asia/Shanghai``; default the
machine's zone) says whose days a statement, an export or a reconciliation counts in. A
period is turned into UTC bounds once, here, and compared as text with the journal's
moments (ISO 8601 UTC sorts as it reads); a moment is turned back into a local day here too.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from batchpay.errors import ConfigError, UsageError

FALLBACK_ZONE = "UTC"


def machine_zone() -> str:
    """The machine's IANA zone name: $TZ, else /etc/localtime's target, else
    /etc/timezone, else UTC (a machine that names no zone keeps its clock in UTC)."""
    named = os.environ.get("TZ", "").lstrip(":").strip()
    if named and _known(named):
        return named
    localtime = Path("/etc/localtime")
    try:
        target = str(localtime.resolve())
    except OSError:
        target = ""
    if "zoneinfo/" in target:
        name = target.split("zoneinfo/", 1)[1]
        if _known(name):
            return name
    try:
        name = Path("/etc/timezone").read_text(encoding="utf-8").strip()
    except OSError:
        name = ""
    return name if name and _known(name) else FALLBACK_ZONE


def _known(name: str) -> bool:
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return False
    return True


def zone(name: str) -> ZoneInfo:
    """The zone of a `time_zone` setting, refused with a fix when it is not an IANA name."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ConfigError(
            f"Setting time_zone = {name!r} is not a time zone name.",
            hint="Use an IANA name such as Asia/Shanghai, Africa/Lagos or UTC "
            f"(default: this machine's, {machine_zone()}).") from None


def parse_day(text: str, option: str) -> date:
    try:
        return date.fromisoformat(text.strip())
    except ValueError:
        raise UsageError(f"{option} {text!r} is not a date: write it as YYYY-MM-DD "
                         "(e.g. 2026-11-30).") from None


def moment(text: str) -> datetime:
    """A journal or service time (ISO 8601; `Z` or an offset; none means UTC) as aware UTC."""
    when = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)


def utc_text(when: datetime) -> str:
    """The journal's own text form of a moment, so that bounds compare with its times."""
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


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
        return utc_text(self.first_moment)

    @property
    def until(self) -> str:
        return utc_text(self.end_moment)

    def widened(self, days: int) -> tuple[str, str]:
        """The bounds moved out by `days` on each side (a payout made at 23:59:59 that the
        service dates a second later still finds its pair)."""
        return (utc_text(self.first_moment - timedelta(days=days)),
                utc_text(self.end_moment + timedelta(days=days)))

    def holds(self, at: str) -> bool:
        return self.since <= utc_text(moment(at)) < self.until

    def day_of(self, at: str) -> date:
        """The local day of a moment."""
        return moment(at).astimezone(self.tz).date()

    def local(self, at: str) -> datetime:
        return moment(at).astimezone(self.tz)

    @property
    def label(self) -> str:
        return f"{self.start.isoformat()} to {self.end.isoformat()} ({self.zone_name})"
