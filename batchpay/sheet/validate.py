"""Validate a sheet as read: every row VALID (with its payout request ready) or INVALID.

`validate_sheet` is what `batchpay validate` and the batch engine call. Each failure is
one message per row and column ("company_id: check character is wrong — expected 3 ...");
a row that pays the same account the same amount as another gets a warning, not an error,
and so does a row whose remark is cut to carry its `ref:` tag (`ref_tag`).
"""

from __future__ import annotations

import difflib
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from decimal import Decimal
from pathlib import Path
from typing import Any

from batchpay.errors import InputError, UsageError
from batchpay.money import is_currency, minor_unit
from batchpay.sheet.columns import COLUMN_NAMES, COLUMNS, COLUMNS_BY_NAME, ONE_OF
from batchpay.sheet.outcomes import json_row
from batchpay.sheet.read import Sheet, paused_gc, read_sheet
from batchpay.sheet.read_options import DEFAULT_READ, ReadOptions
from batchpay.sheet.ref_tag import REF_LIMIT, REF_TAG, REMARK_LIMIT, remark_cut
from batchpay.statuses import HoldKind, Status, exit_code


@dataclass(frozen=True)
class PayoutRow:
    """The normalized values of a VALID row: everything a quote and a payout need."""

    row: int
    payout_ref: str
    recipient_type: str
    recipient_name: str
    company_name: str | None
    company_id: str | None
    ic_number: str | None
    account_number: str  # digits only
    bank_name: str
    bank_city: str | None
    sort_code: str | None
    amount: Decimal | None  # with the source currency's decimals; None: target_amount given
    # what the recipient must receive (target currency), the source amount found by quotes
    target_amount: Decimal | None
    payee_id: str | None  # keys the payee register (batchpay's own, never sent)
    payee_email: str | None  # where the remittance advice goes (never sent)
    source_currency: str
    reason: str
    remark: str | None
    item_category: str | None
    currency: str = "CNY"
    country: str = "CN"
    payment_channel: str = "BANK_TRANSFER"

    def payout_body(self, quote_id: str) -> dict[str, Any]:
        """The payout request body; optional fields without a value are left out, never null."""
        body: dict[str, Any] = {"quoteId": quote_id}
        for name, parents, leaf in _BODY_FIELDS:
            value = getattr(self, name)
            if value is None or value == "":
                continue
            target = body
            for part in parents:
                target = target.setdefault(part, {})
            target[leaf] = value
        return body


# the payout body's fields, from the column table: (column, the field's parents, its name)
_BODY_FIELDS = [(column.name, tuple(path[:-1]), path[-1]) for column in COLUMNS
                if column.api_field is not None and not column.api_field.startswith("quote:")
                for path in [column.api_field.split(".")]]


@dataclass(slots=True)
class RowCheck:
    row: int  # row number in the sheet
    values: list[Any]  # as read, aligned with Sheet.columns
    status: str  # VALID | INVALID
    errors: list[str] = field(default_factory=list)  # each "column: message"
    warnings: list[str] = field(default_factory=list)
    payout_ref: str = ""  # as written (for reports), "" when empty
    # a VALID row's normalized texts, by column (the column table's order), and its position
    # in them: its PayoutRow is made of them when first asked for (`payout`)
    texts: Sequence[list[str | None]] | None = field(default=None, repr=False, compare=False)
    position: int = field(default=0, repr=False, compare=False)
    _payout: PayoutRow | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def payout(self) -> PayoutRow | None:
        """A VALID row's PayoutRow, None for an INVALID row.

        Made when first asked for (a run, the bank-name and the payee checks ask; the rules
        need none): 22 fields set on 100,000 objects cost a third of the checks' time."""
        if self._payout is None and self.texts is not None:
            self._payout = _payout_row(self.row, [column[self.position]
                                                  for column in self.texts])
        return self._payout

    @property
    def error(self) -> str:
        return "; ".join(self.errors)

    @property
    def warning(self) -> str:
        return "; ".join(self.warnings)

    def money(self, columns: Sequence[str]) -> tuple[Decimal | None, str]:
        """(source amount, source currency) of the row: a VALID row's own, else what can be
        read of an INVALID row's cells (so the Summary counts it under its currency)."""
        if self.payout is not None:
            return self.payout.amount, self.payout.source_currency
        cells = dict(zip(columns, self.values, strict=False))
        currency = str(cells.get("source_currency") or "").strip().upper()
        if not is_currency(currency):
            currency = ""
        amount = cells.get("amount")
        try:
            value = Decimal(str(amount)) if isinstance(amount, int | Decimal | str) else None
        except ArithmeticError:
            value = None
        return (value if value is not None and value.is_finite() else None), currency


@dataclass
class Validation:
    rows: list[RowCheck]  # in input order

    @property
    def counts(self) -> dict[str, int]:
        counts = Counter(r.status for r in self.rows)
        return {status: counts[status] for status in (Status.VALID, Status.INVALID)
                if counts[status]}

    @property
    def valid(self) -> list[PayoutRow]:
        return [r.payout for r in self.rows if r.payout is not None]

    @property
    def all_valid(self) -> bool:
        return all(r.status == Status.VALID for r in self.rows)


def validate_sheet(sheet: Sheet, *, source_currency: str | None = None) -> Validation:
    """Check every row against the column table; the sheet-wide problems raise InputError."""
    with paused_gc():
        return _validate(sheet, source_currency)


def _validate(sheet: Sheet, source_currency: str | None) -> Validation:
    from batchpay.sheet import normalize, schema

    option = _source_currency_option(source_currency)
    _require_columns(sheet, currency_given=option is not None)
    rows = sheet.rows
    # the cells' problems, by position: few rows have any, so only theirs are kept
    errors: dict[int, dict[str, str]] = {p: dict(r.errors) for p, r in enumerate(rows)
                                         if r.errors}
    blocked = {p: list(e) for p, e in errors.items()}
    read = sheet.values_by_column()
    data = (normalize.normalized_columns(sheet.columns, [r.values for r in rows], blocked)
            if read is None else
            normalize.normalized_columns(sheet.columns, (), blocked, read.values, read.texts))
    if option is not None:
        _apply_option(data, option, errors)
    if not schema.every_rule_holds(data, required_currency=option is None):
        shared: set[int] = set()  # rows whose payout_ref error is that another row has it
        for failure in schema.failures(normalize.frame_of(data), required_currency=option is None):
            found = errors.setdefault(failure.position, {})
            if failure.column not in found:
                found[failure.column] = failure.message
                if failure.rule == schema.REF_UNIQUE:
                    shared.add(failure.position)
        # every rule holding includes ref_unique: no ref is used twice, none to name
        _name_duplicate_refs(data["payout_ref"], sheet, errors, shared)
    warnings = _same_account_same_amount(data, sheet)
    _remarks_cut(data, warnings)
    # the normalized texts in the column table's order (= PayoutRow's field order), from
    # which a VALID row's PayoutRow is made when asked for
    texts = [data[name] for name in COLUMN_NAMES]
    refs = texts[_REF]
    order = {name: i for i, name in enumerate(COLUMN_NAMES)}
    if not errors and not warnings:  # the usual case, in one comprehension
        return Validation([RowCheck(row.row, row.values, Status.VALID, [], [], ref or "",
                                    texts, position)
                           for position, (row, ref) in enumerate(zip(rows, refs, strict=True))])
    checks: list[RowCheck] = []
    for position, row in enumerate(rows):
        row_errors = errors.get(position)
        ref_text = refs[position] or ""
        if row_errors:
            messages = [f"{c}: {m}" for c, m in sorted(row_errors.items(),
                                                          key=lambda i: order.get(i[0], 99))]
            checks.append(RowCheck(row.row, row.values, Status.INVALID, messages,
                                   warnings.get(position, []), ref_text))
        else:
            checks.append(RowCheck(row.row, row.values, Status.VALID, [],
                                   warnings.get(position, []), ref_text, texts, position))
    return Validation(checks)


def _source_currency_option(code: str | None) -> str | None:
    if code is None or not code.strip():
        return None
    if not is_currency(code):
        raise UsageError(f"--source-currency {code} is not an ISO 4217 currency code.",
                         hint="Use a code like NGN or USD.")
    return code.strip().upper()


def _require_columns(sheet: Sheet, *, currency_given: bool) -> None:
    missing = [c.name for c in COLUMNS
               if c.name not in sheet.columns
               and (c.required == "yes" or (c.required == "yes*" and not currency_given))]
    if not any(name in sheet.columns for name in ONE_OF):
        missing.insert(0, " or ".join(ONE_OF))
    if not missing:
        return
    unknown = [c for c in sheet.columns if c not in COLUMNS_BY_NAME]
    guesses = []
    for group in missing:
        for name in group.split(" or "):  # "amount or target_amount": either will do
            close = difflib.get_close_matches(name, unknown, n=1, cutoff=0.6)
            if close:
                guesses.append(f"rename {close[0]} to {name}")
                break
    if "source_currency" in missing:
        missing[missing.index("source_currency")] = "source_currency (or --source-currency)"
    plural = "s" if len(missing) > 1 else ""
    hint = ("Maybe: " + "; ".join(guesses) + "." if guesses
            else "Add the column" + plural + ", or start from `batchpay template`.")
    raise InputError(f"Sheet {sheet.sheet_name!r} has no column{plural} "
                     f"{', '.join(missing)} (required).", hint=hint)


def _apply_option(data: dict[str, list[str | None]], option: str,
                  errors: dict[int, dict[str, str]]) -> None:
    """--source-currency fills empty cells; a cell that says otherwise is an error, not overruled."""
    column = data["source_currency"]
    for position, code in enumerate(column):
        if code is not None and code != option:
            errors.setdefault(position, {}).setdefault(
                "source_currency",
                f"{code} in the sheet, but --source-currency {option} was given; "
                "correct the cell or leave it empty")
    data["source_currency"] = [option if code is None else code for code in column]


def _name_duplicate_refs(refs: list[str | None], sheet: Sheet,
                         errors: dict[int, dict[str, str]], shared: set[int]) -> None:
    """The rows `shared` (their payout_ref error: another row uses it) name those rows."""
    upper = [ref.upper() for ref in refs if ref is not None]
    if len(set(upper)) == len(upper):
        return  # no ref is used twice (the usual case: counted only when one is)
    counts = Counter(upper)
    rows_by_ref: dict[str, list[int]] = defaultdict(list)
    for position, ref in enumerate(refs):
        if ref is not None and counts[ref.upper()] > 1:
            rows_by_ref[ref.upper()].append(position)
    for positions in rows_by_ref.values():
        for position in positions:
            others = ", ".join(f"{sheet.rows[p].row} ({refs[p]})" if refs[p] !=
                               refs[position] else str(sheet.rows[p].row)
                               for p in positions if p != position)
            cased = len({refs[p] for p in positions}) > 1
            if position in shared:
                errors[position]["payout_ref"] = (
                    f"{refs[position]} is also used in row {others}; every payout needs "
                    "its own payout_ref" + (" (refs that differ only in case are one)"
                                            if cased else ""))


def _same_account_same_amount(data: dict[str, list[str | None]], sheet: Sheet
                              ) -> dict[int, list[str]]:
    """Rows paying the same account the same amount: maybe a double payment, maybe not."""
    accounts = data["account_number"]
    filled = [account for account in accounts if account is not None]
    if len(set(filled)) == len(filled):
        return {}  # no account is paid twice (the usual case: counted only when one is)
    counts = Counter(filled)
    groups: dict[tuple[str, str, Decimal, str], list[int]] = defaultdict(list)
    for position, account in enumerate(accounts):
        if account is None or counts[account] < 2:
            continue
        for name in ONE_OF:  # the same invoice amount counts as the same amount too
            amount = _decimal(data[name][position])
            if amount is not None:
                key = (account, name, amount, str(data["source_currency"][position]))
                groups[key].append(position)
                break
    warnings: dict[int, list[str]] = {}
    for positions in groups.values():
        if len(positions) < 2:
            continue
        for position in positions:
            others = ", ".join(str(sheet.rows[p].row) for p in positions if p != position)
            warnings[position] = [f"account_number: same account and amount as row {others}; "
                                  "check this is not a double payment"]
    return warnings


def _remarks_cut(data: dict[str, list[str | None]], warnings: dict[int, list[str]]) -> None:
    """Rows whose remark is cut to carry the `ref:` tag: the payout is sent, the row says so."""
    shortest = REMARK_LIMIT - len(REF_TAG) - REF_LIMIT - 1  # the room a 64-character ref leaves
    for position, (remark, ref) in enumerate(zip(data["remark"], data["payout_ref"],
                                                 strict=True)):
        if remark is not None and shortest < len(remark) <= REMARK_LIMIT \
                and (cut := remark_cut(remark, ref)):
            warnings.setdefault(position, []).append(cut)


def _decimal(text: Any) -> Decimal | None:
    from decimal import InvalidOperation

    if not isinstance(text, str):
        return None
    try:
        value = Decimal(text)
    except InvalidOperation:
        return None
    return value.normalize() if value.is_finite() else None


_REF = COLUMN_NAMES.index("payout_ref")
_AMOUNT = COLUMN_NAMES.index("amount")
_SOURCE_CURRENCY = COLUMN_NAMES.index("source_currency")
_TARGET_AMOUNT = COLUMN_NAMES.index("target_amount")
_CURRENCY = COLUMN_NAMES.index("currency")
_QUANTUM: dict[str, Decimal] = {}
_PAYOUT_FIELDS = [f.name for f in fields(PayoutRow)]


def _payout_row(row: int, record: Sequence[str | None]) -> PayoutRow:
    """A VALID row's PayoutRow from its normalized texts (in the column table's order; an
    empty text is None)."""
    values: list[Any] = [text or None for text in record]
    currency = values[_SOURCE_CURRENCY]
    quantum = _QUANTUM.get(currency)
    if quantum is None:
        quantum = _QUANTUM[currency] = minor_unit(currency)
    # exact: the amount has at most the currency's decimals, this only pads zeros
    if values[_AMOUNT] is not None:
        values[_AMOUNT] = Decimal(values[_AMOUNT]).quantize(quantum)
    if values[_TARGET_AMOUNT] is not None:
        target = values[_CURRENCY]
        values[_TARGET_AMOUNT] = Decimal(values[_TARGET_AMOUNT]).quantize(
            minor_unit(target))
    # a frozen dataclass's __init__ sets its 22 fields one by one through object.__setattr__,
    # a third of the checks' time at 100,000 rows: the same fields, set at once
    payout = object.__new__(PayoutRow)
    payout.__dict__.update(zip(_PAYOUT_FIELDS, (row, *values), strict=True))
    return payout


# --- the library function behind `batchpay validate` ---------------------------------------


@dataclass
class ValidateOutcome:
    sheet: Sheet
    validation: Validation
    report: Path | None = None

    @property
    def exit_code(self) -> int:
        """0 when every row is VALID, else 1 (`statuses.exit_code`)."""
        return exit_code(r.status for r in self.validation.rows)

    def json_rows(self) -> list[dict[str, Any]]:
        """The rows of the `--json` document (run_id and reference_number are for runs)."""
        return [json_row(row=r.row, payout_ref=r.payout_ref or None, status=r.status,
                         error=r.error)
                for r in self.validation.rows]


def validate_file(path: Path, read: ReadOptions = DEFAULT_READ, *,
                  report: Path | None = None) -> ValidateOutcome:
    """Read and validate a sheet; with `report`, write the results-format workbook there."""
    sheet, validation = read_payouts(path, read)
    if report is not None:
        write_validation_report(report, sheet, validation)
    return ValidateOutcome(sheet, validation, report)


def read_payouts(path: Path, read: ReadOptions = DEFAULT_READ, *,
                 results: bool = False) -> tuple[Sheet, Validation]:
    """The input of `validate`, `run` and `plan`: a payout sheet; with `results` (`rerun`),
    the Results sheet of a results workbook read back as the payout sheet it came from.
    Read, required to hold rows, validated (the collector paused once for both: each pause
    ends in a collection that goes over every cell created)."""
    with paused_gc():
        return _read_payouts(path, read, results)


def _read_payouts(path: Path, read: ReadOptions, results: bool) -> tuple[Sheet, Validation]:
    if results:
        from batchpay.sheet.results_input import read_results_sheet

        sheet = read_results_sheet(path, sheet=read.sheet_name, limits=read.limits,
                                   include_hidden=read.include_hidden)
    else:
        sheet = read_sheet(path, sheet=read.sheet_name, limits=read.limits,
                           decimal_comma=read.decimal_comma,
                           include_hidden=read.include_hidden, encoding=read.encoding)
    require_payout_rows(sheet)
    return sheet, validate_sheet(sheet, source_currency=read.source_currency)


def require_payout_rows(sheet: Sheet) -> None:
    """A sheet with headers and no rows is a mistake (the wrong file or sheet), never "done"."""
    if not sheet.rows:
        raise InputError(f"Sheet {sheet.sheet_name!r} has headers but no payout rows.",
                         hint="Fill one row per payout below the headers.")


def write_validation_report(path: Path, sheet: Sheet, validation: Validation, *,
                            held: dict[int, str] | None = None,
                            payee_changes: Sequence[Mapping[str, Any]] = ()) -> None:
    """The results-format workbook: every input row as read, then row, status, error, warning.
    `held`: sheet row → why the payee register would hold it (a run would make it HELD)."""
    from batchpay.sheet.outcomes import ResultRow
    from batchpay.sheet.results import VALIDATE_COLUMNS, write_results

    held = held or {}

    def result(check: RowCheck) -> ResultRow:
        amount, currency = check.money(sheet.columns)
        status, error = check.status, check.error
        if status == Status.VALID and check.row in held:
            status, error = Status.HELD, held[check.row]
        p = check.payout  # an invoice row asks its target amount: counted as asked, not missing
        return ResultRow(row=check.row, inputs=check.values, status=status,
                         payout_ref=check.payout_ref, hold=HoldKind.PAYEE if status == Status.HELD else None,
                         error=error, warning=check.warning, amount=amount,
                         source_currency=currency,
                         asked=p.target_amount if p is not None else None,
                         target_currency=p.currency if p is not None else "")

    rows = (result(check) for check in validation.rows)
    # headers as the operator wrote them; an empty header keeps its generated name
    headers = [text or name for text, name in zip(sheet.headers, sheet.columns, strict=True)]
    write_results(Path(path), input_columns=headers, rows=rows, result_columns=VALIDATE_COLUMNS,
                  payee_changes=payee_changes)
