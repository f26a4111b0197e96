"""The period's money movements, as a ledger books them: rendered from the statement.

    build_statement (chain checked, a tampered journal refused) ─► every payout request
        of the period whose money moved ─► per request: the payout debit, the fee, and
        (once REFUNDED) the refund ─► movements in time order, per wallet currency

Every export (`batchpay export`) and the reconciliation read this one model, so that an OFX
file, a voucher workbook and the statement never disagree. A movement's amount is signed as
the wallet sees it (negative: money out) and exact: the quote's own digits, never rounded.

What a request moved: one accepted by the service (PENDING, PROCESSING, COMPLETED, FAILED,
REFUNDED) took its source amount and its fee; a REFUNDED one gave both back (the service
refunds the whole debit). A request in doubt (UNKNOWN) is left out here, as the statement
counts it apart; a refused one moved nothing.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal

from batchpay.days import Period
from batchpay.engine.statement import MONEY_OUT, Request, Statement, build_statement
from batchpay.journal.reads import request_bodies
from batchpay.journal.records import ChainCheck
from batchpay.journal.store import Journal
from batchpay.statuses import IN_DOUBT, Status

PAYOUT, FEE, REFUND = "payout", "fee", "refund"
# the suffix of a movement's stable id (FITID, NtryRef): the same payout, the same id
KIND_CODES = {PAYOUT: "P", FEE: "F", REFUND: "R"}
KIND_ORDER = {PAYOUT: 0, FEE: 1, REFUND: 2}
FORMULA_START = ("=", "+", "-", "@")


@dataclass(frozen=True)
class Payment:
    """One payout request whose money moved, with what the ledger needs to book it."""

    request: Request
    quote_id: str
    recipient_name: str
    reason: str
    remark: str

    @property
    def currency(self) -> str:
        return self.request.source_currency

    @property
    def amount(self) -> Decimal:
        return self.request.amount or Decimal(0)

    @property
    def fee(self) -> Decimal:
        return self.request.fee or Decimal(0)

    @property
    def total(self) -> Decimal:
        if self.request.total_debit is not None:
            return self.request.total_debit
        return self.amount + self.fee

    @property
    def delivered(self) -> Decimal:
        return self.request.target_amount or Decimal(0)

    @property
    def refunded(self) -> bool:
        return self.request.status == Status.REFUNDED

    @property
    def key(self) -> str:
        """The payout's id at the service (its quote's id before the answer came)."""
        return self.request.payout_id or self.quote_id


@dataclass(frozen=True)
class Movement:
    """One line of the wallet: a payout's debit, its fee, or a refund."""

    kind: str
    at: str  # UTC, as the journal wrote it
    day: date  # in the period's time zone
    amount: Decimal  # signed: negative leaves the wallet
    payment: Payment

    @property
    def currency(self) -> str:
        return self.payment.currency

    @property
    def fitid(self) -> str:
        """Stable across exports: the service's payout id and the kind of movement, at most
        34 characters (camt.053's references take 35): a uuid without its hyphens, a longer
        id as a hash of it."""
        key = self.payment.key.replace("-", "")
        if len(key) > 32:
            key = hashlib.sha256(self.payment.key.encode()).hexdigest()[:32]
        return f"{key}-{KIND_CODES[self.kind]}"

    @property
    def order(self) -> tuple[str, str, int]:
        """Time order; a payout's debit, then its fee, then its refund."""
        return self.at, self.payment.key, KIND_ORDER[self.kind]

    @property
    def payout_ref(self) -> str:
        return self.payment.request.payout_ref

    @property
    def reference(self) -> str:
        return self.payment.request.reference_number

    @property
    def payee(self) -> str:
        return self.payment.recipient_name

    @property
    def description(self) -> str:
        p = self.payment
        if self.kind == PAYOUT:
            what = f"Payout {p.request.payout_ref}"
            if p.delivered:
                what += f" ({p.delivered} {p.request.target_currency} delivered)"
        elif self.kind == FEE:
            what = f"Fee of payout {p.request.payout_ref}"
        else:
            what = f"Refund of payout {p.request.payout_ref} (failed at the bank)"
        return f"{what}{': ' + p.reason if p.reason else ''}"


@dataclass
class WalletBook:
    """One wallet currency over the period: its movements and balances."""

    currency: str
    movements: list[Movement] = field(default_factory=list)
    wallet_before: Decimal | None = None
    wallet_after: Decimal | None = None

    @property
    def total(self) -> Decimal:
        """What the movements add up to (negative: the wallet went down)."""
        return sum((m.amount for m in self.movements), Decimal(0))

    @property
    def opening(self) -> Decimal | None:
        """The balance before the period's first movement: as read, else derived."""
        if self.wallet_before is not None:
            return self.wallet_before
        return None if self.wallet_after is None else self.wallet_after - self.total

    @property
    def closing(self) -> Decimal | None:
        if self.wallet_after is not None:
            return self.wallet_after
        return None if self.wallet_before is None else self.wallet_before + self.total


@dataclass
class ClosedPeriod:
    statement: Statement
    period: Period
    payments: list[Payment]
    wallets: dict[str, WalletBook]
    in_doubt: dict[str, str] = field(default_factory=dict)  # quote id -> payout_ref

    @property
    def movements(self) -> list[Movement]:
        return sorted((m for w in self.wallets.values() for m in w.movements),
                      key=lambda m: m.order)


def close_period(journal: Journal, period: Period, *, verified: ChainCheck | None = None
                 ) -> ClosedPeriod:
    """The period's movements, from the statement of the same period (chain checked first,
    unless this caller just `verified` it)."""
    statement = build_statement(journal, period.start, period.end, period.zone_name,
                                verified=verified)
    payments = _payments(journal, statement.requests)
    wallets: dict[str, WalletBook] = {}
    for payment in payments:
        book = wallets.setdefault(payment.currency, WalletBook(payment.currency))
        book.movements.extend(movements_of(payment, period))
    for currency, book in wallets.items():
        book.movements.sort(key=lambda m: m.order)
        total = statement.totals.get(currency)
        if total is not None:
            book.wallet_before, book.wallet_after = total.wallet_before, total.wallet_after
    return ClosedPeriod(statement, period, payments, dict(sorted(wallets.items())),
                        in_doubt(journal, statement.requests))


def movements_of(payment: Payment, period: Period) -> list[Movement]:
    request = payment.request
    found = [Movement(PAYOUT, request.sent_at, period.day_of(request.sent_at),
                      -payment.amount, payment)]
    if payment.fee:
        found.append(Movement(FEE, request.sent_at, period.day_of(request.sent_at),
                              -payment.fee, payment))
    if payment.refunded:
        at = request.status_at or request.sent_at
        found.append(Movement(REFUND, at, period.day_of(at), payment.total, payment))
    return found


def _payments(journal: Journal, requests: list[Request]) -> list[Payment]:
    """The requests whose money moved, with the body each was sent with (reason, remark and
    recipient as paid), read from the request's attempt."""
    return _with_bodies(journal, [r for r in requests
                                  if r.status in MONEY_OUT or r.status == Status.REFUNDED])


def in_doubt(journal: Journal, requests: list[Request]) -> dict[str, str]:
    """quote id -> payout_ref of the requests in doubt (UNKNOWN, or left SENDING): the
    service may hold a payout of them that no movement here accounts for."""
    return {p.quote_id: p.request.payout_ref for p in _with_bodies(
        journal, [r for r in requests if r.status in IN_DOUBT]) if p.quote_id}


def _with_bodies(journal: Journal, requests: list[Request]) -> list[Payment]:
    bodies = request_bodies(journal, [r.attempt for r in requests if r.attempt])
    payments = []
    for r in requests:
        quote_id, text = bodies.get(r.attempt, ("", "{}"))
        body = json.loads(text)
        recipient = body.get("recipient") if isinstance(body.get("recipient"), dict) else {}
        payments.append(Payment(r, quote_id, str(recipient.get("name") or ""),
                                str(body.get("reason") or ""), str(body.get("remark") or "")))
    return payments


def as_text(value: str) -> str:
    """Text a spreadsheet opening a CSV must not run as a formula: a leading apostrophe, as
    spreadsheets themselves mark typed text (`=HYPERLINK(...)` stays those characters)."""
    return "'" + value if value.startswith(FORMULA_START) else value


def plain(value: Decimal) -> str:
    """An amount's exact digits, never in exponent form (1E+3 would be 1000)."""
    return format(value, "f")
