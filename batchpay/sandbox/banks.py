"""The sandbox's bank lists and the one corridor's limits.

The Nigerian list holds the commercial banks licensed by the Central Bank of Nigeria with
their public CBN bank codes (Heritage Bank, closed in 2024, is left out). The Chinese list
holds the major banks' real names; their sort codes are SANDBOX VALUES ("99" followed by
the bank's CNAPS class code), because the provider does not publish the codes it uses.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from batchpay.sandbox.wire import Bank

NIGERIAN_BANKS: tuple[tuple[str, str], ...] = (
    ("Access Bank", "044"),
    ("Citibank Nigeria", "023"),
    ("Ecobank Nigeria", "050"),
    ("Fidelity Bank", "070"),
    ("First Bank of Nigeria", "011"),
    ("First City Monument Bank", "214"),
    ("Globus Bank", "00103"),
    ("Guaranty Trust Bank", "058"),
    ("Jaiz Bank", "301"),
    ("Keystone Bank", "082"),
    ("Lotus Bank", "303"),
    ("Optimus Bank", "107"),
    ("Parallex Bank", "104"),
    ("Polaris Bank", "076"),
    ("PremiumTrust Bank", "105"),
    ("Providus Bank", "101"),
    ("Signature Bank", "106"),
    ("Stanbic IBTC Bank", "221"),
    ("Standard Chartered Bank", "068"),
    ("Sterling Bank", "232"),
    ("SunTrust Bank", "100"),
    ("Titan Trust Bank", "102"),
    ("Union Bank of Nigeria", "032"),
    ("United Bank For Africa", "033"),
    ("Unity Bank", "215"),
    ("Wema Bank", "035"),
    ("Zenith Bank", "057"),
)

# SANDBOX VALUES: "99" + CNAPS class code. Names are the banks' real (simplified Chinese) names.
CHINESE_BANKS: tuple[tuple[str, str], ...] = (
    ("中国工商银行", "99102"),
    ("中国农业银行", "99103"),
    ("中国银行", "99104"),
    ("中国建设银行", "99105"),
    ("交通银行", "99301"),
    ("中信银行", "99302"),
    ("中国光大银行", "99303"),
    ("华夏银行", "99304"),
    ("中国民生银行", "99305"),
    ("广发银行", "99306"),
    ("平安银行", "99307"),
    ("招商银行", "99308"),
    ("兴业银行", "99309"),
    ("上海浦东发展银行", "99310"),
    ("恒丰银行", "99315"),
    ("浙商银行", "99316"),
    ("渤海银行", "99318"),
    ("中国邮政储蓄银行", "99403"),
    ("北京银行", "99313"),
    ("上海银行", "99325"),
)

BANK_LISTS: dict[tuple[str, str], tuple[str, tuple[tuple[str, str], ...]]] = {
    ("NG", "NGN"): ("Banks retrieved successfully", NIGERIAN_BANKS),
    ("CN", "CNY"): ("Banks retrieved successfully (sort codes are sandbox values)", CHINESE_BANKS),
}

# The corridor the sandbox serves, and its limits: SANDBOX VALUES, not the provider's.
TARGET_CURRENCY, TARGET_COUNTRY = "CNY", "CN"
TARGET_MINIMUM, TARGET_MAXIMUM = Decimal(10), Decimal(500000)
INVOICE_FROM = Decimal(50000)  # sandbox value: above this an invoice would be asked for
PAYMENT_CHANNELS = frozenset({"BANK_TRANSFER"})


def bank_list(country: str, currency: str) -> tuple[str, list[Bank]] | None:
    """(message, banks) for a covered pair, None for any other pair."""
    found = BANK_LISTS.get((country.upper(), currency.upper()))
    if found is None:
        return None
    message, banks = found
    return message, [
        Bank(bankName=name, sortCode=code, branchCode=None, country=None)
        for name, code in banks
    ]


def limit_rules() -> list[dict[str, Any]]:
    """The quote's `rules[]`: the corridor's per-payout limits (sandbox values)."""
    return [
        {
            "category": "LIMIT",
            "appliedCurrency": TARGET_CURRENCY,
            "transaction": {"minimum": TARGET_MINIMUM, "maximum": TARGET_MAXIMUM},
            "invoice": {"minimum": INVOICE_FROM, "maximum": TARGET_MAXIMUM},
        }
    ]
