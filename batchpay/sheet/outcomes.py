"""What happened to each row, and the Summary's figures: counts per status and money per
source currency with the control totals (valid = sent + not sent)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from batchpay.statuses import SENT, UNSENT, HoldKind, Status, in_order

# the control totals as the Summary and the README state them (VALID: validate reports only)
CONTROL_TOTALS = ("valid = sent + not sent, where not sent = "
                  + " + ".join(in_order(UNSENT - {Status.VALID}))
                  + " and sent = " + " + ".join(in_order(SENT)))


@dataclass
class ResultRow:
    row: int  # row number in the original sheet
    inputs: Sequence[Any]  # input values as read, aligned with input_columns
    status: str
    payout_ref: str = ""  # the row's payout_ref as the journal keeps it (never re-read from inputs)
    error: str = ""
    warning: str = ""
    reference_number: str = ""
    payout_id: str = ""
    quote_id: str = ""
    rate: Decimal | None = None
    fee: Decimal | None = None  # in source currency
    delivered: Decimal | None = None  # what the quote gives the recipient, target currency
    total_debit: Decimal | None = None  # in source currency
    updated_at: str = ""  # UTC ISO 8601
    amount: Decimal | None = None  # the row's source amount (for the Summary money totals)
    source_currency: str = ""
    target_currency: str = ""
    quotes_used: int | None = None  # invoice rows: quotes it took to find the source amount
    asked: Decimal | None = None  # invoice rows: the target_amount the recipient must receive
    hold: HoldKind | None = None  # a HELD row: why (its next step depends on it)
    quoted_only: bool = False  # a dry run's row quoted as it would be paid: nothing was paid

    @property
    def next_step(self) -> str:
        """What the operator does about this row (the Results sheet's next_step column)."""
        return self._step().plain

    @property
    def approval_next_step(self) -> str:
        """next_step where runs pay only approved plans (`require_approval`): a row is paid
        again through a plan of this workbook, never by a rerun."""
        return self._step().approval

    def _step(self) -> Step:
        if self.status == Status.HELD:
            return HELD_REPEAT_STEP if self.hold == HoldKind.REPEAT else HELD_PAYEE_STEP
        if self.status == Status.NOT_SENT and self.quoted_only:
            return DRY_RUN_STEP
        return NEXT_STEPS.get(self.status, NO_STEP)


@dataclass(frozen=True)
class Step:
    """A row's next step, said twice: where runs pay sheets and results workbooks, and where
    runs pay only approved plans (`require_approval`), each text whole (never one made from
    the other's words)."""

    plain: str
    approval: str = ""  # "": the same as `plain`

    def __post_init__(self) -> None:
        if not self.approval:
            object.__setattr__(self, "approval", self.plain)


_PLAN = "make a plan of this workbook (`batchpay plan RESULTS.xlsx`) for approval"
NO_STEP = Step("")
NEXT_STEPS: dict[str, Step] = {
    Status.INVALID: Step("fix the cell named in error, then run again (or rerun this workbook)",
                         f"fix the cell named in error, then run again (or {_PLAN})"),
    Status.NOT_SENT: Step("rerun this workbook: the row will be sent (if another row was "
                          "invalid, fix that row first)",
                          f"{_PLAN}: the row will be sent (if another row was invalid, fix "
                          "that row first)"),
    Status.QUOTE_FAILED: Step("fix the amount named in error, then rerun",
                              f"fix the amount named in error, then {_PLAN}"),
    Status.REJECTED: Step("read error, fix its cause, then rerun",
                          f"read error, fix its cause, then {_PLAN}"),
    Status.PENDING: Step("nothing now: run `batchpay sync` later"),
    Status.PROCESSING: Step("nothing now: run `batchpay sync` later"),
    Status.FAILED: Step("wait for REFUNDED, check the name and account with the recipient, "
                        "fix, then rerun",
                        "wait for REFUNDED, check the name and account with the recipient, "
                        f"fix, then {_PLAN}"),
    Status.REFUNDED: Step("check the name and account with the recipient, fix, then rerun",
                          f"check the name and account with the recipient, fix, then {_PLAN}"),
    Status.UNKNOWN: Step("run `batchpay sync`: never pay this row again yourself"),
}
HELD_PAYEE_STEP = Step("call the payee on a number you already had, `batchpay payees confirm` "
                       "it, then rerun",
                       "call the payee on a number you already had, `batchpay payees confirm` "
                       f"it, then {_PLAN}")
HELD_REPEAT_STEP = Step("if it is a new payment, rerun with --allow-repeat PAYOUT_REF; if not, "
                        "take the row out",
                        "if it is a new payment, make a plan of this workbook with "
                        "--allow-repeat PAYOUT_REF; if not, take the row out")
DRY_RUN_STEP = Step("nothing: a dry run pays nothing; run without --dry-run to pay",
                    "nothing: a dry run pays nothing; pay it through an approved plan "
                    "(`batchpay plan`, `batchpay approve`, `batchpay run --plan`)")


@dataclass
class Tally:
    """Rows and money of one group of rows (one status, or sent / not sent / valid)."""

    rows: int = 0
    amount: Decimal = Decimal(0)
    fee: Decimal = Decimal(0)
    total_debit: Decimal = Decimal(0)
    missing_amount: int = 0  # rows without an amount: their money cannot be counted
    debit_mismatch: int = 0  # rows whose total_debit is not amount + fee
    target: dict[str, Decimal] = field(default_factory=dict)  # target currency → amount
    # invoice rows (target_amount): how many, and per target currency what they asked, and
    # for those quoted what their quotes deliver and how much more than asked
    invoices: int = 0
    asked: dict[str, Decimal] = field(default_factory=dict)
    delivered: dict[str, Decimal] = field(default_factory=dict)
    overpaid: dict[str, Decimal] = field(default_factory=dict)
    invoice_debit: Decimal = Decimal(0)  # source currency, fees included

    def add(self, row: ResultRow) -> None:
        self.rows += 1
        if row.asked is not None:
            self._add_invoice(row, row.asked)
        if row.amount is None:
            # an invoice row's source amount exists only once it is quoted
            self.missing_amount += row.asked is None
        else:
            self.amount += row.amount
        if row.fee is not None:
            self.fee += row.fee
        if row.total_debit is not None:
            self.total_debit += row.total_debit
            if row.amount is not None and row.fee is not None \
                    and row.total_debit != row.amount + row.fee:
                self.debit_mismatch += 1
        if row.delivered is not None:
            currency = row.target_currency or "?"
            self.target[currency] = self.target.get(currency, Decimal(0)) + row.delivered

    def _add_invoice(self, row: ResultRow, asked: Decimal) -> None:
        currency = row.target_currency or "?"
        self.invoices += 1
        self.invoice_debit += row.total_debit or 0
        _plus(self.asked, currency, asked)
        if row.delivered is not None:
            _plus(self.delivered, currency, row.delivered)
            _plus(self.overpaid, currency, row.delivered - asked)

    def merge(self, other: Tally) -> None:
        self.rows += other.rows
        self.amount += other.amount
        self.fee += other.fee
        self.total_debit += other.total_debit
        self.missing_amount += other.missing_amount
        self.debit_mismatch += other.debit_mismatch
        self.invoices += other.invoices
        self.invoice_debit += other.invoice_debit
        for mine, theirs in ((self.target, other.target), (self.asked, other.asked),
                             (self.delivered, other.delivered),
                             (self.overpaid, other.overpaid)):
            for currency, value in theirs.items():
                _plus(mine, currency, value)


def _plus(totals: dict[str, Decimal], currency: str, value: Decimal) -> None:
    totals[currency] = totals.get(currency, Decimal(0)) + value


@dataclass
class CurrencyTotals:
    """Money of one source currency, per status, with the control totals."""

    currency: str
    by_status: dict[str, Tally] = field(default_factory=dict)
    # a dry run's rows that were quoted (NOT_SENT with a debit): its money table's rows
    quoted: Tally = field(default_factory=Tally)

    def _combined(self, statuses: Iterable[str]) -> Tally:
        total = Tally()
        for status in statuses:
            if status in self.by_status:
                total.merge(self.by_status[status])
        return total

    @property
    def valid(self) -> Tally:
        """Every row that passed validation, whatever happened next (counted on its own)."""
        return self._combined(s for s in self.by_status if s != Status.INVALID)

    @property
    def sent(self) -> Tally:
        return self._combined(in_order(SENT))

    @property
    def not_sent(self) -> Tally:
        return self._combined(in_order(UNSENT))

    @property
    def invalid(self) -> Tally:
        return self._combined([Status.INVALID])

    def problems(self) -> list[str]:
        """Why the control totals do not reconcile; empty when they do."""
        valid, sent, not_sent = self.valid, self.sent, self.not_sent
        name = self.currency or "(no currency)"
        found = []
        if valid.rows != sent.rows + not_sent.rows:
            odd = sorted(set(self.by_status) - SENT - UNSENT - {Status.INVALID})
            found.append(f"{name}: {valid.rows} valid rows but {sent.rows} sent + "
                         f"{not_sent.rows} not sent (statuses {', '.join(odd)})")
        elif valid.amount != sent.amount + not_sent.amount:
            found.append(f"{name}: valid amount {valid.amount} is not sent {sent.amount} + "
                         f"not sent {not_sent.amount}")
        if valid.missing_amount:
            found.append(f"{name}: {valid.missing_amount} valid rows without an amount")
        if sent.debit_mismatch:
            found.append(f"{name}: {sent.debit_mismatch} sent rows whose total debit is not "
                         "amount + fee")
        return found


@dataclass
class ResultsSummary:
    counts: dict[str, int] = field(default_factory=dict)  # status → rows (see ordered_counts)
    currencies: dict[str, CurrencyTotals] = field(default_factory=dict)  # by source currency

    @property
    def rows(self) -> int:
        return sum(self.counts.values())

    @property
    def problems(self) -> list[str]:
        return [p for totals in self.currencies.values() for p in totals.problems()]

    @property
    def reconciles(self) -> bool:
        return not self.problems

    def add(self, row: ResultRow) -> None:
        self.counts[row.status] = self.counts.get(row.status, 0) + 1
        currency = row.source_currency.strip().upper()
        totals = self.currencies.get(currency)
        if totals is None:
            totals = self.currencies[currency] = CurrencyTotals(currency)
        tally = totals.by_status.get(row.status)
        if tally is None:
            tally = totals.by_status[row.status] = Tally()
        tally.add(row)
        if row.status == Status.NOT_SENT and row.total_debit is not None:
            totals.quoted.add(row)

    def ordered_counts(self) -> list[tuple[str, int]]:
        """Counts in the order of Status, then any status batchpay does not know."""
        known = {s: self.counts[s] for s in Status if s in self.counts}
        return [*known.items(), *sorted((s, n) for s, n in self.counts.items() if s not in known)]


def summarize(rows: Iterable[ResultRow]) -> ResultsSummary:
    """The Summary sheet's figures, without writing a workbook."""
    summary = ResultsSummary()
    for row in rows:
        summary.add(row)
    return summary


def json_row(*, row: int, payout_ref: str | None, status: str, error: str,
             reference_number: str = "") -> dict[str, Any]:
    """One row of the `--json` document of `validate`, `run`, `rerun` and `sync`."""
    return {"row": row, "payout_ref": payout_ref, "status": status, "error": error or None,
            "reference_number": reference_number or None}


def json_document(run_id: str | None, counts: dict[str, int], rows: list[dict[str, Any]],
                  outputs: Sequence[Path], payee_changes: Sequence[Mapping[str, Any]] | None = None
                  ) -> str:
    """The `--json` document of `validate`, `run`, `rerun` and `sync`, its `rows` made by
    `json_row`; `payee_changes` (run, rerun, validate) go without their bank `details`, so
    that no full account number reaches stdout."""
    import json

    document: dict[str, Any] = {"run_id": run_id, "counts": counts, "rows": rows,
                                "outputs": [str(p) for p in outputs]}
    if payee_changes is not None:
        document["payee_changes"] = [{k: v for k, v in c.items() if k != "details"}
                                     for c in payee_changes]
    return json.dumps(document, ensure_ascii=False, indent=2)
