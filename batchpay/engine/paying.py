"""A run's paying phase, once its plan is made and confirmed (engine.runner):

    resolve rows in doubt from an earlier run ─► send new rows, --concurrency workers
        ─► resolve new doubts ─► follow statuses (webhooks and list polling) until --wait

The workers run in one task group: a 401/403 (AuthStop) cancels every other worker at
once, a request waiting for its pacing slot included, and no worker takes another job.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from batchpay.engine.doubt import resolve
from batchpay.engine.gate import RunDecisions
from batchpay.engine.sending import Sender, SendJob, quote_fields
from batchpay.engine.tracking import refresh
from batchpay.journal.records import LedgerEntry
from batchpay.journal.store import Journal
from batchpay.provider.client import PayoutClient
from batchpay.provider.errors import AuthError, ProviderError
from batchpay.provider.models import Quote
from batchpay.statuses import FINAL, NO_PAYOUT, SENDING, Status

# what a dry run's quoted row says; its next step comes from the row's facts, never from this
QUOTED_NOT_PAID = "dry run: quoted, not paid"


class Reporter(Protocol):
    def banner(self, text: str) -> None: ...
    def note(self, text: str) -> None: ...
    def start(self, label: str, total: int) -> None: ...
    def advance(self, n: int = 1) -> None: ...
    def done(self) -> None: ...
    def confirm(self, text: str) -> bool: ...


@dataclass
class Paying:
    journal: Journal
    reporter: Reporter
    concurrency: int
    max_pages: int  # of the service's list, for one lookup or status poll

    async def pay(self, client: PayoutClient, sender: Sender, plan: RunDecisions,
                  wait: float) -> None:
        """Every row of the plan: earlier doubts first (those proven never received are sent
        now), then the new rows; their statuses are followed until `wait` seconds are over."""
        deadline = time.monotonic() + wait
        if plan.resolve:
            self.reporter.note(f"{len(plan.resolve)} row(s) in doubt from an earlier run: "
                               "looking them up first")
            refs = [job.ref for job in plan.resolve]
            await resolve(sender, refs, deadline=deadline, max_pages=self.max_pages)
            again = self.journal.entries(refs)
            for job in plan.resolve:
                if again[job.ref].status in NO_PAYOUT:  # proven never received: send it now
                    plan.send.append(job)
                else:
                    plan.track.append(job.ref)
        in_doubt = await self._send_all(sender, plan.send)
        if in_doubt:
            self.reporter.note(f"{len(in_doubt)} answer(s) lost: looking them up")
            await resolve(sender, in_doubt, deadline=deadline, max_pages=self.max_pages)
        await self._follow(client, [j.ref for j in plan.send] + plan.track, deadline)

    async def quote_all(self, sender: Sender, jobs: list[SendJob], run_id: str) -> None:
        """A dry run: quote every row that would be sent, and note the quote on its run row."""

        async def quote(job: SendJob) -> None:
            try:
                fields = quote_fields(*await sender.priced(job))
                fields.pop("source_currency"), fields.pop("target_currency")
                await sender.in_journal(self.journal.update_run_row, run_id, job.seq,
                                        status=Status.NOT_SENT,
                                        error=QUOTED_NOT_PAID, **fields)
            except ProviderError as exc:
                await sender.in_journal(self.journal.update_run_row, run_id, job.seq,
                                        status=Status.QUOTE_FAILED,
                                        error=f"quote refused: {exc.message}")

        await self._each("Quoting", sender, jobs, quote)

    async def _each(self, label: str, sender: Sender, jobs: list[SendJob],
                    work: Callable[[SendJob], Awaitable[None]]) -> None:
        """`work` on every job, --concurrency at a time, with a progress bar; after a
        401/403 no worker takes another job, and those at work are cancelled."""
        if not jobs:
            return
        self.reporter.start(label, len(jobs))
        queue = list(reversed(jobs))

        async def worker() -> None:
            while queue and sender.stopped is None:
                await work(queue.pop())
                self.reporter.advance()

        try:
            await sender.together(worker() for _ in range(self.concurrency))
        finally:
            self.reporter.done()

    async def _send_all(self, sender: Sender, jobs: list[SendJob]) -> list[str]:
        """Pay every job; returns the refs whose answer was lost.

        Each worker asks for its next row's quote as soon as it has its current row's, so
        that the quote travels while the current row's intent is written: the service is
        kept as busy as by a client that journals nothing (the client's --concurrency slots
        still bound the requests in flight). A quote left unused by a stop is only a quote."""
        in_doubt: list[str] = []
        if not jobs:
            return in_doubt
        self.reporter.start("Paying", len(jobs))
        queue = list(reversed(jobs))
        sender.in_journal.gather = self.concurrency  # the intents that may wait together

        def quote(job: SendJob) -> asyncio.Task[tuple[Quote, int | None]]:
            task = asyncio.ensure_future(sender.priced(job))
            task.add_done_callback(_seen)
            return task

        async def worker() -> None:
            ahead: tuple[SendJob, asyncio.Task[tuple[Quote, int | None]]] | None = None
            try:
                while sender.stopped is None and (ahead is not None or queue):
                    job, quoting = ahead if ahead is not None else (queue[-1], quote(queue.pop()))
                    ahead = None
                    if not quoting.done():
                        await asyncio.wait([quoting])
                    if queue and sender.stopped is None:
                        ahead = (queue[-1], quote(queue.pop()))
                    if await sender.send(job, answer_later=True, priced=quoting) == SENDING:
                        in_doubt.append(job.ref)
                    self.reporter.advance()
            finally:
                if ahead is not None:
                    ahead[1].cancel()

        try:
            await sender.together(worker() for _ in range(self.concurrency))
        finally:
            self.reporter.done()
            await sender.in_journal.settled()  # the answers recorded without waiting
        return in_doubt

    async def _follow(self, client: PayoutClient, refs: list[str], deadline: float) -> None:
        """Poll the list until every sent row is final or --wait is over."""
        pause = 0.5

        def still_open() -> list[LedgerEntry]:  # read afresh: webhooks may have finished rows
            return [e for e in self.journal.entries(refs).values()
                    if e.status not in FINAL and e.payout_id]

        waiting = still_open()
        if waiting and deadline > time.monotonic():
            self.reporter.note(f"Waiting up to {deadline - time.monotonic():.0f} s for the final "
                               f"status of {len(waiting)} payout(s) (--wait); Ctrl-C is safe: "
                               "every request is in the journal, and `batchpay sync` goes on "
                               "later.")
        while still_open() and time.monotonic() < deadline:
            await asyncio.sleep(min(pause, max(0.0, deadline - time.monotonic())))
            open_ = still_open()
            if not open_:
                return
            try:
                await refresh(client, self.journal, open_, max_pages=self.max_pages)
            except AuthError:
                raise
            except ProviderError as exc:
                self.reporter.note(f"status poll failed ({exc.message}); will retry")
            pause = min(pause * 1.5, 5.0)


def _seen(task: asyncio.Task[Any]) -> None:
    """A quote asked for ahead and then not used (the run stopped): its error is no news."""
    if not task.cancelled():
        task.exception()
