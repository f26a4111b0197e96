"""Exchange rates, fees and currency facts of the sandbox: deterministic per seed, all Decimal.

Rates are quoted as the provider does, "units of the weaker currency per unit of the
stronger": NGN→CNY 230 means 100000 NGN buy 434.78 CNY, USD→CNY 7.1 means 100 USD buy
710 CNY. Seed 0 gives the round rates of the documentation; any other seed moves every
currency by up to ±3 %, the same way every time. Target amounts are rounded to the
currency's decimals half-up by default (the provider does not document its rounding: the
sandbox can round half-even, down or up instead); fees are rounded half-up.

`Drift` moves a pair's rate while the sandbox runs, as a market does: every
`DRIFT_EVERY` quotes of a pair the rate takes a random step of up to ±F (seeded).
"""

from __future__ import annotations

import random
import threading
from dataclasses import dataclass
from decimal import ROUND_DOWN, ROUND_HALF_EVEN, ROUND_HALF_UP, ROUND_UP, Decimal

from batchpay.money import currency_exponent

# Rough units per US dollar (sandbox values): only their ratios matter.
UNITS_PER_USD: dict[str, Decimal] = {
    "USD": Decimal("1"),
    "CNY": Decimal("7.1"),
    "NGN": Decimal("1633"),
    "GBP": Decimal("0.79"),
    "EUR": Decimal("0.92"),
    "MWK": Decimal("1735"),
    "KES": Decimal("129"),
    "GHS": Decimal("15.5"),
    "ZAR": Decimal("18.2"),
    "XOF": Decimal("603"),
    "XAF": Decimal("603"),
    "UGX": Decimal("3700"),
    "TZS": Decimal("2650"),
    "RWF": Decimal("1400"),
    "ZMW": Decimal("26.5"),
    "EGP": Decimal("49"),
}

# Countries whose wallets may hold each currency (the quote's source country must be one).
CURRENCY_COUNTRIES: dict[str, frozenset[str]] = {
    "USD": frozenset({"US"}),
    "CNY": frozenset({"CN"}),
    "NGN": frozenset({"NG"}),
    "GBP": frozenset({"GB"}),
    "EUR": frozenset({"DE", "FR", "NL", "IE", "IT", "ES", "BE", "AT", "PT", "FI"}),
    "MWK": frozenset({"MW"}),
    "KES": frozenset({"KE"}),
    "GHS": frozenset({"GH"}),
    "ZAR": frozenset({"ZA"}),
    "XOF": frozenset({"SN", "CI", "BJ", "BF", "ML", "NE", "TG", "GW"}),
    "XAF": frozenset({"CM", "GA", "CG", "TD", "CF", "GQ"}),
    "UGX": frozenset({"UG"}),
    "TZS": frozenset({"TZ"}),
    "RWF": frozenset({"RW"}),
    "ZMW": frozenset({"ZM"}),
    "EGP": frozenset({"EG"}),
}

FEE_SHARE = Decimal("0.01")  # 1 % of the source amount ...
FEE_CAP_USD = Decimal("50")  # ... capped at the source currency's worth of 50 USD
RATE_STEP = Decimal("0.0001")
ROUNDING_MODES = {"half-up": ROUND_HALF_UP, "half-even": ROUND_HALF_EVEN, "down": ROUND_DOWN,
                  "up": ROUND_UP}
DRIFT_EVERY = 8  # quotes of a pair between two moves of its rate


def currency_decimals(currency: str) -> int:
    """ISO 4217's minor unit, the one table batchpay.money keeps (JPY 0, KWD 3): the sheet and
    the service never disagree on how many decimals an amount may carry."""
    return currency_exponent(currency)


def quantum(currency: str) -> Decimal:
    return Decimal(1).scaleb(-currency_decimals(currency))


def home_country(currency: str) -> str | None:
    """The one country shown on a wallet of this currency (the first, alphabetically)."""
    countries = CURRENCY_COUNTRIES.get(currency)
    return sorted(countries)[0] if countries else None


def _units_per_usd(currency: str, seed: int) -> Decimal:
    base = UNITS_PER_USD[currency]
    if seed == 0 or currency == "USD":
        return base
    # string seeds hash the same way in every process (unlike hash() of a str)
    basis_points = random.Random(f"{seed}/{currency}").randint(-300, 300)
    return base * (1 + Decimal(basis_points) / 10000)


def _without_trailing_zeros(value: Decimal) -> Decimal:
    """230.0000 → 230 (not 2.3E+2): shown as the rate a person reads."""
    normal = value.normalize()
    exponent = normal.as_tuple().exponent
    return normal.quantize(Decimal(1)) if isinstance(exponent, int) and exponent > 0 else normal


@dataclass(frozen=True)
class Price:
    """What a quote locks: the rate and the amounts it gives."""

    rate: Decimal
    target_amount: Decimal
    fee: Decimal
    total: Decimal


def price(source_amount: Decimal, source: str, target: str, seed: int, *,
          rounding: str = "half-up", moved: Decimal = Decimal(0)) -> Price:
    """The locked price of `source_amount` of `source` paid out in `target` (both known);
    `moved` is the fraction the pair's rate has drifted from its seeded value."""
    source_units, target_units = _units_per_usd(source, seed), _units_per_usd(target, seed)
    source_is_weaker = source_units >= target_units
    weaker, stronger = (
        (source_units, target_units) if source_is_weaker else (target_units, source_units)
    )
    rate = _without_trailing_zeros((weaker / stronger * (1 + moved)).quantize(
        RATE_STEP, rounding=ROUND_HALF_UP))
    raw_target = source_amount / rate if source_is_weaker else source_amount * rate
    target_amount = raw_target.quantize(quantum(target), rounding=ROUNDING_MODES[rounding])
    cap = FEE_CAP_USD * source_units
    fee = min(source_amount * FEE_SHARE, cap).quantize(quantum(source), rounding=ROUND_HALF_UP)
    return Price(rate=rate, target_amount=target_amount, fee=fee, total=source_amount + fee)


class Drift:
    """How far each pair's rate has moved: a seeded random walk, one step of up to
    ±`fraction` every DRIFT_EVERY quotes of the pair (no movement when `fraction` is 0)."""

    def __init__(self, fraction: float, seed: int) -> None:
        self.fraction = Decimal(str(fraction))
        self._random = random.Random(f"drift/{seed}")
        self._moved: dict[tuple[str, str], Decimal] = {}
        self._quotes: dict[tuple[str, str], int] = {}
        self._lock = threading.Lock()

    def set(self, source: str, target: str, moved: Decimal) -> None:
        """Put the pair's rate `moved` (a fraction) away from its seeded value."""
        with self._lock:
            self._moved[(source, target)] = moved

    def next(self, source: str, target: str) -> Decimal:
        """The pair's movement for its next quote."""
        pair = (source, target)
        if not self.fraction:
            return self._moved.get(pair, Decimal(0))
        with self._lock:
            count = self._quotes.get(pair, 0)
            self._quotes[pair] = count + 1
            moved = self._moved.get(pair, Decimal(0))
            if count and count % DRIFT_EVERY == 0:
                step = Decimal(self._random.randint(-10000, 10000)) / 10000 * self.fraction
                moved = (1 + moved) * (1 + step) - 1
                self._moved[pair] = moved
            return moved
