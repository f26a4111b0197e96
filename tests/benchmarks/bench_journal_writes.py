"""What the journal's writes cost per payout, without the service: the engine's part of a
run's CPU that is not the HTTP client's.

    python tests/benchmarks/bench_journal_writes.py [--rows 2000] [--group 16]
                                                    [--store sqlite|postgresql] [--dir DIR]
    python tests/benchmarks/bench_journal_writes.py --short   # 160 rows in each store, for CI

Writes what a run writes for each row while its workers pay (an intent, durable, then the
accepted answer), in groups of `--group` calls as the journal's thread does
(batchpay.journal.grouped), on a new journal. Prints this process's CPU per row (for
PostgreSQL also the server's, read from its processes), the wall time per row, the
statements sent per row, and the groups written. (`--dir /dev/shm` leaves the SQLite
fsyncs out of the wall time; CPU time on a shared machine is the steadier figure.)
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: tests.support

import tests.support  # noqa: E402,F401  (the working tree first on the path)


def rows(journal: Any, run_id: str, n: int) -> None:
    from batchpay.clock import stamp
    from batchpay.journal.records import RunRecord, RunRow

    journal.start_run(RunRecord(id=run_id, kind="run", started_at=stamp(), sheet="bench.xlsx",
                                input_sha256="0" * 64, input_columns=["name"]),
                      [RunRow(seq=i, row=i + 2, payout_ref=f"ref-{i:06d}", inputs=[f"n{i}"],
                              status="PENDING") for i in range(n)])


def calls_for(journal: Any, run_id: str, i: int, attempt: int | None) -> Any:
    from batchpay.journal.grouped import Call

    ref = f"ref-{i:06d}"
    if attempt is None:
        quote = {"id": f"q-{i}", "rate": "230.5", "fee": "0", "sourceAmount": "100000",
                 "targetAmount": "433.84", "expiresIn": 600}
        body = {"quoteId": f"q-{i}", "accountName": "张伟", "accountNumber": f"62220{i:014d}",
                "bankCode": "ICBC", "remark": f"invoice {i} [{ref}]"}
        return Call(journal.record_intent, (ref, run_id, f"details {i}", quote, body,
                                            time.time() + 600),
                    {"seq": i, "rate": Decimal("230.5"), "fee": Decimal(0),
                     "target_amount": Decimal("433.84"), "total_debit": Decimal(100000),
                     "amount": Decimal(100000), "source_currency": "NGN",
                     "target_currency": "CNY", "quotes_used": None}, durable=True)
    return Call(journal.record_answer, (attempt, "accepted"),
                {"status": "PROCESSING", "run_id": run_id, "payout_id": f"p-{i}",
                 "reference_number": f"R{i}"})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=2000)
    parser.add_argument("--group", type=int, default=16)
    parser.add_argument("--store", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument("--dir", type=Path, help="where the SQLite journal goes")
    parser.add_argument("--short", action="store_true",
                        help="160 rows in SQLite, then in PostgreSQL")
    args = parser.parse_args(argv)
    if args.short:
        return max(measure(160, args.group, store, args.dir)
                   for store in ("sqlite", "postgresql"))
    return measure(args.rows, args.group, args.store, args.dir)


def measure(n: int, group: int, store: str, folder: Path | None) -> int:
    """Writes `n` rows' intents and answers in groups of `group`; prints the figures; 0 when
    the chain verifies afterwards."""
    with contextlib.ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-jw-")))
        os.environ["XDG_DATA_HOME"] = str(tmp / "data")
        from batchpay.journal.grouped import run_grouped
        from batchpay.journal.store import Journal
        from tests.support.processes import family_cpu_seconds

        cluster = None
        if store == "postgresql":
            from tests.support.postgres import Cluster

            cluster = Cluster(fsync=True)
            stack.callback(cluster.stop)
            where: Any = cluster.journal_url()
        else:
            where = (folder or tmp) / f"journal-{time.time_ns()}.sqlite3"
        journal = stack.enter_context(Journal(where))
        run_id = "20261127-000000-bench"
        rows(journal, run_id, n)
        journal.lock()
        statements = 0
        real_db = journal.db

        class Counting:
            """The connection, counting the statements the journal's calls send."""

            def __getattr__(self, name: str) -> Any:
                return getattr(real_db, name)

            def execute(self, *a: Any, **k: Any) -> Any:
                nonlocal statements
                statements += 1
                return real_db.execute(*a, **k)

            def executemany(self, *a: Any, **k: Any) -> Any:
                nonlocal statements
                statements += 1
                return real_db.executemany(*a, **k)

        journal.db = Counting()
        server_before = family_cpu_seconds(cluster.pid()) if cluster else 0.0
        cpu0, wall0 = time.process_time(), time.perf_counter()
        attempts: dict[int, int] = {}
        groups = 0
        pending_answers: list[int] = []
        for start in range(0, n, group):
            # a group as a run makes it: this wave's intents, the last wave's answers
            batch = [calls_for(journal, run_id, i, attempts.get(i)) for i in pending_answers]
            wave = list(range(start, min(n, start + group)))
            batch += [calls_for(journal, run_id, i, None) for i in wave]
            outcomes = run_grouped(journal, batch)
            groups += 1
            for call_i, outcome in zip(pending_answers + wave, outcomes, strict=True):
                if outcome.error is not None:
                    raise outcome.error
                if call_i in wave:
                    attempts[call_i] = outcome.value
            pending_answers = wave
        run_grouped(journal, [calls_for(journal, run_id, i, attempts[i])
                              for i in pending_answers])
        cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
        server = (family_cpu_seconds(cluster.pid()) - server_before) if cluster else float("nan")
        journal.db = real_db
        ok = journal.verify()
        print(f"store={store} rows={n} group={group} "
              f"cpu_us_per_row={cpu / n * 1e6:.0f} "
              f"server_cpu_us_per_row={server / n * 1e6:.0f} "
              f"wall_us_per_row={wall / n * 1e6:.0f} "
              f"statements_per_row={statements / n:.1f} groups={groups + 1} "
              f"chain_ok={ok.ok} events={ok.events} "
              f"load={'/'.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
        return 0 if ok.ok else 1


if __name__ == "__main__":
    sys.exit(main())
