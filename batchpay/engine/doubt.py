"""Rows in doubt: a payout request that may have reached the service, and no answer.

The quote id is the only token the service de-duplicates on (engine.sending), and it is
on disk before the request leaves. One rule settles such a row, whichever way the
service's word arrives (a run's lookup, `batchpay sync`, a webhook):

    found    a payout made with the row's quote is the row's payout: the list shows it
             (scanned by quote id), or an event names it (`data.quote.id`; an event that
             says FAILED or REFUNDED only once the service's own record of it agrees)
    absent   a *complete* scan of the list (every state read to its end,
             engine.payout_list) that holds no payout for the quote proves that
             the request never arrived, once the quote had expired a read timeout before
             the scan began (a request that left before the scan may be committed up to a
             read timeout later): NOT_SENT, and the next run sends it with a new quote
    neither  still in doubt: while its quote is usable the identical body is resent (never
             a new quote); when time is up the row is UNKNOWN, for `batchpay sync`
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from batchpay.engine.tracking import ScanResult, apply_found, scan
from batchpay.errors import JournalError
from batchpay.journal.records import Attempt, LedgerEntry
from batchpay.journal.schema import moves_forward
from batchpay.journal.store import Journal
from batchpay.provider.client import PayoutClient, RetryBudget
from batchpay.provider.errors import AuthError, ProviderError
from batchpay.provider.models import Payout
from batchpay.provider.pacing import Pacer
from batchpay.statuses import IN_DOUBT, SENDING, SERVICE_ALIASES, Status

if TYPE_CHECKING:
    from batchpay.engine.sending import Sender
    from batchpay.service import Service
    from batchpay.settings.model import Settings

log = logging.getLogger("batchpay.webhooks")

# a quote this close to its end is not used for a (re)send: it could expire in flight
QUOTE_MARGIN_SECONDS = 5.0
UNKNOWN_ERROR = ("the payout request may have reached the service and no answer was found; "
                 "it is never resent blindly: run `batchpay sync` to resolve it")
NEVER_RECEIVED_ERROR = ("not sent: the service holds no payout for its quote, which has "
                        "expired; the next run sends it with a new quote")


# --- the rule -------------------------------------------------------------------------------
def provable_at(quote_expires_at: float, read_timeout: float) -> float:
    """The first moment a scan that begins then can prove a request with this quote absent."""
    return quote_expires_at + read_timeout


@dataclass
class Lookup:
    """One scan of the service's list for rows in doubt: when it began, what it found."""

    began: float  # time.time() before the first page was asked for
    read_timeout: float
    found: ScanResult = field(default_factory=ScanResult)

    @classmethod
    def beginning(cls, client: PayoutClient) -> Lookup:
        return cls(time.time(), client.read_timeout)

    def proves_absent(self, attempt: Attempt) -> bool:
        """The scan saw the whole list without the attempt's payout, late enough to count."""
        return self.found.complete and provable_at(attempt.quote_expires_at,
                                                   self.read_timeout) <= self.began


def never_received(journal: Journal, refs: Iterable[str], lookup: Lookup,
                   run_id: str = "") -> list[str]:
    """The rows still in doubt whose absence the lookup proves, recorded NOT_SENT."""
    proven = []
    for ref in refs:
        entry = journal.entry(ref)
        if entry is None or entry.status not in IN_DOUBT or entry.attempt_id is None:
            continue
        if lookup.proves_absent(journal.attempt(entry.attempt_id)):
            journal.record_answer(entry.attempt_id, "never_received", status=Status.NOT_SENT,
                                  run_id=run_id, error=NEVER_RECEIVED_ERROR)
            proven.append(ref)
    return proven


def sent_with(entry: LedgerEntry, quote_id: str) -> bool:
    """A payout made with `quote_id` answers this row: it is in doubt and sent that quote."""
    return bool(quote_id) and entry.status in IN_DOUBT and entry.quote_id == quote_id


# --- webhooks -------------------------------------------------------------------------------
# A webhook is signed with a secret that more than one party holds (the service, whoever set up
# the endpoint, a leaked copy), or not at all (`--insecure-no-signature`). A FAILED or REFUNDED
# frees a row for `rerun` to pay again, so such a claim is believed only when the service's own
# record of the payout (`GET /v1/transaction/{id}`) says so; until then it is recorded as a
# `webhook.claim` event and changes no status. Other states are applied as they come: a forged
# PENDING or COMPLETED can keep a row from being paid, never pay it twice.
FAILURES = frozenset({Status.FAILED, Status.REFUNDED})
CLAIM = "webhook.claim"
LOOKUP_SECONDS = 4.0  # the service waits 10 s for the receiver's answer

# the service's own record of a payout, by its id (None: it could not be read)
PayoutLookup = Callable[[str], Awaitable["Payout | None"]]


@dataclass(frozen=True)
class WebhookEvent:
    payout_id: str
    quote_id: str
    state: str  # as the service names it (INITIATED is PENDING)
    reference_number: str

    @classmethod
    def read(cls, payload: object) -> WebhookEvent | None:
        """The event's payout, or None when it is not a payout event."""
        data = payload.get("data") if isinstance(payload, dict) else None
        if not isinstance(data, dict) or not data.get("id") or not data.get("state"):
            return None
        quote = data.get("quote")
        quote_id = str(quote.get("id")) if isinstance(quote, dict) and quote.get("id") else ""
        state = str(data["state"]).upper()
        return cls(str(data["id"]), quote_id or str(data.get("quoteId") or ""),
                   SERVICE_ALIASES.get(state, state), str(data.get("referenceNumber") or ""))


def ref_for_event(journal: Journal, payout_id: str, quote_id: str) -> str | None:
    """The payout_ref an event is about: the row that knows the payout, or else the row in
    doubt that sent its quote (that is how an UNKNOWN row learns its payout)."""
    ref = journal.ref_for_payout(payout_id)
    if ref is None and quote_id:
        candidate = journal.ref_for_quote(quote_id)
        entry = journal.entry(candidate) if candidate else None
        if entry is not None and sent_with(entry, quote_id):
            ref = candidate
    return ref


def _row_of(journal: Journal, event: WebhookEvent) -> LedgerEntry | None:
    ref = ref_for_event(journal, event.payout_id, event.quote_id)
    return journal.entry(ref) if ref is not None else None


def to_confirm(journal: Journal, payload: object) -> str | None:
    """The payout id to look up at the service before `apply_event`: the event claims a
    FAILED or REFUNDED that would change a row. None: nothing to confirm (a duplicate, a
    late event, another state), so a flood of such events costs the service nothing."""
    event = WebhookEvent.read(payload)
    if event is None or event.state not in FAILURES:
        return None
    entry = _row_of(journal, event)
    return event.payout_id if entry is not None and _would_move(entry, event) else None


def _would_move(entry: LedgerEntry, event: WebhookEvent) -> bool:
    """The event is about the row's current payout (its quote; its id once known) and moves
    it forward (Journal.apply_state applies the same rule)."""
    if event.quote_id and event.quote_id != entry.quote_id:
        return False
    if entry.payout_id and entry.payout_id != event.payout_id:
        return False
    return moves_forward(entry.status, event.state)


def apply_event(journal: Journal, payload: object, confirmed: Payout | None = None) -> str:
    """Record one event; returns `applied`, `unchanged`, `claim`, `unmatched` or `malformed`.

    Trusted by `data.state`, not by the event's name; the same event many times makes one
    change, and events out of order never move a payout backwards (Journal.apply_state). A
    FAILED or REFUNDED is applied only as `confirmed` (the service's record of the payout,
    read by `to_confirm`'s id) shows it, and then in the state the service shows; without
    that it is a claim: recorded, not applied."""
    event = WebhookEvent.read(payload)
    if event is None:
        return "malformed"
    entry = _row_of(journal, event)
    if entry is None:
        log.info("webhook for unknown payout %s acknowledged", event.payout_id)
        return "unmatched"
    if event.state in FAILURES:
        return _failure(journal, entry, event, confirmed)
    changed = journal.apply_state(
        entry.payout_ref, event.state, source="webhook", payout_id=event.payout_id,
        quote_id=event.quote_id or entry.quote_id,
        reference_number=event.reference_number or entry.reference_number)
    return "applied" if changed else "unchanged"


def _failure(journal: Journal, entry: LedgerEntry, event: WebhookEvent,
             confirmed: Payout | None) -> str:
    """A FAILED or REFUNDED claim: applied as the service's record confirms it, else kept."""
    if not _would_move(entry, event):
        return "unchanged"
    record = confirmed if confirmed is not None and confirmed.id == event.payout_id else None
    # the service's record must be this row's payout: made with the row's quote
    if record is not None and record.quote_id != entry.quote_id:
        record = None
    fields = {"payout_id": event.payout_id, "quote_id": entry.quote_id,
              "reference_number": (record.reference_number if record else None)
              or entry.reference_number}
    # confirmed: the service shows the state claimed, or a later one (FAILED, then REFUNDED)
    if record is not None and record.state in FAILURES and (
            record.state == event.state or moves_forward(event.state, record.state)):
        changed = journal.apply_state(entry.payout_ref, record.state, source="webhook", **fields)
        return "applied" if changed else "unchanged"
    journal.record_decisions(entry.run_id, [(CLAIM, entry.payout_ref, {
        "payout_id": event.payout_id, "claimed_state": event.state,
        "service_state": record.state if record else None, "status": entry.status})])
    log.warning("webhook says payout %s of %s is %s; the service %s: not applied",
                event.payout_id, entry.payout_ref, event.state,
                f"says {record.state}" if record else "did not confirm it")
    if record is not None:  # what the service itself says is news worth keeping
        journal.apply_state(entry.payout_ref, record.state, source="lookup", **fields)
    return "claim"


def service_lookup(settings: Settings, service: Service) -> PayoutLookup:
    """Read one payout's record from the service, within the time a webhook's sender waits
    (a couple of attempts, LOOKUP_SECONDS): a payout the service cannot show in time stays a
    claim, and `batchpay sync` reads its state from the service later."""
    seconds = LOOKUP_SECONDS

    async def look_up(payout_id: str) -> Payout | None:
        from batchpay.engine.budget import shared_budget

        try:
            # the key's windows, booked with every other process using it; a lookup that
            # would wait for the budget longer than the sender waits is left to `sync`
            pacer = Pacer(0, None if service.embedded else settings.rate_limit,
                          shared=shared_budget(settings, service.api_key,
                                               embedded=service.embedded))
            async with PayoutClient(
                    service.base_url, service.api_key, paths=settings.paths,
                    headers=settings.headers,
                    connect_timeout=min(settings.connect_timeout, seconds),
                    read_timeout=min(settings.read_timeout, seconds), pacer=pacer,
                    retry=RetryBudget(attempts=2, seconds=seconds)) as client:
                return await asyncio.wait_for(client.get_payout(payout_id), seconds)
        except (ProviderError, JournalError) as exc:
            log.warning("payout %s could not be read from the service: %s", payout_id,
                        exc.message)
            return None
        except TimeoutError:
            log.warning("payout %s could not be read from the service within %g s",
                        payout_id, seconds)
            return None

    return look_up


# --- a run's rows in doubt ------------------------------------------------------------------
async def resolve(sender: Sender, refs: Iterable[str], *, deadline: float, max_pages: int,
                  pause: float = 1.0) -> None:
    """Look in-doubt rows up; resend the identical body while the quote is valid.

    Repeats (lookup, resend) until every row is found, its quote is no longer usable,
    or the deadline passes. Rows still not found end UNKNOWN, or NOT_SENT when their
    quote has expired and a complete scan of the list does not hold them.
    """
    journal, client = sender.in_journal, sender.client
    pending = [ref for ref, e in (await journal(sender.journal.entries, refs)).items()
               if e.status in IN_DOUBT]
    while pending:
        sender.check_stop()
        lookup = await _look_up(sender, pending, max_pages)
        pending = await _still_in_doubt(sender, pending)
        settled = await journal(never_received, sender.journal, pending, lookup, sender.run_id)
        pending = [ref for ref in pending if ref not in settled]
        if not pending or time.monotonic() >= deadline:
            break
        expiries = {ref: (await _attempt_of(sender, ref)).quote_expires_at for ref in pending}
        now = time.time()
        resendable = [ref for ref in pending if expiries[ref] - QUOTE_MARGIN_SECONDS > now]
        if not resendable:  # wait until the rest can be proven, if --wait allows it
            wait = provable_at(min(expiries.values()), client.read_timeout) - time.time()
            if wait > deadline - time.monotonic():
                break
            await asyncio.sleep(max(0.0, wait) + 0.05)
            continue
        await sender.together(_resend(sender, ref) for ref in resendable)
        pending = await _still_in_doubt(sender, pending)
        if pending:
            await asyncio.sleep(min(pause, max(0.0, deadline - time.monotonic())))
    for ref in pending:
        if (await _entry(sender, ref)).status == SENDING:
            await journal(sender.journal.set_status, ref, Status.UNKNOWN, run_id=sender.run_id,
                          error=UNKNOWN_ERROR)


async def _entry(sender: Sender, ref: str) -> LedgerEntry:
    """The journal's row of a payout_ref in flight (each has its ledger row)."""
    entry = await sender.in_journal(sender.journal.entry, ref)
    if entry is None:
        raise JournalError(f"payout_ref {ref} is in flight but has no ledger row.",
                           hint="Run `batchpay verify`: the journal was changed by hand.")
    return entry


async def _still_in_doubt(sender: Sender, refs: list[str]) -> list[str]:
    return [ref for ref in refs if (await _entry(sender, ref)).status in IN_DOUBT]


async def _attempt_of(sender: Sender, ref: str) -> Attempt:
    entry = await _entry(sender, ref)
    assert entry.attempt_id is not None
    return await sender.in_journal(sender.journal.attempt, entry.attempt_id)


async def _look_up(sender: Sender, refs: list[str], max_pages: int) -> Lookup:
    """One scan for these rows' quotes; what it finds goes into the journal."""
    entries = [await _entry(sender, ref) for ref in refs]
    lookup = Lookup.beginning(sender.client)
    try:
        found = await scan(sender.client, quote_ids=[e.quote_id for e in entries],
                           max_pages=max_pages)
    except AuthError as exc:
        raise sender.stop(exc) from None
    except ProviderError:
        return lookup  # nothing learnt, nothing proven; try again next round
    await sender.in_journal(apply_found, sender.journal, entries, found, "lookup")
    lookup.found = found
    return lookup


async def _resend(sender: Sender, ref: str) -> None:
    attempt = await _attempt_of(sender, ref)
    sender.check_stop()
    await sender.in_journal(sender.journal.mark_sent, attempt.id)
    try:
        payout = await sender.client.submit_payout(attempt.body)
    except AuthError as exc:
        raise sender.stop(exc) from None
    except ProviderError:
        return  # any answer but 200 leads to another lookup, never to a new quote
    await sender.record_accepted(attempt.id, payout)
