"""Check characters of Chinese identifiers, so that a mistyped id is caught before money moves.

- Unified social credit code (统一社会信用代码, GB 32100-2015): 18 characters from a
  31-symbol alphabet (digits and upper-case letters without I, O, Z, S, V); the last one is
  a check character over the first 17, weights 3^i mod 31.
- Resident identity card number (居民身份证号码, GB 11643-1999): 17 digits and a check
  character computed with ISO 7064 MOD 11-2 (10 is written X); digits 7–14 are the birth
  date, which must be a real date.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from operator import mul

USCC_ALPHABET = "0123456789ABCDEFGHJKLMNPQRTUWXY"
_USCC_VALUE = {ch: i for i, ch in enumerate(USCC_ALPHABET)}
_USCC_WEIGHTS = tuple(pow(3, i, 31) for i in range(17))  # 1, 3, 9, 27, 19, 26, ...

_ID_WEIGHTS = tuple(pow(2, 17 - i, 11) for i in range(17))  # 7, 9, 10, 5, 8, 4, 2, 1, ...
_ID_ZEROS = 48 * sum(_ID_WEIGHTS)
_ID_CHECK = "0123456789X"
_EARLIEST_BIRTH = dt.date(1900, 1, 1)


def uscc_check_char(first17: str) -> str:
    """The check character for the first 17 characters of a unified social credit code.

    Raises ValueError when `first17` is not 17 characters of the code's alphabet.
    """
    code = first17.upper()
    if len(code) != 17:
        raise ValueError("expected 17 characters")
    try:
        total = sum(map(mul, map(_USCC_VALUE.__getitem__, code), _USCC_WEIGHTS))
    except KeyError:
        raise ValueError("expected characters of 0-9 and A-Y without I, O, S, V, Z") from None
    return USCC_ALPHABET[(31 - total % 31) % 31]


def is_valid_uscc(code: object) -> bool:
    """True for an 18-character unified social credit code whose check character is right."""
    if not isinstance(code, str) or len(code) != 18:
        return False
    code = code.upper()
    try:
        return uscc_check_char(code[:17]) == code[17]
    except ValueError:
        return False


def resident_id_check_digit(first17: str) -> str:
    """The ISO 7064 MOD 11-2 check character ("0"-"9" or "X") for 17 digits."""
    if len(first17) != 17 or not first17.isascii() or not first17.isdigit():
        raise ValueError("expected 17 digits")
    # the digits' bytes are 48 + digit: weigh the bytes, take the 48s back out
    total = sum(map(mul, first17.encode(), _ID_WEIGHTS)) - _ID_ZEROS
    return _ID_CHECK[(12 - total % 11) % 11]


def resident_id_birth_date(code: str, today: dt.date | None = None) -> dt.date | None:
    """The birth date written in digits 7–14, or None when it is not a plausible date."""
    try:
        born = dt.date(int(code[6:10]), int(code[10:12]), int(code[12:14]))
    except ValueError:
        return None
    if not _EARLIEST_BIRTH <= born <= (today or dt.date.today()):
        return None
    return born


def is_valid_resident_id(code: object) -> bool:
    """True for an 18-character resident ID with a right check character and a real birth date."""
    return all_valid_resident_ids((code,))


def all_valid_resident_ids(codes: Iterable[object]) -> bool:
    """True when every code is a valid resident ID (`is_valid_resident_id`); today's date is
    read once, not once a code."""
    today = dt.date.today()
    for code in codes:
        if not isinstance(code, str) or len(code) != 18:
            return False
        code = code.upper()
        first17 = code[:17]
        if not first17.isascii() or not first17.isdigit():
            return False
        if resident_id_check_digit(first17) != code[17] \
                or resident_id_birth_date(code, today) is None:
            return False
    return True
