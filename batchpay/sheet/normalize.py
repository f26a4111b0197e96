"""The values as read, normalized into one list of texts per known column.

`normalized_columns` upper-cases codes, fills in defaults and takes spaces and hyphens out of
account numbers; every rule is then judged on these plain lists (`schema.every_rule_holds`),
and only a sheet where one fails is made a frame (`frame_of`) for pandera.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Any, cast

from batchpay.money import plain_account
from batchpay.sheet.columns import COLUMNS

if TYPE_CHECKING:
    import pandas as pd

_GROUPED_AMOUNT = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?")
_UPPER_KINDS = {"choice", "currency", "country"}
_UPPER_IDS = {"company_id", "ic_number"}
_TEXT_OR_NONE = {str, type(None)}


def as_text(value: Any) -> str | None:
    """A value as read, as the text it stands for (Decimal without exponent notation)."""
    if value is None:
        return None
    if isinstance(value, Decimal):
        return format(value, "f")
    return str(value)


def _amount_text(value: Any) -> str | None:
    text = as_text(value)
    if text is not None and _GROUPED_AMOUNT.fullmatch(text):
        text = text.replace(",", "")  # "1,250,000.50" typed as text
    return text


def normalized_columns(columns: Sequence[str], rows: Sequence[Sequence[Any]],
                       blocked: Sequence[Sequence[str]] | Mapping[int, Sequence[str]],
                       by_column: Sequence[Sequence[Any]] | None = None,
                       texts: Sequence[bool] | None = None) -> dict[str, list[str | None]]:
    """One list of texts per known column (None: empty); a cell already in error (`blocked`:
    the columns of each row, or of the rows by position that have any) becomes empty. Plain
    lists: the rules are first judged on them (`every_rule_holds`), and pandas is loaded only
    when one fails (`frame_of`).

    `by_column`: the rows' values already by column (as the reader made them), and `texts`
    which of those columns hold only str or None; `rows` is then not looked at."""
    if by_column is None:
        by_column = list(zip(*rows, strict=True)) if rows else [() for _ in columns]
        texts = None
    count = len(by_column[0]) if by_column else len(rows)
    data: dict[str, list[str | None]] = {}
    for column in COLUMNS:
        if column.name in columns:
            at = columns.index(column.name)
            cells = by_column[at]
            if column.kind == "amount":  # a number read is a Decimal: never "1,250.00"
                values = [format(v, "f") if type(v) is Decimal else _amount_text(v)
                          for v in cells]
            elif (texts is not None and texts[at]) or set(map(type, cells)) <= _TEXT_OR_NONE:
                values = list(cells)  # already texts: taken as they are
            else:
                values = [v if type(v) is str else as_text(v) for v in cells]
        else:
            values = [None] * count
        data[column.name] = values
    for position, names in (blocked.items() if isinstance(blocked, Mapping)
                            else enumerate(blocked)):
        for name in names:
            if name in data:
                data[name][position] = None
    for column in COLUMNS:
        values = data[column.name]
        if not any(values) and values.count(None) == len(values):  # an empty column
            if column.default is not None:
                data[column.name] = [column.default] * len(values)
            continue
        # each judged first on the column's texts joined (one string, in C): most sheets
        # write their codes in upper case and their accounts as digits already
        if (column.kind in _UPPER_KINDS or column.name in _UPPER_IDS) \
                and not _all_upper(filled := list(filter(None, values))):
            values = ([None if v is None else v.upper() for v in values]
                      if len(filled) < len(values) and None in values
                      else list(map(str.upper, cast(list[str], values))))
        if column.name == "account_number" and not "".join(filter(None, values)).isdigit():
            values = [v if v is None or v.isdigit() else plain_account(v)
                      for v in values]  # spaces and hyphens taken out
        if column.default is not None and None in values:
            default = column.default
            values = [default if v is None else v for v in values]
        data[column.name] = values
    return data


def _all_upper(texts: list[str]) -> bool:
    """True when upper-casing changes none of the texts (str.upper maps each character alone,
    so the texts joined say it for all of them)."""
    joined = "".join(texts)
    return joined.upper() == joined


def frame_of(data: dict[str, list[str | None]]) -> pd.DataFrame:
    """The normalized columns as a frame of pandas text columns, for pandera."""
    import pandas as pd

    return pd.DataFrame({name: pd.Series(values, dtype="str") for name, values in data.items()})
