"""ISO 4217 currency codes and their minor-unit exponents.

The exponent says how many decimals an amount may carry (NGN 2, JPY 0, KWD 3). The sheet
reader rejects an amount with more decimals than its currency allows rather than rounding
it: a rounded amount is a payment nobody asked for. Funds codes without a minor unit
(precious metals, XDR, test codes) are left out on purpose: nobody pays in them.
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
