"""The service's own ledger, read before paying: the journal is not the only memory.

The service has no idempotency key, so the journal is what keeps a payout_ref from being
paid twice. A journal can be lost (deleted, a new laptop), replaced by an older copy, or
be another one (`--journal` at a fresh file, a colleague's); a payment can be made in the
provider's dashboard. None of these are in the journal, all of them are in the service's
payout list. So before a run sends anything, the list of the last `service_check_days` days
is read (pages of 100, through the same client: paced, counted in the rate budget), and a
row about to be sent is HELD when a payout there that this journal did not make (its quote
id is in none of the journal's payout requests), that may have paid (PENDING, PROCESSING,
COMPLETED), carries its payout_ref or, within the last `repeat_window_days` days, pays the
same account the same amount in the same currencies. `--allow-repeat PAYOUT_REF` releases
it (an event of the chain).

Two memories of different lengths: a payout_ref is one payment, so finding it is never a
false match and holds over the whole window (62 days by default: a journal lost or rolled
back, then last month's sheet run again weeks later, is still caught). The same account and
amount is a guess that a recurring salary would trip a month later, so it holds only within
the repeat window (20 days), as the journal's own repeat check does.

Carrying the payout_ref: every payout's `remark` carries it as `ref:<payout_ref>`, the row's
own remark cut to make room when both do not fit (`sheet.ref_tag`); the tag is read back
however a person typed it in the dashboard (`REF:HP-A`, `ref: HP-B`, `ref:HP-C.`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from batchpay.controls.repeats import payment_key
from batchpay.money import masked
from batchpay.sheet.ref_tag import ref_key, refs_in_remark
from batchpay.statuses import FINE

if TYPE_CHECKING:
    from batchpay.journal.store import Journal
    from batchpay.provider.client import PayoutClient
    from batchpay.provider.models import Payout
    from batchpay.sheet.validate import PayoutRow

PAGE_SIZE = 100


@dataclass(frozen=True)
class Outside:
    """A payout at the service that this journal did not make."""

    payout_id: str
    reference_number: str
    state: str
    created: str
    refs: frozenset[str]  # the payout_refs its remark names (`ref_tag.ref_key`)
    keys: frozenset[tuple[str, ...]]  # payment keys (engine.repeats.payment_key)
    account: str
    when: datetime | None = None  # its creation time; None: undated

    def describe(self) -> str:
        return (f"paid on {self.created[:10] or 'an unknown day'} reference "
                f"{self.reference_number or '(none)'} (payout {self.payout_id}, {self.state})")


@dataclass
class ServiceLedger:
    """What the service's list holds within the window, this journal's own payouts left out:
    by payout_ref over the whole window, by payment key since `repeat_since` only (None: not
    at all, the repeat check being off)."""

    since: datetime
    repeat_since: datetime | None = None
    by_ref: dict[str, list[Outside]] = field(default_factory=dict)
    by_key: dict[tuple[str, ...], list[Outside]] = field(default_factory=dict)
    pages: int = 0
    seen: int = 0
    complete: bool = False  # the list was read back to the window's start or its end

    def add(self, payout: Outside) -> None:
        for ref in payout.refs:
            self.by_ref.setdefault(ref, []).append(payout)
        if self.repeat_since is None or (payout.when is not None
                                         and payout.when < self.repeat_since):
            return  # an equal payment that long ago is a recurring one, not a duplicate
        for key in payout.keys:
            self.by_key.setdefault(key, []).append(payout)

    def match(self, ref: str, row: PayoutRow) -> tuple[str, list[Outside]] | None:
        """(how it matched, the payouts) for a row about to be sent; None: nothing found."""
        found = self.by_ref.get(ref_key(ref))
        if found:
            return "its payout_ref", found
        key = payment_key(row.account_number, row.amount, row.source_currency, row.currency,
                          target_amount=row.target_amount)
        found = self.by_key.get(key) if key is not None else None
        if found:
            return "the same account, amount and currencies", found
        return None

    def hold_message(self, ref: str, how: str, found: list[Outside]) -> str:
        first, *more = sorted(found, key=lambda p: p.created)
        also = f" (and {len(more)} more)" if more else ""
        return (f"found at the service, not in this journal: {first.describe()}{also}, "
                f"matched by {how} (account {masked(first.account)}); paid from another "
                "journal, an older copy of this one or the provider's dashboard? If this is "
                f"a new payment, run again with --allow-repeat {ref}")


def _created(payout: Payout) -> datetime | None:
    try:
        when = datetime.fromisoformat((payout.created or "").replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def _part(record: Any, name: str) -> dict[str, Any]:
    """A nested object of a payout record, {} when missing or not an object."""
    value = record.get(name) if isinstance(record, dict) else None
    return value if isinstance(value, dict) else {}


def _outside(payout: Payout) -> Outside:
    recipient = _part(payout.raw, "recipient")
    account = _part(recipient, "account").get("accountNumber")
    quote = _part(payout.raw, "quote")
    source, target = _part(quote, "source"), _part(quote, "target")
    keys = {payment_key(account, source.get("amount"), source.get("currency"),
                        target.get("currency")),
            payment_key(account, None, source.get("currency"), target.get("currency"),
                        target_amount=target.get("amount"))}
    return Outside(payout.id, payout.reference_number or "", payout.state, payout.created or "",
                   refs_in_remark(payout.remark), frozenset(k for k in keys if k is not None),
                   str(account or ""), _created(payout))


async def read_service_ledger(client: PayoutClient, journal: Journal, *, days: int,
                              repeat_days: int, max_pages: int,
                              progress: Callable[[int, int], None] | None = None,
                              now: datetime | None = None) -> ServiceLedger:
    """Read the service's payouts of the last `days` days (at most `max_pages` pages); their
    account and amount count for the last `repeat_days` days only (0: not at all).

    The list's order is not documented: the first page tells it (the sandbox lists oldest
    first). Oldest first, the pages are read from the last one back; newest first, onwards;
    either way until a page reaches back past the window's start. `progress(done, at_most)`
    is told after each page."""
    now = now or datetime.now(UTC)
    ledger = ServiceLedger(since=now - timedelta(days=days), repeat_since=now - timedelta(
        days=repeat_days) if repeat_days else None)
    first = await client.list_payouts(page=0, size=PAGE_SIZE)
    ledger.pages = 1
    pages = [first.items]
    total = first.total_pages
    dated = [d for d in (_created(p) for p in first.items) if d is not None]
    newest_first = len(dated) >= 2 and dated[0] > dated[-1]
    order: Iterable[int] = range(1, total) if newest_first else range(total - 1, 0, -1)
    at_most = min(total, max_pages)
    if progress:
        progress(1, at_most)

    def reaches_back(items: list[Payout]) -> bool:
        oldest = min((d for d in (_created(p) for p in items) if d is not None), default=None)
        return oldest is not None and oldest < ledger.since

    ledger.complete = total <= 1 or (newest_first and reaches_back(first.items))
    if not ledger.complete:
        for number in order:
            if ledger.pages >= max_pages:
                break
            listing = await client.list_payouts(page=number, size=PAGE_SIZE)
            ledger.pages += 1
            pages.append(listing.items)
            if progress:
                progress(ledger.pages, at_most)
            if not listing.items or reaches_back(listing.items):
                ledger.complete = True
                break
        else:
            ledger.complete = True
    recent: dict[str, Payout] = {}
    for items in pages:
        for p in items:
            when = _created(p)
            if when is None or when >= ledger.since:  # an undated payout counts as recent
                recent[p.id] = p
    ledger.seen = len(recent)
    paid = [p for p in recent.values() if p.state in FINE]
    ours = journal.known_quotes(p.quote_id for p in paid if p.quote_id)
    for p in paid:
        if p.quote_id not in ours:
            ledger.add(_outside(p))
    return ledger
