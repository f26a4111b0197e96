"""The clock: every form of time batchpay ever wrote reads back as the same moment; the
stored form compares as text exactly as moments compare; times are shown in the
`time_zone` setting's zone with the zone named; ids sort by when they were made."""

from __future__ import annotations

import random
import re
from datetime import UTC, datetime, timedelta

import pytest

from batchpay import clock
from batchpay.errors import ConfigError

MOMENT = datetime(2026, 11, 27, 7, 13, tzinfo=UTC)

# every form found in journals, console batch records, plans and the service's answers
OLD_FORMS = [
    "2026-11-27T07:13:00.000000Z",  # the journal's rows
    "2026-11-27T07:13:00Z",  # a signed plan's created_at / expires_at
    "2026-11-27T07:13:00+00:00",  # console batch records before the one clock
    "2026-11-27T07:13:00",  # no zone at all: UTC
    "2026-11-27T15:13:00+08:00",  # the service's own time, with its offset
    "2026-11-27 07:13:00Z",  # a space for the T
    "2026-11-27T07:13:00z",
    " 2026-11-27T07:13:00.000Z ",
]


@pytest.mark.parametrize("text", OLD_FORMS)
def test_every_old_form_is_read_as_the_same_moment(text: str) -> None:
    assert clock.parse(text) == MOMENT
    assert clock.parse(text).tzinfo is not None
    assert clock.restamp(text) == "2026-11-27T07:13:00.000000Z"


def test_what_is_not_a_time_is_refused() -> None:
    for text in ("", "yesterday", "2026-13-01T00:00:00Z"):
        with pytest.raises(ValueError):
            clock.parse(text)


def test_the_stored_form_sorts_as_text_as_moments_do() -> None:
    """Fixed width: the journal's `sent_at >= ?` and `ORDER BY` compare text."""
    rng = random.Random(7)
    moments = [MOMENT + timedelta(microseconds=rng.randrange(-10**12, 10**12))
               for _ in range(2000)]
    moments += [MOMENT, MOMENT + timedelta(microseconds=1), MOMENT.replace(microsecond=500000)]
    stamped = [clock.stamp(m) for m in moments]
    assert {len(s) for s in stamped} == {27}
    assert sorted(stamped) == [clock.stamp(m) for m in sorted(moments)]
    assert all(clock.parse(s) == m for s, m in zip(stamped, moments, strict=True))


def test_two_forms_compared_as_text_disagree_and_restamped_agree() -> None:
    """Why nothing is compared as text before both sides are in the stored form: written
    without decimals, a moment sorts after one half a second later."""
    whole, half = "2026-11-27T07:13:00Z", "2026-11-27T07:13:00.500000Z"
    assert half < whole  # as text: wrong
    assert clock.parse(whole) < clock.parse(half)  # as moments
    assert clock.restamp(whole) < half  # restamped, as text: right
    plus = "2026-11-27T07:13:00+00:00"  # the console's old form of the same moment
    assert plus != "2026-11-27T07:13:00.000000Z"
    assert clock.restamp(plus) == clock.restamp(whole) == "2026-11-27T07:13:00.000000Z"


def test_stamp_takes_naive_as_utc_and_converts_offsets() -> None:
    assert clock.stamp(datetime(2026, 11, 27, 7, 13)) == "2026-11-27T07:13:00.000000Z"
    shanghai = MOMENT.astimezone(clock.zone("Asia/Shanghai"))
    assert clock.stamp(shanghai) == "2026-11-27T07:13:00.000000Z"
    assert clock.stamp_seconds(MOMENT.replace(microsecond=999999)) == "2026-11-27T07:13:00Z"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", clock.stamp())


def test_now_is_utc_and_current() -> None:
    before = datetime.now(UTC)
    now = clock.now()
    assert now.utcoffset() == timedelta(0)
    assert before <= now <= datetime.now(UTC)


@pytest.mark.parametrize("text", OLD_FORMS)
def test_shown_in_the_zone_with_the_zone_named(text: str) -> None:
    assert clock.show(text, "Asia/Shanghai") == "2026-11-27 15:13 Asia/Shanghai"
    assert clock.show(text, "UTC") == "2026-11-27 07:13 UTC"
    assert clock.show(text, "Africa/Lagos", seconds=True) == "2026-11-27 08:13:00 Africa/Lagos"


def test_local_midnight_is_the_next_day_in_shanghai() -> None:
    """16:00 UTC on the 27th is the first moment of the 28th in Shanghai."""
    midnight = "2026-11-27T16:00:00Z"
    assert clock.show(midnight, "Asia/Shanghai") == "2026-11-28 00:00 Asia/Shanghai"
    assert clock.day(midnight, "Asia/Shanghai").isoformat() == "2026-11-28"
    assert clock.day("2026-11-27T15:59:59.999999Z", "Asia/Shanghai").isoformat() == "2026-11-27"
    assert clock.day(midnight, "UTC").isoformat() == "2026-11-27"


def test_show_never_fails_a_page() -> None:
    assert clock.show(None, "Asia/Shanghai") == ""
    assert clock.show("", "Asia/Shanghai") == ""
    assert clock.show("not recorded", "Asia/Shanghai") == "not recorded"
    assert clock.show(MOMENT, "America/New_York") == "2026-11-27 02:13 America/New_York"


def test_a_zone_that_is_not_a_zone_is_refused_with_a_fix() -> None:
    with pytest.raises(ConfigError) as refused:
        clock.show(MOMENT, "Mars/Olympus")
    assert "time_zone" in refused.value.message and "Asia/Shanghai" in str(refused.value.hint)


def test_ids_carry_their_utc_second_and_sort_by_it() -> None:
    run, batch = clock.new_run_id(), clock.new_batch_id()
    assert re.fullmatch(r"\d{8}-\d{6}-[0-9a-f]{4}", run)
    assert re.fullmatch(r"\d{8}-\d{6}-[0-9a-f]{6}", batch)
    made = datetime.strptime(run[:15], "%Y%m%d-%H%M%S").replace(tzinfo=UTC)
    assert abs((clock.now() - made).total_seconds()) < 5
    assert len({clock.new_run_id() for _ in range(50)}) > 1


def test_stamps_of_now_follow_the_clock_across_seconds_and_threads() -> None:
    """`stamp()` keeps the current second's text between calls: taken in a row for over a
    second, and from four threads at once, every stamp is the stored form, parses to the
    moment it was taken, and later stamps of a thread never sort before earlier ones."""
    import threading
    import time as time_module

    problems: list[str] = []

    def stamping() -> None:
        last = ""
        until = time_module.monotonic() + 1.2
        while time_module.monotonic() < until:
            before = clock.now()
            text = clock.stamp()
            after = clock.now()
            if not (before <= clock.parse(text) <= after) or len(text) != 27 or text < last:
                problems.append(f"{before} {text} {after} after {last}")
            last = text

    threads = [threading.Thread(target=stamping) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert problems == []
