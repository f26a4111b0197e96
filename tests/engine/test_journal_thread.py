"""The journal's work while workers pay runs beside the event loop, one call at a time."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from batchpay.engine.journal_thread import JournalThread
from batchpay.journal.store import Journal
from tests.support.e2e import batchpay, sandbox_payouts
from tests.support.postgres import BOTH_STORES
from tests.support.sheets import rows, write_sheet


def test_calls_take_turns_and_a_cancelled_one_ends_with_its_thread(journal: Journal) -> None:
    inside: list[str] = []  # the calls at work
    at_once: list[int] = []  # how many were at work, seen by each call
    finished: list[str] = []

    def work(name: str) -> str:
        inside.append(name)
        at_once.append(len(inside))
        time.sleep(0.05)
        inside.remove(name)
        finished.append(name)
        return name

    async def main() -> None:
        thread = JournalThread(journal)
        assert await asyncio.gather(*(thread(work, f"w{n}") for n in range(4))) == [
            "w0", "w1", "w2", "w3"]
        cancelled = asyncio.ensure_future(thread(work, "cancelled"))
        await asyncio.sleep(0.01)  # its thread is at work
        cancelled.cancel()
        with pytest.raises(asyncio.CancelledError):
            await cancelled
        # the task ended only once its thread had: the connection is free again
        assert finished[-1] == "cancelled"

    asyncio.run(main())
    assert at_once == [1] * 5


@BOTH_STORES
def test_intents_and_answers_are_written_off_the_event_loop(
        cli_sandbox: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A durable intent waits for the disk: on the loop's thread it would stop every other
    worker's request meanwhile."""
    service = cli_sandbox()
    loop_thread = threading.get_ident()  # the CLI runs its event loop on this thread
    writers: list[int] = []
    # the steps every intent and every answer takes, written alone or with their group
    for name in ("intent_claimed", "answer_found"):
        real = getattr(Journal, name)

        def watched(self: Journal, *args: Any, _real: Any = real, **kwargs: Any) -> Any:
            writers.append(threading.get_ident())
            return _real(self, *args, **kwargs)

        monkeypatch.setattr(Journal, name, watched)
    sheet = write_sheet(tmp_path / "nov.xlsx", rows(6))
    result = batchpay("run", str(sheet), "--wait", "0", "--out", str(tmp_path / "out.xlsx"))
    assert result.exit_code == 0, result
    assert len(sandbox_payouts(service.url)) == 6
    assert len(writers) == 12 and loop_thread not in writers


def test_intents_waiting_together_wait_for_half_the_workers_at_most_a_linger(
        journal: Journal) -> None:
    """A group writes once half the workers' intents wait; fewer wait at most `linger`; a
    call that is not an intent (an answer, a note) waits for none."""

    def noted(name: str) -> str:
        journal.record_note("test.note", {"name": name})
        return name

    async def main() -> None:
        # 8 workers: 4 intents are half of them, written at once, however long the linger
        thread = JournalThread(journal, gather=8, linger=30.0)
        started = time.monotonic()
        assert await asyncio.gather(*(thread.durably(noted, f"i{n}") for n in range(4))) == [
            "i0", "i1", "i2", "i3"]
        assert thread.groups == 1
        assert time.monotonic() - started < 10
        assert await thread(noted, "answer") == "answer"  # no intent waits: no linger
        assert time.monotonic() - started < 10
        # one intent alone: written once the linger is over, not before
        thread.linger = 0.3
        started = time.monotonic()
        assert await thread.durably(noted, "alone") == "alone"
        assert time.monotonic() - started >= 0.3
        # one worker: its intent never waits for another
        single = JournalThread(journal, gather=1, linger=30.0)
        started = time.monotonic()
        assert await single.durably(noted, "one") == "one"
        assert time.monotonic() - started < 10
        # by default, as long as the store's groups make worth it: longer where a group
        # costs a server's round trips than in a file
        default = JournalThread(journal, gather=8)
        assert default.linger == journal.store.group_linger
        assert default.linger == (0.010 if journal.store.kind == "postgresql" else 0.002)
        started = time.monotonic()
        assert await default.durably(noted, "by default") == "by default"
        assert time.monotonic() - started >= default.linger

    asyncio.run(main())
    names = [r[0] for r in journal.db.execute(
        "SELECT data FROM events WHERE kind = 'test.note' ORDER BY seq")]
    assert len(names) == 8


def test_an_intents_wait_behind_a_group_counts_toward_its_linger(journal: Journal) -> None:
    """An intent that came while a group was being written has waited already: it waits for
    company only what is left of the linger, so a payout leaves at most `linger` after its
    intent, or as soon as the group before it is written."""

    def slow(name: str) -> str:
        time.sleep(1.0)
        journal.record_note("test.note", {"name": name})
        return name

    async def main() -> tuple[float, float]:
        thread = JournalThread(journal, gather=8, linger=1.0)
        started = time.monotonic()
        first = asyncio.ensure_future(thread(slow, "being written"))  # not an intent: no wait
        await asyncio.sleep(0.1)
        second = await thread.durably(lambda: "came meanwhile")
        assert second == "came meanwhile" and await first == "being written"
        return started, time.monotonic()

    started, done = asyncio.run(main())
    # written once the slow group was (1 s), not a whole linger after it (2 s)
    assert 0.9 < done - started < 1.7
