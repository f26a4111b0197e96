"""Accounting vouchers (凭证) of a closed period, for the Chinese ledgers' voucher import.

A payout voucher books what the payee was paid and what it cost, in the ledger's own
currency (`[books] base_currency`, 本位币; CNY by default):

    借 payee's account (应付账款/费用)   delivered amount, in the target currency
    借 fees (财务费用)                   the fee, in the wallet currency at the payout's rate
    贷 wallet (银行存款)                 the total debit, in the wallet currency at that rate
    借/贷 FX difference (汇兑损益)      what converting to the base currency left over

The payout's rate to the base currency is its own quote's: delivered / source amount (when
the target is the base currency) or its inverse (when the wallet is). Each line's base
amount is its original amount times that rate, to the base currency's minor unit; what
that rounding leaves is booked to the FX difference account, never dropped, so every
voucher balances exactly. A refund is a voucher of its own that reverses its payout's.

`[books] voucher_per = "payout"` (default) writes one voucher per payout and one per refund;
`"run"` one per run (and one for each day of that run's refunds).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from decimal import ROUND_HALF_UP, Decimal

from batchpay.engine.books import ClosedPeriod, Payment
from batchpay.errors import ConfigError
from batchpay.money import currency_exponent
from batchpay.settings.model import Books

RATE_PLACES = Decimal("1E-10")  # 汇率 to ten decimals: 0.0043478261 NGN->CNY keeps 8 digits


@dataclass(frozen=True)
class VoucherLine:
    account: str
    summary: str  # 摘要
    currency: str  # 币别 of the original amount
    original: Decimal  # 原币金额 (always positive)
    rate: Decimal  # 汇率 to the base currency
    debit: Decimal  # 借方 (base currency)
    credit: Decimal  # 贷方 (base currency)
    payout_ref: str = ""
    reference: str = ""
    payee: str = ""


@dataclass
class Voucher:
    number: int  # 凭证号, from 1 in each export
    day: date
    lines: list[VoucherLine] = field(default_factory=list)

    @property
    def debit(self) -> Decimal:
        return sum((line.debit for line in self.lines), Decimal(0))

    @property
    def credit(self) -> Decimal:
        return sum((line.credit for line in self.lines), Decimal(0))

    @property
    def balanced(self) -> bool:
        return self.debit == self.credit


def build_vouchers(closed: ClosedPeriod, books: Books) -> list[Voucher]:
    """The period's vouchers in date order, each balanced in the base currency."""
    groups: dict[tuple[str, str, date], list[VoucherLine]] = {}
    for payment in closed.payments:
        request = payment.request
        paid_day = closed.period.day_of(request.sent_at)
        key = payment.key if books.voucher_per == "payout" else request.run_id
        lines = _payout_lines(payment, books)
        groups.setdefault(("payout", key, paid_day), []).extend(lines)
        if payment.refunded:
            refund_day = closed.period.day_of(request.status_at or request.sent_at)
            groups.setdefault(("refund", key, refund_day), []).extend(
                _reversed(lines, f"退款 Refund {request.payout_ref}"))
    ordered = sorted(groups.items(), key=lambda item: (item[0][2], item[0][0] == "refund"))
    vouchers = []
    for number, ((_, _, day), lines) in enumerate(ordered, start=1):
        voucher = Voucher(number, day, lines)
        if not voucher.balanced:  # pragma: no cover - each group is built balanced
            raise AssertionError(f"voucher {number} does not balance")
        vouchers.append(voucher)
    return vouchers


def _payout_lines(payment: Payment, books: Books) -> list[VoucherLine]:
    request = payment.request
    base = books.base_currency
    source_rate, target_rate = _rates(payment, base)
    summary = f"付款 Payout {request.payout_ref} {payment.recipient_name}".strip()
    if payment.reason:
        summary += f" {payment.reason}"
    common = {"payout_ref": request.payout_ref, "reference": request.reference_number,
              "payee": payment.recipient_name}
    delivered = payment.delivered
    lines = [
        _line(books.payee_account(payment.recipient_name, payment.reason), summary,
              request.target_currency, delivered, target_rate, base, debit=True, **common),
    ]
    if payment.fee:
        lines.append(_line(books.fees, f"手续费 Fee {request.payout_ref}", payment.currency,
                           payment.fee, source_rate, base, debit=True, **common))
    lines.append(_line(books.wallet_account(payment.currency), summary, payment.currency,
                       payment.total, source_rate, base, debit=False, **common))
    gap = sum((x.credit - x.debit for x in lines), Decimal(0))
    if gap:  # what the rounding to the base currency's minor unit left over
        lines.append(VoucherLine(books.fx_difference, f"汇兑差额 FX difference "
                                 f"{request.payout_ref}", base, abs(gap), Decimal(1),
                                 gap if gap > 0 else Decimal(0),
                                 -gap if gap < 0 else Decimal(0), **common))
    return lines


def _rates(payment: Payment, base: str) -> tuple[Decimal, Decimal]:
    """(rate of the wallet currency, rate of the target currency) to the base currency."""
    request = payment.request
    source, target = payment.currency, request.target_currency
    if source == base and target == base:
        return Decimal(1), Decimal(1)
    if target == base and payment.amount:
        return (payment.delivered / payment.amount).quantize(RATE_PLACES), Decimal(1)
    if source == base and payment.delivered:
        return Decimal(1), (payment.amount / payment.delivered).quantize(RATE_PLACES)
    raise ConfigError(
        f"Payout {request.payout_ref} pays {source} into {target}: neither is the books' "
        f"base currency {base}, so its vouchers have no rate.",
        hint="Set base_currency in [books] of batchpay.toml to your ledger's currency "
        "(本位币), the currency payees are paid in or the wallet's.")


def _line(account: str, summary: str, currency: str, original: Decimal, rate: Decimal,
          base: str, *, debit: bool, payout_ref: str, reference: str, payee: str
          ) -> VoucherLine:
    step = Decimal(1).scaleb(-currency_exponent(base))
    amount = original if rate == 1 else (original * rate).quantize(step, ROUND_HALF_UP)
    return VoucherLine(account, summary, currency, original, rate,
                       amount if debit else Decimal(0), Decimal(0) if debit else amount,
                       payout_ref, reference, payee)


def _reversed(lines: list[VoucherLine], summary: str) -> list[VoucherLine]:
    return [VoucherLine(x.account, summary, x.currency, x.original, x.rate, x.credit, x.debit,
                        x.payout_ref, x.reference, x.payee) for x in lines]
