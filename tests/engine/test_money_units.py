"""A plan's figures in a currency with three decimals (KWD, BHD, JOD, OMR, TND): the
ceiling keeps the third decimal, or an approved run could not spend its own quote."""

from __future__ import annotations

from decimal import Decimal

from batchpay.controls.plan_checks import currency_figures


def rows(currency: str, *debits: str) -> list[dict[str, str]]:
    return [{"source_currency": currency, "amount": d, "total_debit": d} for d in debits]


def test_a_three_decimal_ceiling_covers_the_quoted_debit() -> None:
    figures = currency_figures(rows("KWD", "100.123", "0.005"), Decimal(0))["KWD"]
    assert figures["quoted_debit"] == "100.128"
    assert figures["ceiling"] == "100.128"


def test_a_three_decimal_ceiling_adds_the_tolerance_to_the_mil() -> None:
    figures = currency_figures(rows("BHD", "200.001"), Decimal("0.005"))["BHD"]
    assert Decimal(figures["ceiling"]) >= Decimal("200.001") * Decimal("1.005") - Decimal("0.0005")
    assert figures["ceiling"] == "201.001"


def test_two_and_zero_decimal_ceilings_are_unchanged() -> None:
    figures = currency_figures(rows("NGN", "1000.10") + rows("JPY", "1001"), Decimal("0.005"))
    assert figures["NGN"]["ceiling"] == "1005.10"
    assert figures["JPY"]["ceiling"] == "1006.00"
