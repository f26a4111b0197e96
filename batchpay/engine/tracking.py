"""Finding payouts and following their states through the list endpoint.

The service has no lookup by reference: a payout whose answer was lost is found by
scanning the list of payouts for the quote id that was sent. Statuses are followed the
same way, a page of 100 at a time, never one GET per payout. A scan stops as soon as
everything it looks for is found; it is *complete* only when it saw the last page, and
only a complete scan may conclude that a payout does not exist.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from batchpay.journal.records import LedgerEntry
from batchpay.journal.store import Journal
from batchpay.provider.client import PayoutClient
from batchpay.provider.models import Payout
from batchpay.statuses import IN_DOUBT

PAGE_SIZE = 100


@dataclass
class ScanResult:
    by_payout_id: dict[str, Payout] = field(default_factory=dict)
    by_quote_id: dict[str, Payout] = field(default_factory=dict)
    complete: bool = False
    pages: int = 0


async def scan(client: PayoutClient, *, payout_ids: Iterable[str] = (),
               quote_ids: Iterable[str] = (), max_pages: int = 200) -> ScanResult:
    """Walk the payout list until every wanted id is seen, the list ends, or the cap is hit."""
    want_payouts, want_quotes = set(payout_ids), set(quote_ids)
    result = ScanResult()
    page = 0
    while want_payouts or want_quotes:
        if result.pages >= max_pages:
            return result
        listing = await client.list_payouts(page=page, size=PAGE_SIZE)
        result.pages += 1
        for payout in listing.items:
            if payout.id in want_payouts:
                result.by_payout_id[payout.id] = payout
                want_payouts.discard(payout.id)
            if payout.quote_id in want_quotes:
                result.by_quote_id[payout.quote_id] = payout
                want_quotes.discard(payout.quote_id)
        if listing.last or not listing.items:
            result.complete = True
            return result
        page += 1
    result.complete = True  # nothing left to look for: as good as complete
    return result


def payout_fields(payout: Payout) -> dict[str, str]:
    return {"reference_number": payout.reference_number or ""}


def apply_found(journal: Journal, entries: Iterable[LedgerEntry], found: ScanResult,
                source: str) -> list[str]:
    """Record what a scan found for these ledger entries; returns the refs that changed."""
    changed = []
    for entry in entries:
        payout = None
        if entry.payout_id:
            payout = found.by_payout_id.get(entry.payout_id)
        if payout is None and entry.quote_id:
            payout = found.by_quote_id.get(entry.quote_id)
        if payout is None:
            continue
        if journal.apply_state(entry.payout_ref, payout.state, source=source,
                               payout_id=payout.id, quote_id=payout.quote_id or "",
                               **payout_fields(payout)):
            changed.append(entry.payout_ref)
    return changed


async def refresh(client: PayoutClient, journal: Journal, entries: list[LedgerEntry], *,
                  max_pages: int, source: str = "poll") -> ScanResult:
    """One scan for all these entries: payouts by id, in-doubt ones by quote id."""
    found = await scan(
        client,
        payout_ids=[e.payout_id for e in entries if e.payout_id],
        quote_ids=[e.quote_id for e in entries if not e.payout_id or e.status in IN_DOUBT],
        max_pages=max_pages,
    )
    apply_found(journal, entries, found, source)
    return found
