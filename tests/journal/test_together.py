"""A PostgreSQL group's writes sent as few statements (batchpay.journal.together): each
kind of row one part of one statement, split where one statement may not hold them."""

from __future__ import annotations

import time
from typing import Any

from batchpay.clock import stamp
from batchpay.journal import together
from batchpay.journal.grouped import Call, run_grouped
from batchpay.journal.records import RunRecord, RunRow
from batchpay.journal.store import Journal
from batchpay.statuses import SENDING, Status

RUN_ID = "20261127-100000-together"


def test_parts_go_as_one_statement_of_named_parts() -> None:
    statements = together._together([
        ("UPDATE run_rows SET linked = 1 WHERE seq = ?", [1], set()),
        ("INSERT INTO payouts (payout_ref) VALUES (?)", ["r-1"], {"r-1"}),
        ("INSERT INTO events (seq) VALUES (?)", [7], set())])
    assert statements == [(
        "WITH w0 AS (UPDATE run_rows SET linked = 1 WHERE seq = ?), "
        "w1 AS (INSERT INTO payouts (payout_ref) VALUES (?)) "
        "INSERT INTO events (seq) VALUES (?)", [1, "r-1", 7])]


def test_two_parts_writing_one_ledger_row_go_in_two_statements_in_their_order() -> None:
    statements = together._together([
        ("INSERT INTO payouts (payout_ref, status) VALUES (?, ?)", ["r-1", "A"], {"r-1"}),
        ("INSERT INTO payouts (payout_ref, run_id) VALUES (?, ?)", ["r-1", "x"], {"r-1"})])
    assert [values for _, values in statements] == [["r-1", "A"], ["r-1", "x"]]
    assert not any(sql.startswith("WITH") for sql, _ in statements)


def test_a_statement_holds_at_most_its_share_of_values(monkeypatch: Any) -> None:
    monkeypatch.setattr(together, "PARAMETERS_PER_STATEMENT", 5)
    statements = together._together([(f"INSERT INTO events (seq) VALUES (?, ?) -- {n}",
                                       [n, n], set()) for n in range(5)])
    assert [len(values) for _, values in statements] == [4, 4, 2]
    assert [v for _, values in statements for v in values] == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4]


def test_a_large_group_is_written_whole_and_its_chain_verifies(postgres: Any) -> None:
    """120 intents, then their 120 answers with 120 new intents: parts of 50 rows each."""
    with Journal(postgres.journal_url()) as journal:
        journal.bind_service("sandbox")
        journal.start_run(
            RunRecord(id=RUN_ID, kind="run", started_at=stamp(), sheet="nov.xlsx",
                      input_sha256="0" * 64, input_columns=["payout_ref"]),
            [RunRow(seq=i, row=i + 2, payout_ref=f"ref-{i:04d}", inputs=[str(i)],
                    status=Status.PENDING) for i in range(240)])

        def intent(i: int) -> Call:
            ref = f"ref-{i:04d}"
            return Call(journal.record_intent, (ref, RUN_ID, f"d{i}", {"id": f"q-{i}"},
                                                {"quoteId": f"q-{i}", "remark": f"[{ref}]"},
                                                time.time() + 600), {"seq": i}, durable=True)

        first = run_grouped(journal, [intent(i) for i in range(120)])
        assert all(isinstance(o.value, int) for o in first)
        second = run_grouped(journal, [
            Call(journal.record_answer, (o.value, "accepted"),
                 {"status": "PROCESSING", "run_id": RUN_ID, "payout_id": f"p-{i}"})
            for i, o in enumerate(first)] + [intent(i) for i in range(120, 240)])
        assert all(o.error is None for o in second)
        entries = journal.entries([f"ref-{i:04d}" for i in range(240)])
        assert [e.status for e in entries.values()].count("PROCESSING") == 120
        assert [e.status for e in entries.values()].count(SENDING) == 120
        assert journal.db.execute("SELECT COUNT(*) FROM run_rows WHERE linked = 1"
                                  ).fetchone()[0] == 240
        assert journal.verify().ok
