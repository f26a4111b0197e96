"""Calibration of invoice rows against the sandbox's own pricing: never short, overpaid by at
most what one minor unit of the source buys, within the quote cap — for every rounding
mode, both rate directions and a drifting rate."""

from __future__ import annotations

import asyncio
import itertools
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from batchpay.engine.calibrate import (
    MAX_QUOTES,
    CalibrationFailed,
    Calibrator,
    overpay_bound,
)
from batchpay.provider.errors import RequestRejected
from batchpay.provider.models import Quote
from batchpay.sandbox import banks, rates

FEN = Decimal("0.01")
SOURCES = ("NGN", "USD", "MWK", "GBP")  # NGN and MWK divide by the rate, USD and GBP multiply


class Market:
    """The sandbox's pricing, in process: rounding mode, seed and drift as the sandbox has them."""

    def __init__(self, rounding: str, seed: int, drift: float) -> None:
        self.rounding, self.seed = rounding, seed
        self.drift = rates.Drift(drift, seed)
        self.ids = itertools.count()
        self.asked = 0

    def quoter(self, source: str):  # noqa: ANN201 - an async callable
        async def quote_at(amount: Decimal) -> Quote:
            self.asked += 1
            price = rates.price(amount, source, "CNY", self.seed, rounding=self.rounding,
                                moved=self.drift.next(source, "CNY"))
            if price.target_amount < banks.TARGET_MINIMUM:
                raise RequestRejected("Minimum target amount for transaction is 10", status=400)
            if price.target_amount > banks.TARGET_MAXIMUM:
                raise RequestRejected("Maximum target amount for transaction is 500000",
                                      status=400)
            return Quote(id=f"q-{next(self.ids)}", rate=price.rate, fee=price.fee,
                         source_amount=amount, source_currency=source, source_country="XX",
                         target_amount=price.target_amount, target_currency="CNY",
                         target_country="CN", total=price.total, expires_in_seconds=600,
                         payment_channel="BANK_TRANSFER", rules=tuple(banks.limit_rules()))
        return quote_at


def pay_invoices(market: Market, calibrator: Calibrator, source: str,
                 invoices: list[Decimal]) -> list[tuple[Decimal, Quote, int]]:
    unit = rates.quantum(source)

    async def all_rows() -> list[tuple[Decimal, Quote, int]]:
        done = []
        for want in invoices:
            found = await calibrator.calibrate(market.quoter(source), want, (source, "CNY"),
                                               source_unit=unit)
            done.append((want, found.quote, found.quotes_used))
        return done

    return asyncio.run(all_rows())


invoice = st.decimals(min_value=Decimal(10), max_value=Decimal(500000), places=2,
                      allow_nan=False, allow_infinity=False)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(invoices=st.lists(invoice, min_size=1, max_size=6),
       source=st.sampled_from(SOURCES),
       rounding=st.sampled_from(sorted(rates.ROUNDING_MODES)),
       seed=st.integers(0, 50),
       drift=st.sampled_from([0.0, 0.001, 0.002, 0.005]))
def test_never_short_overpaid_within_the_bound_within_the_cap(
        invoices: list[Decimal], source: str, rounding: str, seed: int, drift: float) -> None:
    market = Market(rounding, seed, drift)
    calibrator = Calibrator()
    unit = rates.quantum(source)
    try:
        paid = pay_invoices(market, calibrator, source, invoices)
    except CalibrationFailed as failed:
        # allowed only when the rate moves under the row, or at the service's maximum
        near_maximum = max(invoices) + Decimal("0.08") > banks.TARGET_MAXIMUM
        assert drift or near_maximum, failed.message
        assert failed.quotes_used <= MAX_QUOTES
        return
    for want, quote, used in paid:
        assert quote.target_amount >= want  # never short
        bound = overpay_bound(quote.source_amount, quote.target_amount, unit, FEN)
        assert quote.target_amount - want <= bound, (want, quote, bound)
        assert 1 <= used <= MAX_QUOTES


@pytest.mark.parametrize(("source", "bound"), [("NGN", Decimal("0.01")),
                                               ("USD", Decimal("0.08"))])
def test_the_documented_bounds(source: str, bound: Decimal) -> None:
    price = rates.price(Decimal(100000), source, "CNY", 0)
    assert overpay_bound(Decimal(100000), price.target_amount, rates.quantum(source), FEN) == bound


def test_a_stable_rate_takes_about_one_quote_a_row() -> None:
    market = Market("half-up", 0, 0.0)
    invoices = [Decimal(10 + (n * 7919) % 400000) + Decimal(n % 100) / 100 for n in range(200)]
    paid = pay_invoices(market, Calibrator(), "NGN", invoices)
    assert all(q.target_amount >= want for want, q, _ in paid)
    assert market.asked / len(invoices) <= 1.2


@pytest.mark.parametrize(("want", "words"), [
    (Decimal("5.00"), "below the service's minimum of 10 CNY"),
    (Decimal("600000.00"), "above the service's maximum of 500000 CNY"),
])
def test_an_invoice_outside_the_limits_names_the_limit(want: Decimal, words: str) -> None:
    market = Market("half-up", 0, 0.0)
    with pytest.raises(CalibrationFailed) as failed:
        pay_invoices(market, Calibrator(), "USD", [Decimal(1000), want])
    assert words in failed.value.message
