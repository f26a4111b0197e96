"""Reading the service's payout list as the provider documents it: one state at a time.

`GET /v1/transaction?state=S&page=P&size=N`: all three are required, and `state` is one of
PENDING, COMPLETED, FAILED and REFUNDED. The service has no state to list PROCESSING by: a
payout in PROCESSING (or INITIATED, older records' PENDING) is taken to be listed under
PENDING, as at the sandbox, so a reader that must see every payout reads the four states,
and one that needs the payouts whose money went or may have gone reads PENDING and
COMPLETED.

States are read in the order payouts move (PENDING, then COMPLETED, FAILED, REFUNDED): a
payout that leaves a state while its pages are being read has moved to a state read later,
so it is seen there.

Within a state the list's order is not documented, and the first page tells it:

    newest first   read onwards (page 1, 2, ...)
    oldest first   read from the last page back, ending with the first page once more
    unknown        every page, onwards

Read against the direction a list moves (payouts join at the new end and leave from the old
one as they settle), a payout leaving shifts the pages still to read over ones already read,
never past them. A state is read *completely* when its last page in that order was read (or
the reader's own stop rule was met: a page older than its window, everything looked for
found); a read is complete when every state it needs was, within `max_pages` requests for
all of them together (setting `sync_max_pages`). Only a complete read may conclude that a
payout is not at the service.

A 404 on the list is `PayoutListAbsent`: the provider's current reference no longer shows
the list, so the callers decide what is safe without it (engine.service_ledger stops a run,
engine.tracking reads payouts by id).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum
from typing import TYPE_CHECKING

from batchpay import clock

if TYPE_CHECKING:
    from batchpay.provider.client import PayoutClient
    from batchpay.provider.models import Payout

PAGE_SIZE = 100
# every value the list's `state` takes, in the order payouts move through them
EVERY_STATE = ("PENDING", "COMPLETED", "FAILED", "REFUNDED")
# the lists holding a payout whose money went or may have gone (PENDING, PROCESSING, COMPLETED)
PAID_STATES = ("PENDING", "COMPLETED")
# where a payout the journal knows in a state can be listed from now on
STATES_FROM = {
    "PENDING": EVERY_STATE, "PROCESSING": EVERY_STATE, "COMPLETED": ("COMPLETED",),
    "FAILED": ("FAILED", "REFUNDED"), "REFUNDED": ("REFUNDED",),
}


class Order(Enum):
    NEWEST_FIRST = "newest first"
    OLDEST_FIRST = "oldest first"
    UNKNOWN = "unknown"


@dataclass
class StateRead:
    """What was read of one state's list."""

    state: str
    total_pages: int = 0
    pages: int = 0
    order: Order = Order.UNKNOWN
    complete: bool = False


@dataclass
class ListRead:
    """What one read of the list covered, state by state."""

    states: dict[str, StateRead] = field(default_factory=dict)
    wanted: tuple[str, ...] = ()

    @property
    def pages(self) -> int:
        return sum(s.pages for s in self.states.values())

    @property
    def complete(self) -> bool:
        """Every state it needed was read completely."""
        return all(s in self.states and self.states[s].complete for s in self.wanted)

    def unread(self) -> list[str]:
        """The states it needed and could not read completely."""
        return [s for s in self.wanted if s not in self.states or not self.states[s].complete]


def created_at(payout: Payout) -> datetime | None:
    """A payout's creation time (UTC); None when it has none or none that parses."""
    try:
        return clock.parse(payout.created or "")
    except ValueError:
        return None


def order_of(items: list[Payout]) -> Order:
    """The list's order as a full first page shows it: its dates only rise or only fall."""
    dated = [d for d in (created_at(p) for p in items) if d is not None]
    if len(dated) < 2 or len(dated) < len(items) or dated[0] == dated[-1]:
        return Order.UNKNOWN
    pairs = list(zip(dated, dated[1:], strict=False))
    if all(a >= b for a, b in pairs):
        return Order.NEWEST_FIRST
    if all(a <= b for a, b in pairs):
        return Order.OLDEST_FIRST
    return Order.UNKNOWN


def older_than(since: datetime) -> Callable[[list[Payout]], bool]:
    """A stop rule for a window: a page holding a payout made before `since` (in a list read
    from its newest end, every page after it is older still)."""
    def reaches_back(items: list[Payout]) -> bool:
        oldest = min((d for d in (created_at(p) for p in items) if d is not None),
                     default=None)
        return oldest is not None and oldest < since
    return reaches_back


async def read_list(client: PayoutClient, states: Sequence[str], *, max_pages: int,
                    on_page: Callable[[str, list[Payout]], None],
                    window_read: Callable[[list[Payout]], bool] | None = None,
                    found_all: Callable[[], bool] | None = None,
                    progress: Callable[[str, int, int], None] | None = None) -> ListRead:
    """Read `states` in the order payouts move, each page handed to `on_page(state, items)`.

    `window_read(items)`: in a list whose order is known, this page reaches back far enough
    and older pages are not needed (that state is then complete). `found_all()`: nothing more
    is looked for; the read stops there and counts as complete. `progress(state, pages read
    of it, pages it has at most)` is told after each page."""
    wanted = tuple(s for s in EVERY_STATE if s in states)
    read = ListRead(wanted=wanted)
    for state in wanted:
        if found_all is not None and found_all():
            break
        if read.pages >= max_pages:
            read.states[state] = StateRead(state)
            continue
        done = await _read_state(client, state, max_pages - read.pages, on_page, window_read,
                                 found_all, progress)
        read.states[state] = done
    if found_all is not None and found_all():
        for state in wanted:  # nothing left to look for: as good as complete
            read.states.setdefault(state, StateRead(state)).complete = True
    return read


async def _read_state(client: PayoutClient, state: str, budget: int,
                      on_page: Callable[[str, list[Payout]], None],
                      window_read: Callable[[list[Payout]], bool] | None,
                      found_all: Callable[[], bool] | None,
                      progress: Callable[[str, int, int], None] | None) -> StateRead:
    first = await client.list_payouts(state=state, page=0, size=PAGE_SIZE)
    read = StateRead(state, total_pages=first.total_pages, pages=1, order=order_of(first.items))
    total = first.total_pages
    if read.order is Order.NEWEST_FIRST:
        rest = list(range(1, total))
    elif read.order is Order.OLDEST_FIRST:
        # back from the newest page; the first page once more at the end, since payouts that
        # left the list's old end meanwhile shifted newer ones onto it
        rest = list(range(total - 1, -1, -1)) if total > 1 else []
    else:
        rest = list(range(1, total))
    at_most = 1 + len(rest) if first.items else 0  # an empty list: no progress to show
    on_page(state, first.items)
    if progress:
        progress(state, 1, min(at_most, budget))

    def enough(items: list[Payout]) -> bool:
        if found_all is not None and found_all():
            return True
        return (window_read is not None and read.order is not Order.UNKNOWN
                and window_read(items))

    # the first page ends the read when it is all there is, or the newest one reaching back
    # far enough; the oldest page reaching back says nothing about the pages after it
    if (not rest or not first.items or (found_all is not None and found_all())
            or (read.order is Order.NEWEST_FIRST and enough(first.items))):
        read.complete = True
        return read
    onwards = read.order is not Order.OLDEST_FIRST
    for number in rest:
        if read.pages >= budget:
            return read  # cut by the page cap: not complete
        listing = await client.list_payouts(state=state, page=number, size=PAGE_SIZE)
        read.pages += 1
        on_page(state, listing.items)
        if progress:
            progress(state, read.pages, min(at_most, budget))
        if (onwards and not listing.items) or (listing.items and enough(listing.items)):
            break  # read onwards, an empty page is past the end: the list grew shorter
    read.complete = True
    return read
