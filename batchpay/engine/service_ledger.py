"""The service's own ledger, read before paying: the journal is not the only memory.

The service has no idempotency key, so the journal is what keeps a payout_ref from being
paid twice. A journal can be lost (deleted, a new laptop), replaced by an older copy, or
be another one (`--journal` at a fresh file, a colleague's); a payment can be made in the
provider's dashboard. None of these are in the journal, all of them are in the service's
payout list. So before a run sends anything, the list of the last `service_check_days` days
is read (the states PENDING, which holds PROCESSING too, and COMPLETED, pages of 100,
through the same client: paced, counted in the rate budget; engine.payout_list), and a
row about to be sent is HELD when a payout there that this journal did not make (its quote
id is in none of the journal's payout requests), that may have paid (PENDING, PROCESSING,
COMPLETED), carries its payout_ref or, within the last `repeat_window_days` days, pays the
same account the same amount in the same currencies. `--allow-repeat PAYOUT_REF` releases
it (an event of the chain).

Complete or nothing: a window the check could not read to its start in both states (the
page cap `sync_max_pages`) may hide any row's earlier payment, so every row about to be sent
is HELD, saying so; never a warning alone. A service without the list (404) stops the run
before it pays (`ServiceCheckImpossible`): without the list there is no second memory.

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

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from batchpay import clock
from batchpay.controls.repeats import payment_key
from batchpay.engine.payout_list import PAID_STATES, created_at, older_than, read_list
from batchpay.money import masked
from batchpay.provider.errors import PayoutListAbsent
from batchpay.sheet.ref_tag import ref_key, refs_in_remark
from batchpay.statuses import FINE

if TYPE_CHECKING:
    from batchpay.journal.store import Journal
    from batchpay.provider.client import PayoutClient
    from batchpay.provider.models import Payout
    from batchpay.sheet.validate import PayoutRow



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
        day = f"{self.when:%Y-%m-%d}" if self.when is not None else "an unknown day"
        return (f"paid on {day} reference "
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
    complete: bool = False  # each state's list was read back to the window's start or its end
    unread: list[str] = field(default_factory=list)  # the states not read completely
    max_pages: int = 0

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

    def unchecked_message(self, ref: str) -> str:
        """Why a row is held when the window could not be read completely."""
        return (f"not checked against the service's own payout list: its "
                f"{' and '.join(self.unread)} payouts since {self.since:%Y-%m-%d} could not "
                f"all be read within the page cap (sync_max_pages = {self.max_pages}), so an "
                "earlier payment of this row from another journal, an older copy of this one "
                "or the provider's dashboard would not be seen. Raise sync_max_pages (or "
                "shorten service_check_days) in your own settings file and run again; if this "
                f"is a new payment, run again with --allow-repeat {ref}")

    def hold_message(self, ref: str, how: str, found: list[Outside]) -> str:
        first, *more = sorted(found, key=lambda p: p.created)
        also = f" (and {len(more)} more)" if more else ""
        return (f"found at the service, not in this journal: {first.describe()}{also}, "
                f"matched by {how} (account {masked(first.account)}); paid from another "
                "journal, an older copy of this one or the provider's dashboard? If this is "
                f"a new payment, run again with --allow-repeat {ref}")


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
                   str(account or ""), created_at(payout))


class ServiceCheckImpossible(PayoutListAbsent):
    """The service answers its payout list with 404: the run cannot check it and stops."""


async def read_service_ledger(client: PayoutClient, journal: Journal, *, days: int,
                              repeat_days: int, max_pages: int,
                              progress: Callable[[str, int, int], None] | None = None,
                              now: datetime | None = None) -> ServiceLedger:
    """Read the service's payouts of the last `days` days (at most `max_pages` pages for the
    two states together); their account and amount count for the last `repeat_days` days
    only (0: not at all).

    Each state's list is read from its newest end back until a page reaches past the
    window's start, in whichever order the service lists (engine.payout_list: onwards when
    newest first, from the last page back when oldest first, every page when the order
    cannot be told). `progress(state, done, at_most)` is told after each page."""
    now = now or clock.now()
    ledger = ServiceLedger(since=now - timedelta(days=days), repeat_since=now - timedelta(
        days=repeat_days) if repeat_days else None, max_pages=max_pages)
    recent: dict[str, Payout] = {}

    def take(state: str, items: list[Payout]) -> None:
        for p in items:
            when = created_at(p)
            if when is None or when >= ledger.since:  # an undated payout counts as recent
                recent[p.id] = p

    try:
        read = await read_list(client, PAID_STATES, max_pages=max_pages, on_page=take,
                               window_read=older_than(ledger.since), progress=progress)
    except PayoutListAbsent as exc:
        raise _impossible(exc) from None
    ledger.pages, ledger.complete, ledger.unread = read.pages, read.complete, read.unread()
    ledger.seen = len(recent)
    paid = [p for p in recent.values() if p.state in FINE]
    ours = journal.known_quotes(p.quote_id for p in paid if p.quote_id)
    for p in paid:
        if p.quote_id not in ours:
            ledger.add(_outside(p))
    return ledger


def _impossible(exc: PayoutListAbsent) -> ServiceCheckImpossible:
    from batchpay.settings.load import settings_files

    return ServiceCheckImpossible(
        f"The service has no payout list ({exc.service_message or 'not found'}: HTTP 404 on "
        f"{exc.request}), so it cannot be checked for payments this journal does not know. "
        "Without that second memory a lost, deleted or rolled-back journal would pay its rows "
        "again. Nothing was sent.",
        status=exc.status, method=exc.method, path=exc.path,
        service_message=exc.service_message,
        hint="If the service truly offers no list and you accept that the journal alone "
        "remembers what was paid, set `service_check_days = 0` in your own settings file "
        f"({settings_files()[0]}) and run again.")
