"""The journal's work while workers pay, on a thread beside the event loop.

An intent is a durable commit: it waits for the disk to flush (10 ms and more on a real
disk). Done on the event loop, every flush stops every request in flight meanwhile; on a
thread, the loop goes on sending and receiving while the disk works.

One SQLite connection must not be used by two threads at once, and a transaction
(`Journal.transaction`) belongs to whoever opened it: the calls take turns, one at a time,
and a call cancelled on the loop (a 401 stopping the workers, Ctrl-C) still waits for its
thread to finish before the task ends. While workers pay, the journal is used only through
a JournalThread; the loop uses it directly again once they have ended.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from batchpay.journal.store import Journal

P = ParamSpec("P")
T = TypeVar("T")


class JournalThread:
    def __init__(self, journal: Journal) -> None:
        self.journal = journal
        self._turn = asyncio.Lock()

    async def __call__(self, work: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """`work(*args, **kwargs)` on a thread, after every call before it has finished."""
        async with self._turn:
            done = asyncio.ensure_future(asyncio.to_thread(work, *args, **kwargs))
            try:
                return await asyncio.shield(done)
            except asyncio.CancelledError:
                # the thread goes on whatever becomes of this task: the connection is not
                # the loop's again before it has finished
                while not done.done():
                    try:
                        await asyncio.wait([done])
                    except asyncio.CancelledError:
                        continue
                if not done.cancelled():
                    done.exception()  # seen: the task's own cancellation is what goes on
                raise
