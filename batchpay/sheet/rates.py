"""The rates a batch was quoted at, said the way a person reads them: `230 NGN per CNY`.

The service quotes "units of the weaker currency per unit of the stronger" (NGN->CNY 230,
USD->CNY 7.1), so a bare 230 next to 7.1 reads as two different directions. Each rate is
shown with its direction, told from its own quote's amounts (`money.rate_direction`), for
the review page, the plan's workbook and the approver alike.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from decimal import Decimal

from batchpay.money import rate_direction, shown_rate
from batchpay.sheet.outcomes import ResultRow


def rates_of(rows: Iterable[ResultRow], source_currency: str) -> list[str]:
    """One text per direction the rows of `source_currency` were quoted at: the rate, or
    the lowest and highest when the quotes differ (`229.5 – 230.1 NGN per CNY`)."""
    seen: dict[str, set[Decimal]] = defaultdict(set)
    for r in rows:
        if r.source_currency != source_currency or r.rate is None:
            continue
        direction = rate_direction(
            r.rate, (r.amount or Decimal(0), r.source_currency),
            (r.target_amount or Decimal(0), r.target_currency or "?"))
        seen[direction].add(r.rate)
    shown = []
    for direction, rates in sorted(seen.items()):
        low, high = min(rates), max(rates)
        shown.append(shown_rate(low, direction) if low == high else
                     f"{format(low, ',f')} – {shown_rate(high, direction)}")
    return shown
