"""Finding payouts and following their states through the list endpoint.

The service has no lookup by reference: a payout whose answer was lost is found by
scanning the list of payouts for the quote id that was sent. Statuses are followed the
same way, a page of 100 at a time, never one GET per payout. The list is read one state at
a time (engine.payout_list): a scan for payouts the journal knows reads only the states
they can still be in, one for a quote whose answer was lost reads all four. A scan stops as
soon as everything it looks for is found; it is *complete* only when every state it needed
was read to its end, and only a complete scan may conclude that a payout does not exist.

A service without the list (404) is followed one payout at a time, by id
(`GET /v1/transaction/{id}`); a payout known only by its quote cannot be found that way,
so such a scan is never complete.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from batchpay.engine.payout_list import EVERY_STATE, STATES_FROM, read_list
from batchpay.journal.records import LedgerEntry
from batchpay.journal.store import Journal
from batchpay.provider.client import PayoutClient
from batchpay.provider.errors import PayoutListAbsent, RequestRejected
from batchpay.provider.models import Payout
from batchpay.statuses import IN_DOUBT


@dataclass
class ScanResult:
    by_payout_id: dict[str, Payout] = field(default_factory=dict)
    by_quote_id: dict[str, Payout] = field(default_factory=dict)
    complete: bool = False
    pages: int = 0
    list_absent: bool = False  # the service has no list (404): payouts were read by id


async def scan(client: PayoutClient, *, payout_ids: Iterable[str] = (),
               quote_ids: Iterable[str] = (), max_pages: int = 200,
               states: Iterable[str] = EVERY_STATE) -> ScanResult:
    """Walk the payout list, state by state (`states`: where the payouts looked for can be),
    until every wanted id is seen, the lists end, or the cap is hit."""
    want_payouts, want_quotes = set(payout_ids), set(quote_ids)
    result = ScanResult()
    if not want_payouts and not want_quotes:
        result.complete = True  # nothing to look for: as good as complete
        return result

    def take(state: str, items: list[Payout]) -> None:
        for payout in items:
            if payout.id in want_payouts:
                result.by_payout_id[payout.id] = payout
                want_payouts.discard(payout.id)
            if payout.quote_id in want_quotes:
                result.by_quote_id[payout.quote_id] = payout
                want_quotes.discard(payout.quote_id)

    read = await read_list(client, tuple(states), max_pages=max_pages, on_page=take,
                           found_all=lambda: not want_payouts and not want_quotes)
    result.pages, result.complete = read.pages, read.complete
    return result


async def look_up_each(client: PayoutClient, payout_ids: Iterable[str]) -> ScanResult:
    """Read payouts one by one by id, for a service without the list: never complete."""
    result = ScanResult(list_absent=True)
    for payout_id in payout_ids:
        try:
            payout = await client.get_payout(payout_id)
        except RequestRejected as exc:
            if exc.status == 404:
                continue  # not found by id: nothing learnt
            raise
        result.by_payout_id[payout.id] = payout
    return result


def states_to_read(entries: Iterable[LedgerEntry]) -> tuple[str, ...]:
    """The list's states these entries' payouts can be in now: from each one's journal state
    on; a row in doubt (or without a payout id) can be in any."""
    wanted: set[str] = set()
    for entry in entries:
        if entry.status in IN_DOUBT or not entry.payout_id:
            return EVERY_STATE
        wanted.update(STATES_FROM.get(str(entry.status), EVERY_STATE))
    return tuple(s for s in EVERY_STATE if s in wanted)


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
    """One scan for all these entries: payouts by id, in-doubt ones by quote id; on a
    service without the list, the ones with a payout id are read one by one."""
    payout_ids = [e.payout_id for e in entries if e.payout_id]
    try:
        found = await scan(
            client, payout_ids=payout_ids,
            quote_ids=[e.quote_id for e in entries if not e.payout_id or e.status in IN_DOUBT],
            max_pages=max_pages, states=states_to_read(entries))
    except PayoutListAbsent:
        found = await look_up_each(client, payout_ids)
    apply_found(journal, entries, found, source)
    return found
