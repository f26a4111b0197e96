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
import re
from collections.abc import Iterable

USCC_ALPHABET = "0123456789ABCDEFGHJKLMNPQRTUWXY"
# The weighted sums are read by int() in C rather than summed in Python (a third of the
# checks' time at 100,000 rows). A sum of digit × weight, the weights the powers of w mod m,
# is the digits read as a number in any base b ≡ w (mod m): 3^i mod 31 is 34^i mod 31, so a
# code whose characters are spelled as base-34 digits (its alphabet's values 0-30) and read
# last first is its USCC sum mod 31; 2^i mod 11 is 13^i mod 11 for the resident ID.
_USCC_DIGITS = str.maketrans(USCC_ALPHABET, "0123456789abcdefghijklmnopqrstu")
_USCC_SPELLED = re.compile("[0-9a-u]{17}")
_ID_CHECK = "0123456789X"
_EARLIEST_BIRTH = dt.date(1900, 1, 1)


def uscc_check_char(first17: str) -> str:
    """The check character for the first 17 characters of a unified social credit code.

    Raises ValueError when `first17` is not 17 characters of the code's alphabet.
    """
    code = first17.upper()
    if len(code) != 17:
        raise ValueError("expected 17 characters")
    digits = code.translate(_USCC_DIGITS)
    if not _USCC_SPELLED.fullmatch(digits):
        raise ValueError("expected characters of 0-9 and A-Y without I, O, S, V, Z")
    total = int(digits[::-1], 34)  # Σ value × 3^i, mod 31
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
    total = 2 * int(first17, 13)  # Σ digit × 2^(17-i), mod 11
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
    born: set[str] = set()  # dates of birth found real (many people share one)
    for code in codes:
        if not isinstance(code, str) or len(code) != 18:
            return False
        code = code.upper()
        first17 = code[:17]
        if not first17.isascii() or not first17.isdigit():
            return False
        if _ID_CHECK[(12 - 2 * int(first17, 13) % 11) % 11] != code[17]:
            return False
        date = code[6:14]
        if date not in born:
            if resident_id_birth_date(code, today) is None:
                return False
            born.add(date)
    return True
