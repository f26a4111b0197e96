"""Amounts and rates as pages and summaries show them: thousands separated, the currency
named, never rounded; a rate with its direction."""

from __future__ import annotations

from decimal import Decimal

import pytest

from batchpay.money import rate_direction, shown_amount, shown_rate
from batchpay.sheet.outcomes import ResultRow
from batchpay.sheet.rates import rates_of


@pytest.mark.parametrize(("amount", "currency", "shown"), [
    (Decimal("1234567.89"), "NGN", "1,234,567.89 NGN"),
    (Decimal("1000"), "ngn", "1,000.00 NGN"),  # zeros added up to the minor unit
    (Decimal("1E+3"), "NGN", "1,000.00 NGN"),  # never an exponent
    (Decimal("5"), "JPY", "5 JPY"),
    (Decimal("1234.567"), "KWD", "1,234.567 KWD"),
    (Decimal("0.123456"), "NGN", "0.123456 NGN"),  # a digit is never taken away
    (Decimal("-1234.5"), "CNY", "-1,234.50 CNY"),
    (Decimal("99999999999999.99"), "NGN", "99,999,999,999,999.99 NGN"),
    ("1234.5", "NGN", "1,234.50 NGN"),
    (1234, "", "1,234"),
    (None, "NGN", ""),
    ("", "NGN", ""),
    ("n/a", "NGN", "n/a"),
])
def test_an_amount_is_shown_whole_with_separators_and_its_currency(
        amount: object, currency: str, shown: str) -> None:
    assert shown_amount(amount, currency) == shown  # type: ignore[arg-type]


def test_what_is_shown_reads_back_as_the_same_amount() -> None:
    for text in ("0.01", "1234567.89", "100000000.123", "7"):
        shown = shown_amount(Decimal(text), "NGN")
        assert Decimal(shown.removesuffix(" NGN").replace(",", "")) == Decimal(text)


def test_the_rate_says_its_direction_from_the_quote() -> None:
    # the service's examples: NGN->CNY 230 (NGN per CNY), USD->CNY 7.1 (CNY per USD)
    assert rate_direction(Decimal(230), (Decimal(100000), "NGN"),
                          (Decimal("434.78"), "CNY")) == "NGN per CNY"
    assert rate_direction(Decimal("7.1"), (Decimal(100), "USD"),
                          (Decimal(710), "CNY")) == "CNY per USD"
    assert shown_rate(Decimal("1230.5"), "NGN per CNY") == "1,230.5 NGN per CNY"


def test_a_batch_s_rates_are_shown_per_direction_lowest_to_highest() -> None:
    def quoted(rate: str, amount: str, delivered: str, source: str = "NGN") -> ResultRow:
        return ResultRow(row=2, inputs=(), status="NOT_SENT", rate=Decimal(rate),
                         amount=Decimal(amount), delivered=Decimal(delivered),
                         source_currency=source, target_currency="CNY")

    rows = [quoted("230", "100000", "434.78"), quoted("231.5", "50000", "215.98"),
            quoted("7.1", "100", "710", "USD")]
    assert rates_of(rows, "NGN") == ["230 – 231.5 NGN per CNY"]
    assert rates_of(rows, "USD") == ["7.1 CNY per USD"]
    assert rates_of(rows, "EUR") == []
