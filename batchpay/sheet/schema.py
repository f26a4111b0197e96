"""The pandera schema of a payout sheet, derived from the column table, and its messages.

`normalized_columns` turns the values as read into one list of texts per known column
(upper-cased codes, defaults filled in, account numbers without spaces and hyphens).
`every_rule_holds` judges every rule on those plain lists (each rule's `holds`): a sheet
ready to pay is passed without loading pandas or pandera, which cost more than the checks
at 100,000 rows. Otherwise `schema_for` checks the same columns as a frame (`frame_of`)
with pandera (lazy, so every failure is collected), and `failures` turns pandera's failure
cases into one message per row and column that a finance person can act on ("company_id:
check character is wrong — expected 3 ..."). A rule's pandas check and its `holds` say the
same thing twice; tests/sheet/test_schema_fast_path.py holds them to agreeing.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from itertools import compress, repeat
from typing import TYPE_CHECKING, Any, cast

from batchpay.money import plain_account
from batchpay.sheet.china_ids import (
    USCC_ALPHABET,
    all_valid_resident_ids,
    is_valid_resident_id,
    is_valid_uscc,
    resident_id_birth_date,
    resident_id_check_digit,
    uscc_check_char,
)
from batchpay.sheet.columns import COLUMN_NAMES, COLUMNS, Column
from batchpay.sheet.currency import EXPONENTS

if TYPE_CHECKING:
    import pandas as pd
    import pandera.pandas as pa

REF_PATTERN = r"[A-Za-z0-9._/\-]{1,64}"
ACCOUNT_PATTERN = r"[0-9]{8,30}"  # ASCII digits: full-width and other digits are refused
AMOUNT_PATTERN = r"[0-9]+(?:\.[0-9]+)?"
MAX_SIGNIFICANT = 15  # what a spreadsheet keeps of a number; no payout needs more
_GROUPED_AMOUNT = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?")
_PLAIN_AMOUNT = re.compile(AMOUNT_PATTERN)
_SHORTENED_NUMBER = re.compile(r"[+-]?\d+(?:\.\d+)?[eE][+-]?\d+")
_UPPER_KINDS = {"choice", "currency", "country"}
_UPPER_IDS = {"company_id", "ic_number"}
_TEXT_OR_NONE = {str, type(None)}


# --- normalization -------------------------------------------------------------------------


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
        if column.kind in _UPPER_KINDS or column.name in _UPPER_IDS:
            values = ([None if v is None else v.upper() for v in values] if None in values
                      else list(map(str.upper, cast(list[str], values))))
        if column.name == "account_number":  # digits need no search for spaces and hyphens
            values = [v if v is None or v.isdigit() else plain_account(v)
                      for v in values]
        if column.default is not None and None in values:
            default = column.default
            values = [default if v is None else v for v in values]
        data[column.name] = values
    return data


def frame_of(data: dict[str, list[str | None]]) -> pd.DataFrame:
    """The normalized columns as a frame of pandas text columns, for pandera."""
    import pandas as pd

    return pd.DataFrame({name: pd.Series(values, dtype="str") for name, values in data.items()})


def normalized_frame(columns: Sequence[str], rows: Sequence[Sequence[Any]],
                     blocked: Sequence[Sequence[str]]) -> pd.DataFrame:
    """`normalized_columns` as a frame."""
    return frame_of(normalized_columns(columns, rows, blocked))


# --- the schema ----------------------------------------------------------------------------

Message = Callable[[Any, int], str]  # (failing value, frame position) → message


@dataclass(frozen=True)
class Rule:
    code: str
    column: str
    check: Callable[[Any], Any]  # Series → bool Series (column rule) or DataFrame → bool Series
    message: Message
    row_level: bool = False
    # the same rule over a column's texts that are not empty (a plain list): True when it
    # holds for every one. Judged first, without pandas (`every_rule_holds`); column rules only
    holds: Callable[[list[str]], bool] | None = field(default=None, kw_only=True)


def _length_rule(column: Column) -> Rule:
    limit = column.max_length or 0
    return Rule(
        "max_length", column.name, lambda s: s.str.len() <= limit,
        lambda v, _: f"is {len(str(v))} characters long; at most {limit} are allowed",
        holds=lambda texts: max(map(len, texts), default=0) <= limit,
    )


def _account_message(value: Any, _: int) -> str:
    text = str(value)
    if _SHORTENED_NUMBER.fullmatch(text):
        return (f"{text} is a number the spreadsheet shortened; format the column as Text "
                "and type the full account number again")
    if text.isdigit() and not text.isascii():
        return (f"has digits other than 0-9 ({text!r}, e.g. full-width digits): type the "
                "account number again with plain digits")
    if not text.isdigit():
        return f"must be digits only (spaces and hyphens are allowed), got {text!r}"
    return f"has {len(text)} digits; an account number has 8 to 30"


def _uscc_message(value: Any, _: int) -> str:
    text = str(value)
    if len(text) != 18:
        return f"must be 18 characters (the unified social credit code), got {len(text)}: {text!r}"
    bad = sorted({ch for ch in text if ch not in USCC_ALPHABET})
    if bad:
        return (f"contains {', '.join(bad)}, which a unified social credit code never has "
                "(no I, O, S, V, Z); check the code on the business licence")
    return (f"check character is wrong — expected {uscc_check_char(text[:17])}, the code ends "
            f"in {text[17]}; check the code on the business licence")


def _resident_id_message(value: Any, _: int) -> str:
    text = str(value)
    if len(text) != 18:
        return f"must be 18 characters (resident ID number), got {len(text)}: {text!r}"
    if not (text[:17].isascii() and text[:17].isdigit()) or text[17] not in "0123456789X":
        return "must be 17 digits followed by a digit or X"
    if resident_id_birth_date(text) is None:
        return f"digits 7–14 ({text[6:14]}) are not a real date of birth"
    return (f"check digit is wrong — expected {resident_id_check_digit(text[:17])}, the number "
            f"ends in {text[17]}; check the ID card")


def _amount_message(value: Any, _: int) -> str:
    text = str(value)
    if re.fullmatch(r"-\s*" + AMOUNT_PATTERN, text):
        return f"must be more than 0, got {text}"
    if _SHORTENED_NUMBER.fullmatch(text):
        return f"write the amount as a plain number, not {text}"
    if "," in text:
        return (f"must be a number like 1250000.50 (a point for decimals, no thousands "
                f"separators), got {text!r}; if the file writes decimal commas (1.250.000,00), "
                "run with --decimal-comma")
    return f"must be a number like 1250000.50 (no currency signs or letters), got {text!r}"


def _choice_message(column: Column) -> Message:
    allowed = " or ".join(column.choices)
    return lambda v, _: f"must be {allowed}, got {v!r}"


def _currency_message(value: Any, _: int) -> str:
    return f"{value!r} is not an ISO 4217 currency code (like NGN, USD, CNY)"


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")  # C0 and C1 control characters, NUL too
_CONTROL_NAMES = {"\x00": "a NUL character", "\t": "a tab", "\n": "a line break",
                  "\r": "a carriage return", "\x1b": "an escape character"}


def _no_control(cells: pd.Series) -> pd.Series | bool:
    """True where a cell has no control character; one search over the whole column first
    (a per-cell search of every column costs a second at 100,000 rows)."""
    if not _CONTROL.search("".join(cells.dropna().tolist())):
        return True
    return ~cells.str.contains(_CONTROL.pattern)


def _no_control_in(texts: list[str]) -> bool:
    """The control rule on a plain list: printable text holds no control character, and
    str.isprintable is a plain loop in C (the search is for the rare text that is not)."""
    joined = "".join(texts)
    return joined.isprintable() or not _CONTROL.search(joined)


def _control_message(value: Any, _: int) -> str:
    text = str(value)
    found = _CONTROL.search(text)
    at = found.start() if found else 0
    what = _CONTROL_NAMES.get(text[at], f"the control character U+{ord(text[at]):04X}")
    return (f"contains {what} at character {at + 1}, which a bank field cannot carry; "
            "type the cell again (paste as plain text)")


def column_rules(column: Column) -> list[Rule]:
    """The checks of one column, most basic first (only the first failure is reported)."""
    name = column.name
    rules: list[Rule] = [
        Rule("control", name, _no_control, _control_message, holds=_no_control_in)]
    if name == "payout_ref":
        rules += [
            Rule("ref_format", name, lambda s: s.str.fullmatch(REF_PATTERN),
                 lambda v, _: f"must be 1–64 letters, digits or . _ - / (got {v!r})",
                 holds=_all_match(REF_PATTERN)),
            # r-1 and R-1 are one payment: unique whatever the case
            Rule("ref_unique", name, lambda s: ~s.str.upper().duplicated(keep=False),
                 lambda v, _: f"{v} is used by more than one row (a payout_ref names one "
                 "payment, whatever its case)",  # rows named by the caller
                 holds=lambda texts: len(set(map(str.upper, texts))) == len(texts)),
        ]
    elif name == "account_number":
        rules.append(Rule("account_digits", name, lambda s: s.str.fullmatch(ACCOUNT_PATTERN),
                          _account_message, holds=_all_match(ACCOUNT_PATTERN)))
    elif name == "sort_code":
        rules.append(Rule("digits", name, lambda s: s.str.fullmatch(r"[0-9]{1,30}"),
                          lambda v, _: f"must be digits only, got {v!r}",
                          holds=_all_match(r"[0-9]{1,30}")))
    elif name == "company_id":
        rules.append(Rule("uscc", name, lambda s: _per_value(s, is_valid_uscc), _uscc_message,
                          holds=lambda texts: all(map(is_valid_uscc, texts))))
    elif name == "ic_number":
        rules.append(Rule("resident_id", name, lambda s: _per_value(s, is_valid_resident_id),
                          _resident_id_message, holds=all_valid_resident_ids))
    elif column.kind == "amount":
        rules += [
            Rule("amount_number", name, lambda s: s.str.fullmatch(AMOUNT_PATTERN), _amount_message,
                 holds=_all_match(AMOUNT_PATTERN)),
            Rule("amount_positive", name, lambda s: ~s.str.fullmatch(r"0*(?:\.0*)?"),
                 lambda v, _: f"must be more than 0, got {v}",
                 holds=lambda texts: not any(map(_ZERO.fullmatch, texts))),
            Rule("amount_digits", name, lambda s: _significant(s) <= MAX_SIGNIFICANT,
                 lambda v, _: f"{v} has more than {MAX_SIGNIFICANT} significant digits: a "
                 "spreadsheet keeps only 15, so the number may already be rounded, and no "
                 "payout needs more; check the amount",
                 holds=_digits_hold),
        ]
    elif column.kind == "currency":
        rules.append(Rule("iso4217", name, lambda s: s.isin(EXPONENTS), _currency_message,
                          holds=lambda texts: set(texts) <= EXPONENTS.keys()))
    elif column.kind == "country":
        rules.append(Rule("iso3166", name, lambda s: s.str.fullmatch(r"[A-Z]{2}"),
                          lambda v, _: f"must be a two-letter country code like CN, got {v!r}",
                          holds=_all_match(r"[A-Z]{2}")))
    elif column.kind == "choice":
        choices = list(column.choices)
        rules.append(Rule("choice", name, lambda s: s.isin(choices), _choice_message(column),
                          holds=lambda texts: set(texts) <= set(choices)))
    if column.max_length and (column.kind == "text" or name == "payee_id"):
        rules.append(_length_rule(column))
    return rules


_ZERO = re.compile(r"0*(?:\.0*)?")


def _all_match(pattern: str) -> Callable[[list[str]], bool]:
    """The plain-list form of `s.str.fullmatch(pattern)`: every text matches whole."""
    compiled = re.compile(pattern)
    return lambda texts: all(map(compiled.fullmatch, texts))


def _per_value(cells: pd.Series, check: Callable[[Any], bool]) -> pd.Series:
    """`check` of every cell that is not empty (an empty cell holds: pandera ignores it)."""
    return cells.map(check, na_action="ignore").fillna(True).astype(bool)


def _significant(amounts: pd.Series) -> pd.Series:
    """Digits of each amount text without leading zeros and trailing fractional zeros (0 for
    an empty cell or a text that is no plain amount: other rules name those)."""
    return amounts.map(_digits_kept, na_action="ignore").fillna(0).astype("int64")


def _digits_hold(texts: list[str]) -> bool:
    """amount_digits on plain lists: a text of at most 15 characters keeps at most 15 digits,
    so only longer ones are counted."""
    return max(map(len, texts), default=0) <= MAX_SIGNIFICANT or all(
        len(text) <= MAX_SIGNIFICANT or _digits_kept(text) <= MAX_SIGNIFICANT for text in texts)


def _digits_kept(text: Any) -> int:
    if type(text) is not str or not _PLAIN_AMOUNT.fullmatch(text):
        return 0
    whole, _, fraction = text.partition(".")
    return len(whole.lstrip("0")) + len(fraction.rstrip("0"))


def _decimals(amounts: pd.Series) -> pd.Series:
    """Decimals of each amount text, trailing zeros not counted ("10.50" → 1); 0 for an
    empty cell or a text that is no plain amount."""
    return amounts.map(_decimals_of, na_action="ignore").fillna(0).astype("int64")


def _decimals_of(text: Any) -> int:
    if type(text) is not str or not _PLAIN_AMOUNT.fullmatch(text):
        return 0
    return len(text.partition(".")[2].rstrip("0"))


def row_rules(frame: pd.DataFrame) -> list[Rule]:
    """Rules over several columns; each is reported once, against the column named."""
    def decimals(amount: str, currency: str) -> Rule:
        """An amount column has at most its currency's decimals (never rounded)."""
        exponents = frame[currency].map(EXPONENTS)

        def message(_: Any, position: int) -> str:
            found = int(_decimals(frame[amount].iloc[position:position + 1]).iat[0])
            return (f"{frame[amount].iat[position]} has {found} decimals but "
                    f"{frame[currency].iat[position]} has {int(exponents.iat[position])}; "
                    "batchpay never rounds, so correct the amount")

        return Rule(f"{amount}_decimals", amount,
                    lambda df: ~(_decimals(df[amount]) > exponents) | exponents.isna()
                    | ~df[amount].str.fullmatch(AMOUNT_PATTERN).fillna(False).astype(bool),
                    message, row_level=True)

    def business(column: str) -> Rule:
        return Rule(f"business_{column}", column,
                    lambda df: ~((df["recipient_type"] == "BUSINESS") & df[column].isna()),
                    lambda v, _: "required when recipient_type is BUSINESS", row_level=True)

    def one_amount_message(_: Any, position: int) -> str:
        import pandas as pd

        if pd.isna(frame["amount"].iat[position]):
            return ("fill amount (what leaves your wallet) or target_amount (what the "
                    "recipient must receive)")
        return ("amount and target_amount are both filled: fill exactly one (amount: what "
                "leaves your wallet; target_amount: what the recipient must receive)")

    return [
        business("company_name"),
        business("company_id"),
        Rule("one_amount", "amount",
             lambda df: df["amount"].notna() ^ df["target_amount"].notna(),
             one_amount_message, row_level=True),
        decimals("amount", "source_currency"),
        decimals("target_amount", "currency"),
    ]


def _empty(values: list[str | None]) -> Iterator[bool]:
    """True for each empty cell."""
    return map(operator.is_, values, repeat(None))


def _decimals_within(amounts: list[str | None], currencies: list[str | None]) -> bool:
    """True when no amount has more characters after a point than the fewest decimals of
    the currencies named: then none has more decimals than its own currency, and the rows
    need no look one by one. One search over the amounts joined, in C."""
    fewest = min((EXPONENTS[code] for code in set(currencies) if code in EXPONENTS),
                 default=None)
    if fewest is None:
        return True  # no currency known: the decimals rule holds on every row
    joined = "\n".join(filter(None, amounts))
    return re.search(rf"\.[^.\n]{{{fewest + 1}}}", joined) is None


def row_rules_hold(data: dict[str, list[str | None]]) -> bool:
    """`row_rules` judged on the plain columns: True when every one holds on every row."""
    # map and compress run in C: no Python step per row
    kinds = data["recipient_type"]
    for column in ("company_name", "company_id"):  # business(...): no BUSINESS row empty
        if "BUSINESS" in compress(kinds, _empty(data[column])):
            return False
    if not all(map(operator.xor, _empty(data["amount"]), _empty(data["target_amount"]))):
        return False  # one_amount
    for amount, currency in (("amount", "source_currency"), ("target_amount", "currency")):
        if _decimals_within(data[amount], data[currency]):
            continue
        for text, code in zip(data[amount], data[currency], strict=True):  # decimals(...)
            # an empty amount, or one that is no plain amount, counts 0 decimals; the
            # characters after a point are counted first (never fewer than its decimals)
            if text is not None and code in EXPONENTS \
                    and (point := text.find(".")) != -1 and len(text) - point - 1 > EXPONENTS[code] \
                    and _decimals_of(text) > EXPONENTS[code]:
                return False
    return True


def schema_for(frame: pd.DataFrame, *, required_currency: bool = True
               ) -> tuple[pa.DataFrameSchema, dict[tuple[str, str], Rule]]:
    """The pandera schema from the column table, and each check's rule by (column, code)."""
    import pandera.pandas as pa

    registry: dict[tuple[str, str], Rule] = {}
    pandera_columns: dict[str, pa.Column] = {}
    for column in COLUMNS:
        rules = column_rules(column)
        checks = [pa.Check(rule.check, name=rule.code) for rule in rules]
        registry.update({(column.name, rule.code): rule for rule in rules})
        required = column.required == "yes" or (column.required == "yes*" and required_currency)
        pandera_columns[column.name] = pa.Column(None, nullable=not required, checks=checks)
    frame_rules = row_rules(frame)
    registry.update({("*", rule.code): rule for rule in frame_rules})
    frame_checks = [pa.Check(rule.check, name=rule.code) for rule in frame_rules]
    return pa.DataFrameSchema(pandera_columns, checks=frame_checks), registry


# --- failures → messages -------------------------------------------------------------------


@dataclass(frozen=True)
class Failure:
    position: int  # row position in the frame
    column: str
    message: str


def failures(frame: pd.DataFrame, *, required_currency: bool = True) -> list[Failure]:
    """Every rule broken, at most one message per row and column (the most basic rule).

    Called when `every_rule_holds` found a rule that fails (on a sheet ready to pay,
    neither pandas nor pandera is loaded: at 100,000 rows their bookkeeping costs more than
    the checks); pandera runs the rules and reports each failure."""
    import pandas as pd
    from pandera.errors import SchemaErrors

    schema, registry = schema_for(frame, required_currency=required_currency)
    try:
        schema.validate(frame, lazy=True)
    except SchemaErrors as exc:
        cases = exc.failure_cases
    else:
        return []
    order = {name: i for i, name in enumerate(COLUMN_NAMES)}
    priority = _rule_priority(registry)
    found: dict[tuple[int, str], tuple[int, Failure]] = {}
    for context, column, check, value, position in zip(
        cases["schema_context"], cases["column"], cases["check"], cases["failure_case"],
        cases["index"], strict=True,
    ):
        if position is None or pd.isna(position):
            continue  # a schema-level problem (a missing column): reported before validation
        position = int(position)
        if context == "DataFrameSchema":
            rule = registry.get(("*", str(check)))
            if rule is None:
                continue
            column = rule.column
            value = frame[column].iat[position]
        elif check == "not_nullable":
            rule = None
        else:
            rule = registry.get((str(column), str(check)))
            if rule is None:
                continue
        rank = -1 if rule is None else priority[(rule.column, rule.code)]
        key = (position, str(column))
        if key in found and found[key][0] <= rank:
            continue
        message = _required_message(str(column)) if rule is None else rule.message(value, position)
        found[key] = (rank, Failure(position, str(column), message))
    return sorted((f for _, f in found.values()),
                  key=lambda f: (f.position, order.get(f.column, len(order))))


def every_rule_holds(data: dict[str, list[str | None]], *, required_currency: bool = True
                     ) -> bool:
    """True when no rule of `schema_for` fails, judged on the plain columns
    (`normalized_columns`) as pandera judges: a required column has no empty cell, and a
    rule holds for every cell that is not empty (pandera ignores empty cells in checks).
    False sends the sheet to pandera (`failures`), which says which rule fails where."""
    for column in COLUMNS:
        values = data[column.name]
        empty = values.count(None)
        required = column.required == "yes" or (column.required == "yes*" and required_currency)
        if required and empty:
            return False
        if empty == len(values):
            continue  # every check ignores empty cells
        texts = [v for v in values if v is not None] if empty else cast(list[str], values)
        if not all(rule.holds is not None and rule.holds(texts)
                   for rule in column_rules(column)):
            return False
    return row_rules_hold(data)


def _rule_priority(registry: dict[tuple[str, str], Rule]) -> dict[tuple[str, str], int]:
    priority: dict[tuple[str, str], int] = {}
    for rank, rule in enumerate(registry.values()):
        priority[(rule.column, rule.code)] = rank
    return priority


def _required_message(column: str) -> str:
    if column == "source_currency":
        return "required (or run the command with --source-currency)"
    return "required"
