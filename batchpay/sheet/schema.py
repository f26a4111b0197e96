"""The pandera schema of a payout sheet, derived from the column table.

`normalize.normalized_columns` turns the values as read into one list of texts per known
column (upper-cased codes, defaults filled in, account numbers without spaces and hyphens).
`every_rule_holds` judges every rule on those plain lists (each rule's `holds`): a sheet
ready to pay is passed without loading pandas or pandera, which cost more than the checks
at 100,000 rows. Otherwise `schema_for` checks the same columns as a frame
(`normalize.frame_of`) with pandera (lazy, so every failure is collected), and `failures`
turns pandera's failure cases into one message per row and column that a finance person can
act on (`rule_messages`). A rule's pandas check and its `holds` say the
same thing twice; tests/sheet/test_schema_fast_path.py holds them to agreeing.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from itertools import compress, repeat
from typing import TYPE_CHECKING, Any, cast

from batchpay.money import EXPONENTS
from batchpay.sheet.china_ids import all_valid_resident_ids, is_valid_resident_id, is_valid_uscc
from batchpay.sheet.columns import COLUMN_NAMES, COLUMNS, Column
from batchpay.sheet.rule_messages import (
    ACCOUNT_PATTERN,
    AMOUNT_PATTERN,
    CONTROL,
    EMAIL_PATTERN,
    REF_PATTERN,
    Message,
    account_message,
    amount_message,
    choice_message,
    control_message,
    currency_message,
    email_message,
    resident_id_message,
    uscc_message,
)

if TYPE_CHECKING:
    import pandas as pd
    import pandera.pandas as pa

MAX_SIGNIFICANT = 15  # what a spreadsheet keeps of a number; no payout needs more
REF_UNIQUE = "ref_unique"  # the rule that no two rows share a payout_ref, whatever its case
_PLAIN_AMOUNT = re.compile(AMOUNT_PATTERN)


# --- the schema ----------------------------------------------------------------------------

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


def _no_control(cells: pd.Series) -> pd.Series | bool:
    """True where a cell has no control character; one search over the whole column first
    (a per-cell search of every column costs a second at 100,000 rows)."""
    if not CONTROL.search("".join(cells.dropna().tolist())):
        return True
    return ~cells.str.contains(CONTROL.pattern)


def _no_control_in(texts: list[str]) -> bool:
    """The control rule on a plain list: printable text holds no control character, and
    str.isprintable is a plain loop in C (the search is for the rare text that is not)."""
    joined = "".join(texts)
    return joined.isprintable() or not CONTROL.search(joined)



def column_rules(column: Column) -> list[Rule]:
    """The checks of one column, most basic first (only the first failure is reported)."""
    name = column.name
    rules: list[Rule] = [
        Rule("control", name, _no_control, control_message, holds=_no_control_in)]
    if name == "payout_ref":
        rules += [
            Rule("ref_format", name, lambda s: s.str.fullmatch(REF_PATTERN),
                 lambda v, _: f"must be 1–64 letters, digits or . _ - / (got {v!r})",
                 holds=_all_match(REF_PATTERN)),
            # r-1 and R-1 are one payment: unique whatever the case
            Rule(REF_UNIQUE, name, lambda s: ~s.str.upper().duplicated(keep=False),
                 lambda v, _: f"{v} is used by more than one row (a payout_ref names one "
                 "payment, whatever its case)",  # rows named by the caller
                 holds=lambda texts: len(set(map(str.upper, texts))) == len(texts)),
        ]
    elif name == "account_number":
        rules.append(Rule("account_digits", name, lambda s: s.str.fullmatch(ACCOUNT_PATTERN),
                          account_message, holds=_all_match(ACCOUNT_PATTERN)))
    elif name == "sort_code":
        rules.append(Rule("digits", name, lambda s: s.str.fullmatch(r"[0-9]{1,30}"),
                          lambda v, _: f"must be digits only, got {v!r}",
                          holds=_all_match(r"[0-9]{1,30}")))
    elif name == "payee_email":
        rules.append(Rule("email", name, lambda s: s.str.fullmatch(EMAIL_PATTERN),
                          email_message, holds=_all_match(EMAIL_PATTERN)))
    elif name == "company_id":
        rules.append(Rule("uscc", name, lambda s: _per_value(s, is_valid_uscc), uscc_message,
                          holds=lambda texts: all(map(is_valid_uscc, texts))))
    elif name == "ic_number":
        rules.append(Rule("resident_id", name, lambda s: _per_value(s, is_valid_resident_id),
                          resident_id_message, holds=all_valid_resident_ids))
    elif column.kind == "amount":
        rules += [
            Rule("amount_number", name, lambda s: s.str.fullmatch(AMOUNT_PATTERN), amount_message,
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
        rules.append(Rule("iso4217", name, lambda s: s.isin(EXPONENTS), currency_message,
                          holds=lambda texts: set(texts) <= EXPONENTS.keys()))
    elif column.kind == "country":
        rules.append(Rule("iso3166", name, lambda s: s.str.fullmatch(r"[A-Z]{2}"),
                          lambda v, _: f"must be a two-letter country code like CN, got {v!r}",
                          holds=_all_match(r"[A-Z]{2}")))
    elif column.kind == "choice":
        choices = list(column.choices)
        rules.append(Rule("choice", name, lambda s: s.isin(choices), choice_message(column),
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

    def oneamount_message(_: Any, position: int) -> str:
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
             oneamount_message, row_level=True),
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
    rule: str = ""  # the broken rule's code (ref_unique ...); "": a required cell is empty


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
        found[key] = (rank, Failure(position, str(column), message,
                                    "" if rule is None else rule.code))
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
