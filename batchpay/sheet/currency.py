"""The sheet's currency rules: ISO 4217 codes and their minor-unit exponents (the table is
the money module's), and the wallets operators pay from most often.

The exponent says how many decimals an amount may carry (NGN 2, JPY 0, KWD 3). The sheet
reader rejects an amount with more decimals than its currency allows rather than rounding
it: a rounded amount is a payment nobody asked for.
"""

from __future__ import annotations

from batchpay.money import (  # noqa: F401  (the sheet's names for the money module's table)
    DEFAULT_EXPONENT,
    EXPONENTS,
    currency_exponent,
    exponent,
    is_currency,
)

# The wallets operators pay from most often: the template's dropdown for source_currency.
COMMON_SOURCE_CURRENCIES: tuple[str, ...] = (
    "NGN", "USD", "GBP", "EUR", "KES", "GHS", "ZAR", "XOF", "XAF", "UGX", "TZS", "RWF",
    "ZMW", "MWK", "EGP",
)
