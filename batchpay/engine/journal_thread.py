"""The journal's work while workers pay, on a thread beside the event loop, written in groups.

An intent is a durable commit: it waits for the disk to flush (10 ms and more on a real
disk). Done on the event loop, every flush stops every request in flight meanwhile; on a
thread, the loop goes on sending and receiving while the disk works.

While one group of calls is being written, the calls made meanwhile wait; the thread then
writes all of them in one transaction, with one flush (batchpay.journal.grouped). So at 16
workers an intent costs a share of one flush, not a flush of its own, and a thread hop is
made per group, not per call. A caller learns its outcome only once its group has
committed: a payout request leaves only after its intent is on disk.

A group costs a fixed share of both this process's CPU and the database server's (its BEGIN,
its write lock, its two statements and its COMMIT on PostgreSQL: about as much as four
rows' writes), and a quick database makes groups small: a group of two or three intents
while sixteen workers pay. So when fewer intents wait than half the workers (`gather`),
the thread waits for more before it writes, until the oldest of them has waited the
journal's store's `group_linger` (10 ms in PostgreSQL, whose groups cost about 2 ms of CPU
each between this process and the server; 2 ms in SQLite, whose groups cost little more
than their flush), the time it waited behind the group written before included: a
worker's payout then leaves up to that much later, while its next quote is already on its
way; PostgreSQL's own commit_delay does the same for the commits of its sessions. With one
worker, nothing waits.

One connection must not be used by two threads at once, and a transaction belongs to
whoever opened it: one group at a time is written, and the calls of a group run one after
the other. A call cancelled on the loop (a 401 stopping the workers, Ctrl-C) still waits
for its group to be written before its task ends. While workers pay, the journal is used
only through a JournalThread; the loop uses it directly again once they have ended.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

from batchpay.journal.grouped import Call, Outcome, run_grouped
from batchpay.journal.store import Journal

P = ParamSpec("P")
T = TypeVar("T")


class JournalThread:
    def __init__(self, journal: Journal, gather: int = 1, linger: float | None = None) -> None:
        self.journal = journal
        self.groups = 0  # transactions written (a benchmark's and a test's figure)
        # how many intents may wait together (the workers paying): a group waits for half,
        # `linger` seconds at most (by default, as long as the journal's store makes worth it)
        self.gather = gather
        self.linger = journal.store.group_linger if linger is None else linger
        self._guard = threading.Lock()
        # enough intents wait now: told to the thread while it waits for them (`_wanted`)
        self._arrived = threading.Condition(self._guard)
        self._wanted = 0  # intents the thread is waiting for (0: it is not waiting)
        self._waiting: list[tuple[Call, asyncio.Future[Any]]] = []
        self._first_intent = 0.0  # when the oldest intent waiting came (time.monotonic)
        self._writing = False  # a thread is draining the waiting calls
        self._unawaited: set[asyncio.Future[Any]] = set()  # calls made with `later`

    async def __call__(self, work: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """`work(*args, **kwargs)` on the journal's thread, after every call before it."""
        result: T = await self._submit(Call(work, args, kwargs))
        return result

    async def durably(self, work: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """The same, in a transaction that survives a power cut (an intent)."""
        result: T = await self._submit(Call(work, args, kwargs, durable=True))
        return result

    def later(self, work: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> None:
        """`work(*args, **kwargs)` written with the next group, without waiting for it: for a
        record nothing waits on (a payout's answer: should the process die before it is
        written, the row is in doubt and is looked up, never resent blindly). Its error, if
        any, is raised by `settled`."""
        done = self._queue(Call(work, args, kwargs))
        self._unawaited.add(done)

    async def settled(self) -> None:
        """Once every call made with `later` is written; raises the first one's error."""
        waiting, self._unawaited = list(self._unawaited), set()
        for done in waiting:
            with contextlib.suppress(Exception):  # its error is raised below
                await _outcome_of(done)
        # every one's error seen (none left to be logged as never retrieved), the first raised
        errors = [error for done in waiting if (error := done.exception()) is not None]
        if errors:
            raise errors[0]

    def _queue(self, call: Call) -> asyncio.Future[Any]:
        loop = asyncio.get_running_loop()
        done: asyncio.Future[Any] = loop.create_future()
        with self._guard:
            self._waiting.append((call, done))
            if call.durable:
                intents = self._intents()
                if intents == 1:
                    self._first_intent = time.monotonic()
                if 0 < self._wanted <= intents:
                    self._arrived.notify()
            start, self._writing = not self._writing, True
        if start:
            loop.run_in_executor(None, self._write_waiting, loop)
        return done

    async def _submit(self, call: Call) -> Any:
        return await _outcome_of(self._queue(call))

    def _write_waiting(self, loop: asyncio.AbstractEventLoop) -> None:
        """On the thread: write the waiting calls, group after group, until none waits."""
        while True:
            with self._guard:
                self._gathered()
                waiting, self._waiting = self._waiting, []
                if not waiting:
                    self._writing = False
                    return
            try:
                outcomes = run_grouped(self.journal, [call for call, _ in waiting])
            except BaseException as exc:  # handed to the callers, not lost
                outcomes = [Outcome(error=exc)] * len(waiting)
            self.groups += 1
            loop.call_soon_threadsafe(_settle, [done for _, done in waiting], outcomes)

    def _gathered(self) -> None:
        """With the guard held: until half the workers' intents wait, or until the oldest
        of them has waited `linger` (the time it waited behind the group written before
        counts), not at all while no intent waits or half of them already do."""
        want = self.gather // 2
        if not 0 < self._intents() < want:
            return
        deadline = self._first_intent + self.linger
        self._wanted = want
        try:
            while self._intents() < want and (left := deadline - time.monotonic()) > 0:
                self._arrived.wait(left)
        finally:
            self._wanted = 0

    def _intents(self) -> int:
        """With the guard held: how many intents wait."""
        return sum(call.durable for call, _ in self._waiting)


async def _outcome_of(done: asyncio.Future[Any]) -> Any:
    """The call's outcome. Cancelled meanwhile, the task still waits for the call to be
    written: the connection is not the loop's again before its group has committed."""
    try:
        return await asyncio.shield(done)
    except asyncio.CancelledError:
        while not done.done():
            try:
                await asyncio.wait([done])
            except asyncio.CancelledError:
                continue
        done.exception()  # seen: the task's own cancellation is what goes on
        raise


def _settle(futures: list[asyncio.Future[Any]], outcomes: list[Outcome]) -> None:
    for done, outcome in zip(futures, outcomes, strict=True):
        if done.done():
            continue
        if outcome.error is not None:
            done.set_exception(outcome.error)
        else:
            done.set_result(outcome.value)
