"""Cells as read (by calamine, or a CSV's texts) turned into values, a column at a time.

Text is stripped of every Unicode white space ("" is empty), numbers become int or Decimal
(via the float's shortest repr, never float arithmetic), an amount written as text becomes a
Decimal only when its decimal separator is certain (`AmountText`), and an identifier typed
as a number with more than 15 digits keeps the float it is, with an error naming the lost
digits.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from itertools import repeat
from typing import Any

from batchpay.sheet.columns import IDENTIFIER_COLUMNS, ONE_OF

MAX_EXACT_DIGITS = 15  # a spreadsheet number keeps 15 significant digits, no more
_TEXT_OR_NONE = {str, type(None)}
# Every Unicode white space (non-breaking and ideographic spaces too) and zero-width marks.
_STRIP = (" \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f\x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004"
          "\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
          "\u200b\u200c\u200d\u2060\ufeff")


def convert_column(name: str, cells: Sequence[Any], amounts: AmountText
                    ) -> tuple[list[Any], dict[int, str], bool, bool]:
    """Values of one column as read, problems by position (0 = first data row), whether a
    cell holds a number, and whether every value is a str or None (known without a look)."""
    problems: dict[int, str] = {}
    if not any(cells) and set(map(type, cells)) <= _TEXT_OR_NONE:
        # an empty column (calamine reads "" for empty)
        return [None] * len(cells), problems, False, True
    if name not in ONE_OF:
        # all text (the usual case): stripped, "" as None. str.strip refuses any other cell,
        # so the cells' types are not looked up first, in a pass of their own
        try:
            texts = list(map(str.strip, cells, repeat(_STRIP)))
        except TypeError:
            pass
        else:
            return ([text or None for text in texts] if "" in texts else texts), problems, False, True
    kinds = set(map(type, cells))
    numbers = bool(kinds & {int, float})
    if name in IDENTIFIER_COLUMNS:
        def other(position: int, cell: Any) -> Any:
            value, problem = _identifier(cell)
            if problem:
                problems[position] = problem
            return value
    elif name in ONE_OF:  # amounts: numbers, and text that is a number, become Decimal
        if kinds == {float}:  # every cell a number: converted in C, as `amount` does
            return list(map(Decimal, map(repr, cells))), problems, True, False

        def amount(position: int, cell: Any) -> Any:
            if type(cell) is float:
                return Decimal(repr(cell))
            if type(cell) is not str:
                return plain_value(cell)
            value, problem = amounts.read(cell.strip(_STRIP))
            if problem:
                problems[position] = problem
            return value
        return ([amount(position, cell) for position, cell in enumerate(cells)], problems,
                numbers, False)
    else:
        def other(position: int, cell: Any) -> Any:
            return plain_value(cell)
    values = [(cell.strip(_STRIP) or None) if type(cell) is str else other(position, cell)
              for position, cell in enumerate(cells)]
    return values, problems, numbers, False


_PLAIN_AMOUNT = re.compile(r"\d+(?:\.\d+)?")
_POINT_THOUSANDS = re.compile(r"\d+\.\d{3}")  # 50.000: fifty, or fifty thousand?
_COMMA_DECIMAL = re.compile(r"\d{1,3}(?:\.\d{3})+(?:,\d+)?|\d+(?:,\d+)?")
AMBIGUOUS = ("is ambiguous in a file separated by semicolons or tabs: use a point for "
             "decimals and no thousands separators, e.g. 12500.00 (or run with "
             "--decimal-comma if the file writes 1.250.000,00)")


@dataclass(frozen=True)
class AmountText:
    """How an amount written as text is read: never by guessing its decimal separator."""

    decimal_comma: bool = False  # --decimal-comma: "1.250.000,00" and "12,5"
    ambiguous: bool = False  # a ;- or tab-separated CSV: "12,500" and "50.000" are refused

    def read(self, text: str) -> tuple[Any, str | None]:
        """(value, problem): a Decimal for a number, else the text for the schema to judge."""
        if not text:
            return None, None
        if self.decimal_comma:
            if _COMMA_DECIMAL.fullmatch(text):
                return Decimal(text.replace(".", "").replace(",", ".")), None
            if _PLAIN_AMOUNT.fullmatch(text):  # "12.5" with --decimal-comma: a point?
                return text, (f"{text!r} has a point, but --decimal-comma reads a comma as "
                              "the decimal separator and points as thousands (1.250.000,00)")
            return text, None
        if self.ambiguous and ("," in text or _POINT_THOUSANDS.fullmatch(text)):
            return text, f"{text!r} {AMBIGUOUS}"
        if _PLAIN_AMOUNT.fullmatch(text):
            return Decimal(text), None
        return text, None


def _identifier(cell: Any) -> tuple[Any, str | None]:
    if type(cell) is not float:
        return plain_value(cell), None
    value = _number(cell)
    digits = len(str(abs(value))) if isinstance(value, int) else len(value.as_tuple().digits)
    if digits > MAX_EXACT_DIGITS:
        # kept as the float it is, so that no report shows it as 19 plausible digits
        return cell, (
            f"is a number with {digits} digits, but a spreadsheet keeps only "
            f"{MAX_EXACT_DIGITS}, so the last digits are already lost (it shows {cell:.6G}); "
            "format the column as Text and type the number again"
        )
    return value, None


def _number(value: float) -> int | Decimal:
    if value.is_integer() and abs(value) < 2**63:
        return int(value)
    return Decimal(repr(value))


def plain_value(cell: Any) -> Any:
    if cell is None:
        return None
    if isinstance(cell, str):
        return cell.strip(_STRIP) or None
    if isinstance(cell, bool):
        return "TRUE" if cell else "FALSE"
    if isinstance(cell, int):
        return cell
    if isinstance(cell, float):
        return _number(cell)
    if isinstance(cell, dt.datetime | dt.date | dt.time):
        return cell.isoformat()
    return str(cell).strip(_STRIP) or None


def is_empty_cell(cell: Any) -> bool:
    return cell is None or (isinstance(cell, str) and not cell.strip())


def cell_text(cell: Any) -> str | None:
    value = plain_value(cell)
    return None if value is None else str(value)
