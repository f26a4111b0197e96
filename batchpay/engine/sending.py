"""One row's way to the service: quote, intent on disk, payout, answer on disk.

The single-use quote id is the only de-duplication token the service has, so it is
written to the journal (with the exact body) before the payout request leaves, and an
in-doubt row is only ever resent with that same quote and body, never a new quote.

    definite refusal of the quote        -> QUOTE_FAILED
    service unreachable (budget spent)   -> NOT_SENT
    first send refused: quote expired    -> one new quote, one more send
    other definite refusal of the payout -> REJECTED (with the service's message)
    401/403                              -> the whole run stops (AuthStop)
    ambiguous (timeout, lost, 5xx)       -> in doubt: lookup, identical resend, else UNKNOWN
                                            (engine.doubt)

While workers pay, the journal is written on a thread of its own (engine.journal_thread):
an intent waits for the disk, and the other workers' requests go on meanwhile; the intents
and answers of workers waiting together are written in one transaction, one flush.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Coroutine, Iterable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from batchpay.engine.calibrate import CalibrationFailed, Calibrator
from batchpay.engine.journal_thread import JournalThread
from batchpay.errors import AlreadySent
from batchpay.journal import event_kinds as kinds
from batchpay.journal.store import Journal
from batchpay.money import minor_unit
from batchpay.provider.client import PayoutClient
from batchpay.provider.errors import (
    AuthError,
    InvalidQuote,
    ProviderError,
    QuoteExpired,
    RequestRejected,
)
from batchpay.provider.models import Payout, Quote
from batchpay.sheet.ref_tag import remark_with_ref
from batchpay.sheet.validate import PayoutRow
from batchpay.statuses import SENDING, Status

DEFAULT_QUOTE_SECONDS = 600  # "a quote lives 10 minutes", when the service does not say


class AuthStop(Exception):
    """401/403 from the service: no further requests; the run ends with the AuthError."""

    def __init__(self, error: AuthError) -> None:
        super().__init__(error.message)
        self.error = error


@dataclass(frozen=True)
class SendJob:
    seq: int
    ref: str
    details: str
    row: PayoutRow
    source_country: str


def quote_fields(quote: Quote, quotes_used: int | None = None) -> dict[str, Any]:
    return {
        "quote_id": quote.id, "rate": quote.rate, "fee": quote.fee,
        "target_amount": quote.target_amount, "total_debit": quote.total,
        "amount": quote.source_amount, "source_currency": quote.source_currency,
        "target_currency": quote.target_currency, "quotes_used": quotes_used,
    }


def payout_fields(payout: Payout) -> dict[str, Any]:
    return {"payout_id": payout.id, "reference_number": payout.reference_number or ""}


class Sender:
    def __init__(self, journal: Journal, client: PayoutClient, run_id: str,
                 ceilings: dict[str, Decimal] | None = None) -> None:
        self.journal = journal
        self.client = client
        self.run_id = run_id
        # an approved plan's ceiling on the total debit per source currency: what is left
        self.ceilings = dict(ceilings) if ceilings is not None else None
        self.over_ceiling: dict[str, str] = {}  # currency -> why its rows stopped
        self.stopped: AuthError | None = None
        self.calibrator = Calibrator()  # invoice rows: the conversions seen in this run
        self.in_journal = JournalThread(journal)  # the only way to the journal while paying

    def check_stop(self) -> None:
        if self.stopped is not None:
            raise AuthStop(self.stopped)

    def stop(self, error: AuthError) -> AuthStop:
        self.stopped = error
        return AuthStop(error)

    async def together(self, works: Iterable[Coroutine[Any, Any, None]]) -> None:
        """Run these at once; the first to fail cancels the others at once (after a 401 no
        request that has not left yet goes: not one waiting for its pacing slot), and its
        error is raised as it was."""
        try:
            async with asyncio.TaskGroup() as group:
                for work in works:
                    group.create_task(work)
        except BaseExceptionGroup as failed:
            raise failed.exceptions[0] from None

    async def quote(self, job: SendJob) -> Quote:
        return (await self.priced(job))[0]

    async def priced(self, job: SendJob) -> tuple[Quote, int | None]:
        """A fresh quote for the row, and for an invoice row how many quotes finding its
        source amount took (RequestRejected when the service or the calibration refuses)."""
        row = job.row
        if row.target_amount is None:
            if row.amount is None:  # validation fills exactly one of the two
                raise RequestRejected("the row has neither amount nor target_amount")
            return await self._quote_at(job, row.amount), None
        try:
            found = await self.calibrator.calibrate(
                lambda amount: self._quote_at(job, amount), row.target_amount,
                (row.source_currency, row.currency), source_unit=minor_unit(row.source_currency),
                target_unit=minor_unit(row.currency))
        except CalibrationFailed as exc:
            raise RequestRejected(f"{exc.message} (after {exc.quotes_used} quote(s))") from None
        return found.quote, found.quotes_used

    def estimate_source(self, job: SendJob) -> Decimal | None:
        """The source amount a row will debit, before it is quoted (None: not known yet)."""
        row = job.row
        if row.target_amount is None:
            return row.amount
        return self.calibrator.guess((row.source_currency, row.currency), row.target_amount,
                                     minor_unit(row.source_currency))

    async def _quote_at(self, job: SendJob, amount: Decimal) -> Quote:
        self.check_stop()
        row = job.row
        try:
            quote = await self.client.create_quote(
                source_amount=amount, source_currency=row.source_currency,
                source_country=job.source_country, target_currency=row.currency,
                target_country=row.country, payment_channel=row.payment_channel)
        except AuthError as exc:
            raise self.stop(exc) from None
        if quote.source_amount > 0:  # every quote teaches the pair's conversion
            self.calibrator.learn((row.source_currency, row.currency), quote,
                                  minor_unit(row.currency))
        return quote

    async def send(self, job: SendJob, *, answer_later: bool = False,
                   priced: Awaitable[tuple[Quote, int | None]] | None = None) -> str:
        """Pay one row; returns its status. In-doubt rows come back as SENDING.

        With `answer_later`, an accepted payout's answer is recorded with the journal's next
        group without waiting for it (the caller then awaits `in_journal.settled()`);
        `priced` is the row's first quote when the caller asked for it already
        (`self.priced(job)`, started ahead)."""
        for round_ in (1, 2):
            try:
                quote, quotes_used = await (priced if round_ == 1 and priced is not None
                                            else self.priced(job))
            except RequestRejected as exc:
                return await self._decide(job, Status.QUOTE_FAILED,
                                          f"quote refused: {exc.message}")
            except ProviderError as exc:
                return await self._decide(job, Status.NOT_SENT, f"not sent: {exc.message}")
            self.check_stop()
            refusal = self._take_from_ceiling(job.row.source_currency, quote.total)
            if refusal:
                return await self._decide(job, Status.NOT_SENT, refusal)
            body = job.row.payout_body(quote.id)
            # the payout_ref travels in the remark: the supplier's statement shows it, and
            # the service's own list then names the payment exactly (engine.service_ledger)
            body["remark"] = remark_with_ref(body.get("remark"), job.ref)
            try:
                attempt = await self.in_journal.durably(
                    self.journal.record_intent, job.ref, self.run_id, job.details, quote.raw,
                    body, time.time() + float(quote.expires_in_seconds or DEFAULT_QUOTE_SECONDS),
                    seq=job.seq, **quote_fields(quote, quotes_used))
            except AlreadySent as taken:
                self._give_back(job.row.source_currency, quote.total)
                # the run's row shows the other's payout
                await self.in_journal(self.journal.link_run_rows, self.run_id, [job.seq])
                return taken.status
            try:
                payout = await self.client.submit_payout(body)
            except AuthError as exc:
                await self._answer(attempt, "not_sent", Status.NOT_SENT, exc)
                raise self.stop(exc) from None
            except (QuoteExpired, InvalidQuote) as exc:
                expired = isinstance(exc, QuoteExpired) or await self._expired(attempt)
                if expired and round_ == 1:
                    self._give_back(job.row.source_currency, quote.total)
                    await self.in_journal(
                        self.journal.record_answer, attempt, "expired", status=Status.NOT_SENT,
                        http_status=exc.status, message=exc.message,
                        error="quote expired before sending; requoted")
                    continue
                return await self._answer(attempt, "rejected", Status.REJECTED, exc)
            except RequestRejected as exc:
                return await self._answer(attempt, "rejected", Status.REJECTED, exc)
            except ProviderError as exc:
                if exc.definite:  # never reached the service (connect errors, 429 budget spent)
                    return await self._answer(attempt, "not_sent", Status.NOT_SENT, exc)
                await self.in_journal(self.journal.record_note, kinds.PAYOUT_IN_DOUBT, {
                    "attempt": attempt, "error": type(exc).__name__, "message": exc.message},
                    run_id=self.run_id)
                return SENDING
            if answer_later:  # the worker takes its next row while the answer is written
                self.in_journal.later(self.journal.record_answer, attempt, "accepted",
                                      status=payout.state, run_id=self.run_id,
                                      **payout_fields(payout))
            else:
                await self.record_accepted(attempt, payout)
            return payout.state
        raise AssertionError("unreachable")  # pragma: no cover

    def _take_from_ceiling(self, currency: str, debit: Decimal) -> str:
        """"" when the plan's ceiling still covers this debit (now counted), else why not: the
        first quote past the ceiling stops every remaining row of its currency."""
        if self.ceilings is None:
            return ""
        if currency in self.over_ceiling:
            return self.over_ceiling[currency]
        left = self.ceilings.get(currency, Decimal(0))
        if debit > left:
            self.over_ceiling[currency] = (
                f"not sent: the approved plan's ceiling on the {currency} debit would be passed "
                f"(this row's quote debits {debit:,}, {left:,} left): rates moved since the "
                "plan was approved; make and approve a new plan for the rest")
            return self.over_ceiling[currency]
        self.ceilings[currency] = left - debit
        return ""

    def _give_back(self, currency: str, debit: Decimal) -> None:
        if self.ceilings is not None and currency not in self.over_ceiling:
            self.ceilings[currency] = self.ceilings.get(currency, Decimal(0)) + debit

    async def _expired(self, attempt_id: int) -> bool:
        attempt = await self.in_journal(self.journal.attempt, attempt_id)
        return time.time() >= attempt.quote_expires_at

    async def _decide(self, job: SendJob, status: str, error: str) -> str:
        """A row that sends nothing: its status, with why, for the run and the ledger."""

        def record() -> None:
            with self.journal.transaction():
                self.journal.link_run_rows(self.run_id, [job.seq])
                entry = self.journal.entry(job.ref)
                self.journal.set_status(job.ref, status, run_id=self.run_id,
                                        details=job.details, error=error,
                                        quote_id=entry.quote_id if entry else "",
                                        amount=job.row.amount,
                                        source_currency=job.row.source_currency,
                                        target_currency=job.row.currency)

        await self.in_journal(record)
        return status

    async def _answer(self, attempt: int, outcome: str, status: str, exc: ProviderError) -> str:
        prefix = "refused" if outcome == "rejected" else "not sent"
        await self.in_journal(self.journal.record_answer, attempt, outcome, status=status,
                              http_status=exc.status, message=exc.message,
                              error=f"{prefix}: {exc.message}")
        return status

    async def record_accepted(self, attempt: int, payout: Payout) -> None:
        """The service took the payout (first send or an identical resend)."""
        await self.in_journal(self.journal.record_answer, attempt, "accepted",
                              status=payout.state, run_id=self.run_id, **payout_fields(payout))
