"""The journal's writes while paying go in groups (one transaction, one flush for the calls
waiting together), and a payout request still never leaves before its intent is on disk.

The sandbox runs for real; the journal's commits are held, slowed or made to fail, and
what reached the service is read from the sandbox's own list of payouts."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from batchpay.clock import stamp
from batchpay.engine.gate import details_of
from batchpay.engine.sending import Sender, SendJob
from batchpay.errors import AlreadySent, JournalError
from batchpay.journal.grouped import Call, run_grouped
from batchpay.journal.records import RunRecord, RunRow
from batchpay.journal.store import Journal
from batchpay.provider.client import PayoutClient
from batchpay.sheet.validate import read_payouts
from batchpay.statuses import SENDING
from tests.support.e2e import sandbox_payouts
from tests.support.postgres import BOTH_STORES
from tests.support.sheets import rows, write_sheet

RUN_ID = "20251120-080000-abcd"


def jobs_of(tmp_path: Path, n: int) -> list[SendJob]:
    _, validation = read_payouts(write_sheet(tmp_path / "nov.xlsx", rows(n)))
    jobs = []
    for seq, checked in enumerate(validation.rows):
        payout = checked.payout
        assert payout is not None
        jobs.append(SendJob(seq, payout.payout_ref, details_of(payout), payout, "NG"))
    return jobs


def started(journal: Journal, jobs: list[SendJob]) -> None:
    run = RunRecord(id=RUN_ID, kind="run", started_at=stamp(), sheet="nov.xlsx",
                    input_sha256="0" * 64, input_columns=["payout_ref"])
    journal.start_run(run, [RunRow(seq=j.seq, row=j.seq + 2, payout_ref=j.ref, inputs=[j.ref],
                                   status="NOT_SENT") for j in jobs])


def pay(journal: Journal, url: str, key: str, jobs: list[SendJob]) -> tuple[list[str], Sender]:
    """Every job at once (as --concurrency workers would), answers recorded later."""

    async def main() -> tuple[list[str], Sender]:
        async with PayoutClient(url, key, concurrency=len(jobs)) as client:
            sender = Sender(journal, client, RUN_ID)
            try:
                statuses = await asyncio.gather(
                    *(sender.send(job, answer_later=True) for job in jobs))
            finally:
                await sender.in_journal.settled()
            return list(statuses), sender

    return asyncio.run(main())


def wrap_commit(journal: Journal, before: Callable[[], None]) -> None:
    """Run `before` at every commit of the journal, just before it is made (fault injection
    at the store's one commit point)."""
    real = journal.store.commit

    def commit() -> None:
        before()
        real()

    journal.store.commit = commit  # type: ignore[method-assign]


@BOTH_STORES
def test_no_request_leaves_before_its_intent_is_committed(
        sandbox: Any, tmp_path: Path, journal_at: str) -> None:
    """Every commit is held a while; meanwhile the service must hold no payout made with a
    quote whose intent that commit is about to write."""
    jobs = jobs_of(tmp_path, 12)
    seen_early: list[str] = []
    commits: list[int] = []
    with Journal(journal_at) as journal:
        journal.bind_service("sandbox")
        started(journal, jobs)
        last = [0]  # the last attempt id committed

        def check() -> None:
            uncommitted = {r[0]: r[1] for r in journal.db.execute(
                "SELECT quote_id, id FROM attempts WHERE id > ?", (last[0],))}
            time.sleep(0.15)  # time enough for a request sent too early to arrive
            at_service = {p["quoteId"] for p in sandbox_payouts(sandbox.url)}
            seen_early.extend(q for q in uncommitted if q in at_service)
            commits.append(len(uncommitted))
            last[0] = max([last[0], *uncommitted.values()])

        wrap_commit(journal, check)
        statuses, sender = pay(journal, sandbox.url, sandbox.api_key, jobs)
        assert seen_early == []
        assert sum(commits) == len(jobs)  # each intent was committed once
        assert all(status != SENDING for status in statuses)
        paid = sandbox_payouts(sandbox.url)
        assert sorted(p["quoteId"] for p in paid) == sorted(
            journal.entry(j.ref).quote_id for j in jobs)  # type: ignore[union-attr]
        # written in groups: fewer transactions than calls (12 intents and 12 answers)
        assert sender.in_journal.groups < 2 * len(jobs)
        assert journal.verify().ok


@BOTH_STORES
def test_an_intent_whose_commit_fails_sends_nothing(
        sandbox: Any, tmp_path: Path, journal_at: str) -> None:
    jobs = jobs_of(tmp_path, 6)
    with Journal(journal_at) as journal:
        journal.bind_service("sandbox")
        started(journal, jobs)

        def fail() -> None:
            raise sqlite3.OperationalError("disk I/O error") if journal.store.kind == "sqlite" \
                else journal.store.errors[0]("the server closed the connection")

        wrap_commit(journal, fail)
        with pytest.raises(JournalError):
            pay(journal, sandbox.url, sandbox.api_key, jobs)
    assert sandbox_payouts(sandbox.url) == []
    with Journal(journal_at) as journal:  # and none of it was written
        assert journal.db.execute("SELECT COUNT(*) FROM attempts").fetchone()[0] == 0


def test_slow_commits_are_shared_by_the_intents_waiting_together(
        sandbox: Any, tmp_path: Path) -> None:
    """A flush of 30 ms: 16 rows at once cost fewer flushes than rows, not one per call
    (16 intents and 16 answers; how few depends on how the quotes' answers spread)."""
    jobs = jobs_of(tmp_path, 16)
    with Journal(tmp_path / "journal.sqlite3") as journal:
        journal.bind_service("sandbox")
        started(journal, jobs)
        wrap_commit(journal, lambda: time.sleep(0.03))
        statuses, sender = pay(journal, sandbox.url, sandbox.api_key, jobs)
        assert all(status != SENDING for status in statuses)
        assert len(sandbox_payouts(sandbox.url)) == 16
        assert sender.in_journal.groups < len(jobs)
        assert {e.status for e in journal.entries([j.ref for j in jobs]).values()} <= {
            "PENDING", "PROCESSING", "COMPLETED"}


def test_a_failed_call_is_rolled_back_alone(journal: Journal) -> None:
    """The group's other calls are written; the failed one leaves nothing, and its error
    (AlreadySent here, a JournalError for a database error) goes to its caller."""

    def half_then_refused() -> None:
        journal.record_note("note.half", {"n": 2})
        raise AlreadySent("ref-2", "PENDING")

    def bad_sql() -> None:
        journal.db.execute("INSERT INTO no_such_table VALUES (1)")

    outcomes = run_grouped(journal, [
        Call(journal.record_note, ("note.one", {"n": 1})),
        Call(half_then_refused),
        Call(bad_sql, durable=True),
        Call(journal.record_note, ("note.three", {"n": 3})),
    ])
    assert outcomes[0].error is None and outcomes[3].error is None
    assert isinstance(outcomes[1].error, AlreadySent)
    assert isinstance(outcomes[2].error, JournalError)
    kinds = [r[0] for r in journal.db.execute("SELECT kind FROM events ORDER BY seq")]
    assert "note.half" not in kinds
    assert kinds[-2:] == ["note.one", "note.three"]
    assert journal.verify().ok


@contextlib.contextmanager
def started_journal(store: str, tmp_path: Path, request: pytest.FixtureRequest,
                    jobs: list[SendJob]) -> Iterator[Journal]:
    """A new journal in the store, its run started with `jobs`."""
    where = (request.getfixturevalue("postgres").journal_url() if store == "postgresql"
             else tmp_path / "journal.sqlite3")
    with Journal(where) as journal:
        journal.bind_service("sandbox")
        started(journal, jobs)
        yield journal


def intent_call(journal: Journal, job: SendJob, quote_id: str) -> Call:
    body = job.row.payout_body(quote_id)
    return Call(journal.record_intent, (job.ref, RUN_ID, job.details, {"id": quote_id}, body,
                                        time.time() + 600),
                {"seq": job.seq}, durable=True)


def answer_call(journal: Journal, attempt: int, i: int) -> Call:
    return Call(journal.record_answer, (attempt, "accepted"),
                {"status": "PROCESSING", "run_id": RUN_ID, "payout_id": f"p-{i}",
                 "reference_number": f"R{i}"})


def journal_state(journal: Journal) -> list[tuple[Any, ...]]:
    """The ledger and the attempts as a run leaves them (times and ids aside)."""
    return [tuple(r) for r in journal.db.execute(
        "SELECT p.payout_ref, p.status, p.quote_id, p.payout_id, p.reference_number, "
        "a.quote_id, a.outcome, rr.linked FROM payouts p JOIN attempts a ON a.id = p.attempt_id "
        "JOIN run_rows rr ON rr.payout_ref = p.payout_ref ORDER BY p.payout_ref")]


@BOTH_STORES
def test_a_group_of_intents_and_answers_writes_what_each_call_writes_alone(
        store: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """Written together (on PostgreSQL in two statements: every intent's claim and every
    answer's question, then everything the calls write), a group leaves the
    journal exactly as the same calls written one by one do, and its chain verifies."""
    jobs = jobs_of(tmp_path, 12)
    states = []
    for together in (True, False):
        where = (request.getfixturevalue("postgres").journal_url() if store == "postgresql"
                 else tmp_path / f"journal-{together}.sqlite3")
        with Journal(where) as journal:
            journal.bind_service("sandbox")
            started(journal, jobs)
            first = [intent_call(journal, job, f"q-{job.seq}") for job in jobs[:6]]
            attempts = [o.value for o in (run_grouped(journal, first) if together else
                                          [run_grouped(journal, [c])[0] for c in first])]
            # the next group as a run makes it: the answers of the first, the next intents
            second = ([answer_call(journal, a, i) for i, a in enumerate(attempts)]
                      + [intent_call(journal, job, f"q-{job.seq}") for job in jobs[6:]])
            outcomes = (run_grouped(journal, second) if together else
                        [run_grouped(journal, [c])[0] for c in second])
            assert all(o.error is None for o in outcomes)
            assert all(isinstance(o.value, int) for o in outcomes[6:])
            assert journal.verify().ok
            states.append(journal_state(journal))
    assert states[0] == states[1]
    assert [s[1] for s in states[0]].count("PROCESSING") == 6
    assert [s[1] for s in states[0]].count(SENDING) == 6
    assert all(s[-1] == 1 for s in states[0])  # every run row shows its ledger status


@BOTH_STORES
def test_an_intent_refused_in_a_group_leaves_the_others_written(
        store: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """One ref of the group already sent: its intent alone is refused (AlreadySent, nothing
    of it written); two intents of one ref in one group: one made, one refused."""
    jobs = jobs_of(tmp_path, 6)
    with started_journal(store, tmp_path, request, jobs) as journal:
        taken = run_grouped(journal, [intent_call(journal, jobs[0], "q-early")])[0].value
        assert isinstance(taken, int)
        outcomes = run_grouped(journal, [answer_call(journal, taken, 0)]
                               + [intent_call(journal, job, f"q-{job.seq}") for job in jobs[:5]])
        assert outcomes[0].error is None
        assert isinstance(outcomes[1].error, AlreadySent)
        assert all(isinstance(o.value, int) for o in outcomes[2:])
        twice = run_grouped(journal, [intent_call(journal, jobs[5], "q-a"),
                                      intent_call(journal, jobs[5], "q-b")])
        assert twice[0].error is None and isinstance(twice[1].error, AlreadySent)
        made = [r[0] for r in journal.db.execute(
            "SELECT quote_id FROM attempts WHERE payout_ref = ? ORDER BY id", (jobs[5].ref,))]
        assert made == ["q-a"]
        assert [r[0] for r in journal.db.execute(
            "SELECT quote_id FROM attempts WHERE payout_ref = ?", (jobs[0].ref,))] == ["q-early"]
        assert journal.verify().ok


@BOTH_STORES
def test_an_answer_and_a_new_intent_of_one_ref_in_a_group_are_written_in_their_order(
        store: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """A quote expired before sending: its answer (NOT_SENT) frees the ref, and the ref's
    new intent, in the same group, is made, as when the two are written one by one (on
    PostgreSQL the group's claims are asked before its answers are written: such a group
    is written call by call)."""
    jobs = jobs_of(tmp_path, 3)
    with started_journal(store, tmp_path, request, jobs) as journal:
        first = run_grouped(journal, [intent_call(journal, job, f"q-{job.seq}")
                                      for job in jobs])
        attempts = [o.value for o in first]
        expired = Call(journal.record_answer, (attempts[0], "expired"),
                       {"status": "NOT_SENT", "http_status": 400, "message": "quote expired",
                        "error": "quote expired before sending; requoted"})
        outcomes = run_grouped(journal, [answer_call(journal, attempts[1], 1), expired,
                                         intent_call(journal, jobs[0], "q-again")])
        assert [o.error for o in outcomes] == [None, None, None]
        assert journal.db.execute("SELECT quote_id FROM attempts WHERE payout_ref = ? "
                                  "ORDER BY id", (jobs[0].ref,)).fetchall()[-1][0] == "q-again"
        entries = journal.entries([job.ref for job in jobs])
        assert entries[jobs[0].ref].status == SENDING
        assert entries[jobs[0].ref].quote_id == "q-again"
        assert entries[jobs[1].ref].status == "PROCESSING"
        assert journal.verify().ok
