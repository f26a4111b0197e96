"""Possible duplicate payments: the same account paid the same amount under another payout_ref.

A payout_ref is paid once (the journal sees to that), but a sheet typed again with new
refs would pay every person again. The standard accounts-payable check: before a row is
sent, look for a payout sent in the last `repeat_window_days` days to the same account,
for the same amount, in the same currencies, under another payout_ref, whose money went or
may have gone (PENDING, PROCESSING, COMPLETED, or in doubt). Such a row is HELD, with a
message naming the earlier payout, until the operator releases it (`--allow-repeat REF`);
holds and releases are events in the journal's hash chain.

Recurring payments are the normal case: a salary or a retainer pays the same account the
same amount every month under a new payout_ref. The window (20 days by default) is shorter
than any month, so last month's payment never holds this month's; a sheet typed or run
again within days, the duplicate this check exists for, is held.

The earlier payouts come from the ledger's details (under the chain: `integrity` refuses
a ledger edited by hand) and the time of their first payout request (an event of the chain).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any, TypedDict

from batchpay import clock
from batchpay.journal.store import Journal
from batchpay.money import masked, plain_account
from batchpay.statuses import MAY_HAVE_PAID, display_status

if TYPE_CHECKING:
    from batchpay.settings.model import Settings

_DOTS = str.maketrans("", "", "._")


@dataclass(frozen=True)
class Earlier:
    """A payout already sent that a new row repeats."""

    payout_ref: str
    status: str
    run_id: str
    sent_at: str  # UTC ISO 8601 of its first payout request


def account_key(account: Any) -> str:
    """An account number as payments are compared: plain, and without the dots and
    underscores a record written elsewhere may carry, upper case."""
    return plain_account(account or "").translate(_DOTS).upper()


def payment_key(account: Any, amount: Any, source_currency: Any, currency: Any, *,
                target_amount: Any = None) -> tuple[str, ...] | None:
    """What makes two payouts the same payment; None when the row names no account or amount.
    An invoice row (target_amount) is the same payment as another of the same invoice amount."""
    side, given = ("source", amount) if target_amount in (None, "") else ("target", target_amount)
    try:
        value = Decimal(str(given))
    except (InvalidOperation, ValueError):
        return None
    account_text = account_key(account)
    if not account_text or not value.is_finite():
        return None
    return (account_text, side, format(value.normalize(), "f"),
            str(source_currency or "").upper(), str(currency or "").upper())


class ControlSettings(TypedDict):
    """The settings of the checks that hold rows (batchpay.settings.model.Settings's)."""

    repeat_window_days: int
    service_check_days: int
    hold_new_payees: bool
    payee_change_hold_hours: float
    payee_confirmed_by_other: bool
    require_approval: bool


def control_settings(settings: Settings) -> ControlSettings:
    """The settings of the checks that hold rows, as the Run sheet and the plan record them."""
    return {"repeat_window_days": settings.repeat_window_days,
            "service_check_days": settings.service_check_days,
            "hold_new_payees": settings.hold_new_payees,
            "payee_change_hold_hours": settings.payee_change_hold_hours,
            "payee_confirmed_by_other": settings.payee_confirmed_by_other,
            "require_approval": settings.require_approval}


class RepeatCheck:
    """Payouts sent within the window, by payment key; built once per plan, on first use."""

    def __init__(self, journal: Journal, window_days: int, *, now: datetime | None = None) -> None:
        self.journal, self.window_days = journal, window_days
        # compared as text with the journal's times: both in the clock's stored form
        self.since = clock.stamp((now or clock.now()) - timedelta(days=window_days))
        self._index: dict[tuple[str, ...], list[Earlier]] | None = None

    def _build(self) -> dict[tuple[str, ...], list[Earlier]]:
        index: dict[tuple[str, ...], list[Earlier]] = {}
        for ref, details, status, run_id, sent_at in self.journal.sent_since(
                self.since, MAY_HAVE_PAID):
            try:
                d = json.loads(details)
            except ValueError:
                continue
            key = payment_key(d.get("account_number"), d.get("amount"),
                              d.get("source_currency"), d.get("currency"),
                              target_amount=d.get("target_amount"))
            if key is not None:
                index.setdefault(key, []).append(Earlier(ref, status, run_id, sent_at))
        return index

    def earlier(self, ref: str, key: tuple[str, ...] | None) -> list[Earlier]:
        """Payouts under another payout_ref that this payment repeats, oldest first."""
        if key is None:
            return []
        if self._index is None:
            self._index = self._build()
        return sorted((e for e in self._index.get(key, ()) if e.payout_ref != ref),
                      key=lambda e: clock.parse(e.sent_at))


def held_message(ref: str, account: Any, amount: str, found: Iterable[Earlier]) -> str:
    first, *more = list(found)
    also = f" (and {len(more)} more: {', '.join(e.payout_ref for e in more)})" if more else ""
    return (f"possible duplicate payment: account {masked(account)} was paid "
            f"{amount} on {clock.day(first.sent_at, clock.FALLBACK_ZONE)} under payout_ref "
            f"{first.payout_ref} (run {first.run_id}, {display_status(first.status)}){also}; "
            f"if this is a new payment, run again with --allow-repeat {ref}")
