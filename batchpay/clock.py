"""The clock: every time batchpay makes, stores, reads back and shows, in one place.

One stored form. Every moment batchpay writes (the journal's rows, a console batch's
record, a payee's confirmation) is RFC 3339 in UTC with six decimals and a `Z`:
``2026-11-27T07:13:00.000000Z``. (A signed plan's two times keep the whole second,
``2026-11-27T07:13:00Z``, the form its version fixes: `stamp_seconds`.) The width never varies, so two stored times compare
as text exactly as they compare as moments, which is what the journal's range queries
(`sent_at >= ?`) and its `ORDER BY` rely on. A form that drops the decimals
(``...07:13:00Z``) or writes ``+00:00`` would sort wrongly against it within a second, so
nothing is compared as text before `stamp` has written both sides.

Every form that exists in older journals, batch records and plans is read (`parse`): the
stored form, whole seconds with `Z` (plans), ``+00:00`` (console batches), no zone at all
(taken as UTC), another offset (the service's own times), a space for the `T`.

One way to show a time: `show(when, zone_name)` in the `time_zone` setting's zone (an IANA
name; default this machine's), with the zone named so a reader never has to guess
(``2026-11-27 15:13 Asia/Shanghai``). Run ids and console batch ids are minted here too:
the UTC second they were made, then random hex, so ids sort by when they were made.
"""

from __future__ import annotations

import os
import secrets
import time
from datetime import UTC, date, datetime
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from batchpay.errors import ConfigError

FALLBACK_ZONE = "UTC"
SHOWN_FORMAT = "%Y-%m-%d %H:%M"
_ID_FORMAT = "%Y%m%d-%H%M%S-"


def now() -> datetime:
    """This moment, aware, in UTC: the only place batchpay reads the wall clock for a time
    it stores or compares with a stored one."""
    return datetime.now(UTC)


def stamp(when: datetime | None = None) -> str:
    """The stored form of `when` (default: now). A naive datetime is taken as UTC."""
    if when is None:
        return _stamp_now()
    when = when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)
    # the stored form (see the module), written by isoformat: a third less time than strftime
    return when.replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


_second: tuple[int, str] = (-1, "")  # the last whole second stamped, and its text


def _stamp_now() -> str:
    """`stamp()` of this moment from the clock's nanoseconds, the second's text kept from
    the last call within the same second (the journal stamps several times per payout).
    The pair is read and replaced whole, so threads stamping at once never mix two."""
    global _second
    second, micro = divmod(time.time_ns() // 1000, 1_000_000)
    cached = _second
    if cached[0] != second:
        cached = (second, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second)))
        _second = cached
    return f"{cached[1]}.{micro:06d}Z"


def stamp_seconds(when: datetime) -> str:
    """`when` cut to its whole second, in the same RFC 3339 UTC form without the decimals
    (``2026-11-27T07:13:00Z``): the form a signed plan's `created_at` and `expires_at` are
    fixed to, read by every installation that checks a plan. Never compared as text."""
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse(text: str) -> datetime:
    """Any time batchpay or the service ever wrote, as an aware UTC datetime: `Z` or an
    offset; none means UTC. ValueError for text that is not a time."""
    cleaned = text.strip()
    if cleaned[-1:] in ("Z", "z"):
        cleaned = cleaned[:-1] + "+00:00"
    when = datetime.fromisoformat(cleaned)
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)


def restamp(text: str) -> str:
    """`text` (any form `parse` reads) in the stored form, so it compares as text with
    stored times."""
    return stamp(parse(text))


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


def local(when: str | datetime, zone_name: str) -> datetime:
    """`when` on the clocks of `zone_name`."""
    moment = parse(when) if isinstance(when, str) else (
        when.replace(tzinfo=UTC) if when.tzinfo is None else when)
    return moment.astimezone(zone(zone_name))


def day(when: str | datetime, zone_name: str) -> date:
    """The day `when` falls on in `zone_name` (a payout at 17:00 UTC is the next day in
    Shanghai)."""
    return local(when, zone_name).date()


def show(when: str | datetime | None, zone_name: str, *, seconds: bool = False) -> str:
    """`when` as a person reads it: the minute (or second) in `zone_name`, the zone named:
    ``2026-11-27 15:13 Asia/Shanghai``. Empty for no time; text that is not a time is
    shown as it is (a page never fails on an odd value in an old record)."""
    if when is None or when == "":
        return ""
    try:
        moment = local(when, zone_name)
    except ValueError:
        return str(when)
    shown = moment.strftime(SHOWN_FORMAT + (":%S" if seconds else ""))
    return f"{shown} {zone_name}"


def new_run_id() -> str:
    """A new run's id: its UTC second, then 4 random hex digits (20261127-071300-3fa2)."""
    return now().strftime(_ID_FORMAT) + secrets.token_hex(2)


def new_batch_id() -> str:
    """A new console batch's id: its UTC second, then 6 random hex digits."""
    return now().strftime(_ID_FORMAT) + secrets.token_hex(3)
