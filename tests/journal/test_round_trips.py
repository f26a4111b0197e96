"""A payout's journal writes on PostgreSQL wait for the server a few times, not once per
statement: a group of calls keeps its statements and sends them together, so only a call
that reads something (and the COMMIT) waits for an answer.

Round trips are counted from libpq's own trace of the messages this connection sent: each
wait for the server is a Query (statements sent as one), a Sync (a statement's end) or a
Flush (a pipeline's read) sent by the client."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from psycopg import pq

from batchpay.clock import stamp
from batchpay.errors import AlreadySent
from batchpay.journal.grouped import Call, run_grouped
from batchpay.journal.records import RunRecord, RunRow
from batchpay.journal.store import Journal

RUN_ID = "20251120-080000-trip"
PAYOUTS = 16


def waits_in(trace: Path) -> int:
    """The client's Query, Sync and Flush messages in a libpq trace: its waits for the
    server."""
    return sum(1 for line in trace.read_text(encoding="utf-8").splitlines()
               if line.startswith("F") and line.split("\t")[2:3] in (["Query"], ["Sync"],
                                                                     ["Flush"]))


def traced(journal: Journal, trace: Path) -> Any:
    conn = journal.store.pg.conn  # type: ignore[attr-defined]
    out = trace.open("w", encoding="utf-8")
    conn.pgconn.trace(out.fileno())
    conn.pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS | pq.Trace.REGRESS_MODE)
    return conn, out


def started(journal: Journal, refs: list[str]) -> None:
    run = RunRecord(id=RUN_ID, kind="run", started_at=stamp(), sheet="nov.xlsx",
                    input_sha256="0" * 64, input_columns=["payout_ref"])
    journal.start_run(run, [RunRow(seq=i, row=i + 2, payout_ref=ref, inputs=[ref],
                                   status="NOT_SENT") for i, ref in enumerate(refs)])


def intent(journal: Journal, ref: str, seq: int) -> Call:
    quote = f"q-{ref}"
    return Call(journal.record_intent, (ref, RUN_ID, '{"amount":"1"}', {"id": quote},
                                        {"quoteId": quote, "reason": "x"}, 9e9),
                {"seq": seq}, durable=True)


def test_a_payout_waits_for_the_server_a_few_times_not_once_per_statement(
        postgres: Any, tmp_path: Path) -> None:
    refs = [f"ref-{i}" for i in range(PAYOUTS)]
    with Journal(postgres.journal_url()) as journal:
        journal.bind_service("sandbox")
        started(journal, refs)
        trace = tmp_path / "libpq.trace"
        conn, out = traced(journal, trace)
        try:
            intents = run_grouped(journal, [intent(journal, ref, i) for i, ref in enumerate(refs)])
            answers = run_grouped(journal, [
                Call(journal.record_answer, (o.value, "accepted"),
                     {"status": "PENDING", "run_id": RUN_ID, "payout_id": f"p-{i}"})
                for i, o in enumerate(intents)])
        finally:
            conn.pgconn.untrace()
            out.close()
        assert all(o.error is None for o in intents + answers)
        per_payout = waits_in(trace) / PAYOUTS
        # an intent reads its attempt's id (made only while the ref is free), an answer its
        # attempt's ref and status; a group makes every claim and asks every question in
        # one statement and sends its writes as one, so a group of 16 waits three times:
        # about 0.4 a payout (2 when each call read its own, about 20 when each statement
        # waited for the server)
        assert per_payout <= 0.5, per_payout
        entries = journal.entries(refs)
        assert {e.status for e in entries.values()} == {"PENDING"}
        assert sorted(e.payout_id for e in entries.values()) == sorted(
            f"p-{i}" for i in range(PAYOUTS))
        assert journal.verify().ok


def test_a_refused_intent_in_a_pipelined_group_is_refused_alone(postgres: Any) -> None:
    """A call failing in a group written in one go (AlreadySent: another host paid the ref
    meanwhile) rolls the attempt back; the group is written again call by call, the others
    written once, the refused one not at all."""
    refs = ["ref-a", "ref-b", "ref-c"]
    with Journal(postgres.journal_url()) as journal:
        journal.bind_service("sandbox")
        started(journal, refs)
        first = run_grouped(journal, [intent(journal, "ref-b", 1)])
        assert first[0].error is None
        outcomes = run_grouped(journal, [intent(journal, ref, i) for i, ref in enumerate(refs)])
        assert outcomes[0].error is None and outcomes[2].error is None
        assert isinstance(outcomes[1].error, AlreadySent)
        counts = dict(journal.db.execute(
            "SELECT payout_ref, COUNT(*) FROM attempts GROUP BY payout_ref").fetchall())
        assert counts == {"ref-a": 1, "ref-b": 1, "ref-c": 1}
        intents = [r[0] for r in journal.db.execute(
            "SELECT payout_ref FROM events WHERE kind = 'payout.intent' ORDER BY seq")]
        assert intents == ["ref-b", "ref-a", "ref-c"]
        assert journal.verify().ok
