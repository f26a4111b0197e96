"""A group of payout writes on PostgreSQL reads the rows it writes by their keys, not the
whole run: the rows a run has already paid cost the next group nothing.

A new journal's tables have no statistics during the run that fills them, and a plan made
for its first groups, when they were nearly empty, is a plan that reads them whole. Read
whole once per group, a run of n rows reads about n²/group rows; here they are counted by
the server itself (pg_stat_user_tables), for a run written in groups of 4 intents and 4
answers, the groups a run of 16 workers writes against a quick service."""

from __future__ import annotations

from typing import Any

import psycopg

from batchpay.clock import stamp
from batchpay.journal.grouped import Call, run_grouped
from batchpay.journal.records import RunRecord, RunRow
from batchpay.journal.store import Journal
from batchpay.statuses import Status

RUN_ID = "20261127-090000-reads"
ROWS = 2000
LAST = 200  # the rows whose groups' reads are counted: those written once ROWS - LAST are
WAVE = 4  # intents per group, with the answers of the wave before


def tuples_read(url: str) -> int:
    """Rows the server has read so far from the ledger, the attempts and the run rows, by
    sequential and by index scans."""
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT SUM(COALESCE(seq_tup_read, 0) + COALESCE(idx_tup_fetch, 0)) FROM "
            "pg_stat_user_tables WHERE schemaname = current_schema() AND relname IN "
            "('payouts', 'attempts', 'run_rows')").fetchone()
    assert row is not None
    return int(row[0] or 0)


def flushed(journal: Journal) -> None:
    """The journal's connection reports its reads to the server's statistics now."""
    conn = journal.store.pg.conn  # type: ignore[attr-defined]
    conn.execute("SELECT pg_stat_force_next_flush()")
    conn.execute("SELECT 1")


def intent(journal: Journal, i: int) -> Call:
    ref, quote = f"ref-{i:04d}", f"q-{i}"
    return Call(journal.record_intent, (ref, RUN_ID, f"details {i}", {"id": quote},
                                        {"quoteId": quote, "remark": f"[{ref}]"}, 9e9),
                {"seq": i}, durable=True)


def answer(journal: Journal, attempt: int, i: int) -> Call:
    return Call(journal.record_answer, (attempt, "accepted"),
                {"status": "PROCESSING", "run_id": RUN_ID, "payout_id": f"p-{i}"})


def test_a_group_reads_its_own_rows_not_the_run_paid_before_it(postgres: Any) -> None:
    url = postgres.journal_url()
    with Journal(url) as journal:
        journal.bind_service("sandbox")
        journal.start_run(
            RunRecord(id=RUN_ID, kind="run", started_at=stamp(), sheet="nov.xlsx",
                      input_sha256="0" * 64, input_columns=["payout_ref"]),
            [RunRow(seq=i, row=i + 2, payout_ref=f"ref-{i:04d}", inputs=[str(i)],
                    status=Status.PENDING) for i in range(ROWS)])
        attempts: dict[int, int] = {}
        last: list[int] = []
        for start in range(0, ROWS, WAVE):
            if start == ROWS - LAST:
                flushed(journal)
                before = tuples_read(url)
            wave = list(range(start, start + WAVE))
            calls = [answer(journal, attempts[i], i) for i in last]
            calls += [intent(journal, i) for i in wave]
            outcomes = run_grouped(journal, calls)
            assert all(o.error is None for o in outcomes), outcomes
            attempts.update({i: o.value for i, o in zip(wave, outcomes[len(last):],
                                                        strict=True)})
            last = wave
        assert all(o.error is None for o in run_grouped(
            journal, [answer(journal, attempts[i], i) for i in last]))
        flushed(journal)
        read = tuples_read(url) - before
        assert len(journal.entries([f"ref-{i:04d}" for i in range(ROWS)])) == ROWS
    # each row is looked up by its key a few times (its claim, its answer's attempt and
    # ledger row, its run row); reading a table of the run once per group would be about
    # 100,000 rows
    assert read <= 12 * LAST, read
