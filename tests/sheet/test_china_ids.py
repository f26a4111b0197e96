"""Check characters of unified social credit codes and resident ID numbers."""

from __future__ import annotations

import datetime as dt

from hypothesis import given
from hypothesis import strategies as st

from batchpay.sheet.china_ids import (
    USCC_ALPHABET,
    is_valid_resident_id,
    is_valid_uscc,
    resident_id_check_digit,
    uscc_check_char,
)

uscc_bodies = st.text(alphabet=USCC_ALPHABET, min_size=17, max_size=17)
birth_dates = st.dates(min_value=dt.date(1900, 1, 1), max_value=dt.date(2020, 12, 31))


def resident_body(region: int, born: dt.date, sequence: int) -> str:
    return f"{region:06d}{born:%Y%m%d}{sequence:03d}"


def test_published_examples() -> None:
    assert is_valid_uscc("91350100M000100Y43")
    assert uscc_check_char("91350100M000100Y4") == "3"
    assert is_valid_resident_id("11010519491231002X")
    assert is_valid_resident_id("11010519491231002x")  # typed in lower case
    assert resident_id_check_digit("11010519491231002") == "X"


def test_malformed_codes_are_invalid() -> None:
    assert not is_valid_uscc("91350100M000100Y4")  # 17 chars
    assert not is_valid_uscc("91350100M000100I43")  # I is not in the alphabet
    assert not is_valid_uscc(None)
    assert not is_valid_resident_id("110105194913310026")  # month 13
    assert not is_valid_resident_id("11010519491231002")
    assert not is_valid_resident_id("1101051949123100AX")


@given(uscc_bodies)
def test_uscc_with_its_check_char_is_valid(body: str) -> None:
    assert is_valid_uscc(body + uscc_check_char(body))


@given(uscc_bodies, st.sampled_from(USCC_ALPHABET))
def test_uscc_with_any_other_check_char_is_invalid(body: str, other: str) -> None:
    right = uscc_check_char(body)
    assert is_valid_uscc(body + other) == (other == right)


@given(uscc_bodies, st.integers(0, 16), st.sampled_from(USCC_ALPHABET))
def test_uscc_detects_every_single_character_change(body: str, at: int, ch: str) -> None:
    code = body + uscc_check_char(body)
    changed = code[:at] + ch + code[at + 1:]
    assert is_valid_uscc(changed) == (ch == code[at])


@given(st.integers(110000, 659999), birth_dates, st.integers(0, 999))
def test_resident_id_with_its_check_digit_is_valid(region: int, born: dt.date, seq: int) -> None:
    body = resident_body(region, born, seq)
    assert is_valid_resident_id(body + resident_id_check_digit(body))


@given(st.integers(110000, 659999), birth_dates, st.integers(0, 999), st.integers(0, 16),
       st.integers(1, 9))
def test_resident_id_detects_every_single_digit_change(
        region: int, born: dt.date, seq: int, at: int, delta: int) -> None:
    body = resident_body(region, born, seq)
    code = body + resident_id_check_digit(body)
    digit = str((int(code[at]) + delta) % 10)
    changed = code[:at] + digit + code[at + 1:]
    # MOD 11-2 catches every single substitution; a changed date may also be impossible
    assert not is_valid_resident_id(changed)


@given(st.integers(110000, 659999), birth_dates, st.integers(0, 999), st.sampled_from("0123456789X"))
def test_resident_id_with_another_check_digit_is_invalid(
        region: int, born: dt.date, seq: int, check: str) -> None:
    body = resident_body(region, born, seq)
    assert is_valid_resident_id(body + check) == (check == resident_id_check_digit(body))
