"""bench_console holds its targets: a payment short of exactly once, or (at full size) a
console paying slower than the command line by more than 10 %, or a time not measured,
makes it exit 1."""

from __future__ import annotations

from tests.benchmarks.bench_console import missed


def checks(paid: int = 2000, review: float = 1.05, pay: float = 1.02) -> dict[str, object]:
    return {"once": {"console paid": paid, "cli paid": 2000, "resumed distinct quotes": 2000},
            "over": {"review": review, "pay": pay}}


def test_within_ten_percent_and_exactly_once_is_no_miss() -> None:
    assert missed(2000, False, checks()) == []


def test_a_slow_console_or_a_time_not_measured_misses_the_target() -> None:
    assert missed(2000, False, checks(pay=1.48)) == [
        "console_over_cli pay=1.48 (target at most 1.10)"]
    assert len(missed(2000, False, checks(review=float("nan")))) == 1


def test_the_review_is_measured_but_held_to_no_bound() -> None:
    """The review makes and writes the plan, which `run --dry-run` does not."""
    assert missed(2000, False, checks(review=1.3)) == []


def test_short_mode_holds_exactly_once_but_no_time() -> None:
    short = {"once": {"console paid": 200}, "over": {"pay": 3.0}}
    assert missed(200, True, short) == []
    assert missed(200, True, {"once": {"console paid": 199}, "over": {}}) == [
        "console paid: 199 (expected 200)"]
