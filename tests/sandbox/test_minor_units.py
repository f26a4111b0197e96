"""The sandbox and the sheet agree on how many decimals each currency carries: one table,
ISO 4217's (batchpay.money), so JPY is whole yen on both sides."""

from __future__ import annotations

from decimal import Decimal

import pytest

from batchpay.money import currency_exponent, minor_unit
from batchpay.sandbox import rates


@pytest.mark.parametrize("currency", ["JPY", "KWD", "NGN", "XOF", "UGX", "CNY", "USD"])
def test_the_sandbox_rounds_to_the_sheet_s_minor_unit(currency: str) -> None:
    assert rates.currency_decimals(currency) == currency_exponent(currency)
    assert rates.quantum(currency) == minor_unit(currency)


def test_jpy_has_no_decimals_anywhere() -> None:
    assert rates.quantum("JPY") == Decimal(1) == minor_unit("JPY")
