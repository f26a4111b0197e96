"""Invoice amounts: the source amount whose quote delivers what the invoice says.

The service fixes only the source amount of a quote, and its `target.amount` is the only
truth about what the recipient receives (the rate's direction and the rounding mode are not
documented). So for a row with a `target_amount`, batchpay asks for quotes and infers the
conversion from each quote's own source and target amounts:

    guess = ⌈ invoice ÷ (target per source) ⌉ in the source currency's minor units
    quote(guess) → delivered < invoice                → more (never paid)
                 → delivered > invoice + bound          → less
                 → invoice ≤ delivered ≤ invoice + bound → this quote is paid

where the bound is what one minor unit of the source currency buys, rounded up to the
target currency's minor unit (NGN→CNY at 230: 0.01 CNY; USD→CNY at 7.1: 0.08 CNY). The
conversion is learned per currency pair for the whole run (every quote narrows the range
the true rate lies in; a quote outside it means the rate moved), so most rows take one
quote. At most MAX_QUOTES quotes per row; the quote paid is always the last one.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from decimal import ROUND_CEILING, Decimal

from batchpay.provider.errors import RequestRejected
from batchpay.provider.models import Quote

MAX_QUOTES = 6
PROBE_STEP = Decimal(1000)  # a first quote refused for its size is tried this much larger/smaller


@dataclass(frozen=True)
class Calibrated:
    quote: Quote  # the last quote asked for: it delivers the invoice within the bound
    quotes_used: int


class CalibrationFailed(Exception):
    """No quote delivering the invoice within the bound was found (or a limit forbids it):
    caught by the sender, which records the row as QUOTE_FAILED."""

    def __init__(self, message: str, quotes_used: int) -> None:
        super().__init__(message)
        self.message, self.quotes_used = message, quotes_used


def ceil_to(value: Decimal, unit: Decimal) -> Decimal:
    return (value / unit).to_integral_value(rounding=ROUND_CEILING) * unit


def overpay_bound(source: Decimal, target: Decimal, source_unit: Decimal,
                  target_unit: Decimal) -> Decimal:
    """What one minor unit of the source buys at this quote, rounded up to the target's unit."""
    return ceil_to(target / source * source_unit, target_unit)


@dataclass
class _Range:
    """Where the pair's true rate (target per source) lies, from the quotes seen."""

    low: Decimal
    high: Decimal

    @property
    def middle(self) -> Decimal:
        return (self.low + self.high) / 2


class Calibrator:
    """Finds source amounts for invoice rows; one per run, shared by its rows."""

    def __init__(self, max_quotes: int = MAX_QUOTES) -> None:
        self.max_quotes = max_quotes
        self._pairs: dict[tuple[str, str], _Range] = {}
        self._rules: dict[tuple[str, str], tuple[dict[str, object], ...]] = {}

    def learn(self, pair: tuple[str, str], quote: Quote, target_unit: Decimal) -> None:
        """A quote's amounts bound the rate (its target was rounded somehow to the unit)."""
        s, t = quote.source_amount, quote.target_amount
        low, high = (t - target_unit) / s, (t + target_unit) / s
        known = self._pairs.get(pair)
        if known is not None and low <= known.high and high >= known.low:
            self._pairs[pair] = _Range(max(low, known.low), min(high, known.high))
        else:  # first quote of the pair, or the rate has moved: start again from this one
            self._pairs[pair] = _Range(low, high)

    def guess(self, pair: tuple[str, str], want: Decimal, unit: Decimal) -> Decimal | None:
        known = self._pairs.get(pair)
        return None if known is None else ceil_to(want / known.middle, unit)

    async def calibrate(self, quote_at: Callable[[Decimal], Awaitable[Quote]], want: Decimal,
                        pair: tuple[str, str], *, source_unit: Decimal,
                        target_unit: Decimal = Decimal("0.01")) -> Calibrated:
        """The quote that pays `want` (in the target currency) to the fen, or CalibrationFailed."""
        _check_limits(self._rules.get(pair, ()), want, pair[1], 0)
        used = 0
        short: Decimal | None = None  # the largest source amount seen delivering too little
        enough: Decimal | None = None  # the smallest seen delivering the invoice (over the bound)
        amount = self.guess(pair, want, source_unit)
        probing = amount is None
        if amount is None:  # nothing known of the pair yet: any quote tells the conversion
            amount = ceil_to(want, source_unit)
        last = ""
        while used < self.max_quotes:
            try:
                quote = await quote_at(amount)
            except RequestRejected as exc:
                # refused for its size: too large or too small a quote, not (yet) the invoice
                used += 1
                step = _limit_step(exc.message)
                if step is None or used >= self.max_quotes:
                    raise CalibrationFailed(exc.message, used) from None
                if step < 1 and short is not None and amount - short <= source_unit:
                    raise CalibrationFailed(
                        f"{want} {pair[1]} cannot be paid exactly: {short} {pair[0]} delivers "
                        f"less and {amount} {pair[0]} is refused ({exc.message})", used) from None
                if probing:
                    amount = max(ceil_to(amount * step, source_unit), source_unit)
                else:  # the rate's range says how far to go: its far end, not one unit
                    if step > 1:
                        short = amount if short is None else max(short, amount)
                    amount = self._next(pair, want, source_unit, amount, step < 1, short, enough,
                                        far=True)
                continue
            used += 1
            probing = False
            got = quote.target_amount
            if quote.source_amount != amount or got <= 0 or quote.source_amount <= 0:
                raise CalibrationFailed(
                    f"the quote for {amount} {pair[0]} came back for {quote.source_amount} "
                    f"{pair[0]} → {got} {pair[1]}", used)
            self.learn(pair, quote, target_unit)
            self._rules[pair] = quote.rules
            _check_limits(quote.rules, want, pair[1], used)
            bound = overpay_bound(amount, got, source_unit, target_unit)
            last = f"{amount} {pair[0]} → {got} {pair[1]}"
            if want <= got <= want + bound:
                return Calibrated(quote, used)
            if got >= want:
                enough = amount if enough is None else min(enough, amount)
            else:
                short = amount if short is None else max(short, amount)
            amount = self._next(pair, want, source_unit, amount, got >= want, short, enough)
        raise CalibrationFailed(
            f"no quote delivered {want} {pair[1]} within {bound_text(pair)} in "
            f"{self.max_quotes} quotes (last: {last}); the rate may be moving: run again", used)

    def _next(self, pair: tuple[str, str], want: Decimal, unit: Decimal, amount: Decimal,
              over: bool, short: Decimal | None, enough: Decimal | None, *,
              far: bool = False) -> Decimal:
        known = self._pairs.get(pair)
        if known is None:
            guess = amount
        elif far:  # the smallest (largest) amount the known range allows
            guess = ceil_to(want / (known.high if over else known.low), unit)
        else:
            guess = ceil_to(want / known.middle, unit)
        guess = min(guess, amount - unit) if over else max(guess, amount + unit)
        if short is not None:
            guess = max(guess, short + unit)
        if enough is not None:
            guess = min(guess, enough)
        return max(guess, unit)


def bound_text(pair: tuple[str, str]) -> str:
    return f"what one minor unit of {pair[0]} buys"


def _limit_step(message: str) -> Decimal | None:
    text = message.lower()
    if "minimum" in text:
        return PROBE_STEP
    if "maximum" in text:
        return 1 / PROBE_STEP
    return None


def _check_limits(rules: tuple[dict[str, object], ...], want: Decimal, currency: str,
                  used: int) -> None:
    """A quote's `rules[]` limits on the target amount, said with the limit's figure."""
    for rule in rules:
        if not isinstance(rule, dict) or str(rule.get("category", "")).upper() != "LIMIT":
            continue
        applied = str(rule.get("appliedCurrency") or currency).upper()
        limits = rule.get("transaction")
        if applied != currency.upper() or not isinstance(limits, dict):
            continue
        low, high = _decimal(limits.get("minimum")), _decimal(limits.get("maximum"))
        if low is not None and want < low:
            raise CalibrationFailed(f"target_amount {want} {currency} is below the service's "
                                    f"minimum of {low} {currency} per payout", used)
        if high is not None and want > high:
            raise CalibrationFailed(f"target_amount {want} {currency} is above the service's "
                                    f"maximum of {high} {currency} per payout", used)


def _decimal(value: object) -> Decimal | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        return Decimal(str(value))
    except ArithmeticError:
        return None
