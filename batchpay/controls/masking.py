"""Identity numbers as people other than the payee's confirmer see them: the last four
characters only.

A resident ID number (居民身份证号码) names a person and a unified social credit code (USCC)
a company; either, with a name, is enough to impersonate the payee at a bank. The console
shows every role the last four ("…123X"), which is what a person needs to tell two payees
apart, and only the maker reading the details back to a held payee sees them in full.

`masked_id` masks one value known to be an ID (a payee's key, a sheet's ic_number or
company_id). `mask_ids` masks every ID-shaped word in free text (a message, a payee's name
that is its ID, a plan's summary line), so that a message that quotes an ID never shows it
whole: 17 digits with a birth date where a resident ID has it, and a digit or X (whatever
its check digit: a mistyped ID is still someone's), or 18 characters of the USCC alphabet
whose third to eighth are digits (the division code; a code with a wrong check character
too). An account number of 18 digits is left alone unless it has that shape too.
"""

from __future__ import annotations

import re
from typing import Any

from batchpay.sheet.china_ids import USCC_ALPHABET

ID_LENGTH = 18
SHOWN = 4  # characters left at the end
# an 18-character word: letters and digits with neither before nor after
_WORD = re.compile(r"(?<![0-9A-Za-z])[0-9A-Za-z]{18}(?![0-9A-Za-z])")
_USCC_CHARS = frozenset(USCC_ALPHABET)


def masked_id(value: Any) -> str:
    """An ID as shown to everyone but the confirming maker: "…" and its last four."""
    text = "" if value is None else str(value).strip()
    return f"…{text[-SHOWN:]}" if len(text) > SHOWN else text


def looks_like_id(word: str) -> bool:
    """Whether an 18-character word has a resident ID's or a USCC's shape."""
    if len(word) != ID_LENGTH:
        return False
    if word[:17].isdigit():
        # a resident ID: a division code, a birth date (year, month, day), a sequence and a
        # check character; the date's shape tells it from an account number of 18 digits
        year, month, day = int(word[6:10]), int(word[10:12]), int(word[12:14])
        return (word[0] != "0" and 1800 <= year <= 2099 and 1 <= month <= 12
                and 1 <= day <= 31 and word[17] in "0123456789Xx")
    # a USCC: two code characters, the six digits of an administrative division, nine of
    # the organisation code and the check character, all of the USCC alphabet
    return word[2:8].isdigit() and _USCC_CHARS.issuperset(word)


def mask_ids(text: str) -> str:
    """`text` with every ID-shaped word in it masked (`masked_id`)."""
    if len(text) < ID_LENGTH:
        return text
    return _WORD.sub(lambda m: masked_id(m.group()) if looks_like_id(m.group())
                     else m.group(), text)
