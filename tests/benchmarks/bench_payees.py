"""Benchmark the payee register: what classifying a sheet against the journal's history adds
to `batchpay validate`.

    python tests/benchmarks/bench_payees.py [--rows 10000]
    python tests/benchmarks/bench_payees.py --short      # 500 rows, for CI

Builds a journal whose ledger holds N paid payouts (one per payee, with payee_id), and next
month's sheet of the same N payees with new payout_refs, 1 in 50 with a changed account and
1 in 50 replaced by a payee never paid (so that the look-alike index is built and asked).
Times `batchpay validate --no-bank-check` without a journal and with it (best of 3 each),
and the register on its own (load + classify). Prints:
    rows=10000 history=10000 validate_s=3.10 with_register_s=3.40 added_s=0.30 register_s=0.28 changed=200 new=200
Target: at most 0.5 s added for 10,000 rows (checked from 10,000 rows on). Exits 1 when
missed or when the changed or new rows are not exactly the ones found (a stranger is no
look-alike).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: tests.support

from batchpay.controls.payees import CHANGED, NEW, HoldRules, check_rows  # noqa: E402
from batchpay.journal.records import canonical  # noqa: E402
from batchpay.journal.store import Journal  # noqa: E402
from tests.support.processes import benchmark_rows  # noqa: E402
from tests.support.sheets import HEADERS, row, write_sheet  # noqa: E402

TARGET_SECONDS = 0.5


def history(path: Path, n: int) -> None:
    with Journal(path) as j, j.transaction(durable=True):
        for i in range(1, n + 1):
            values = {k: ("" if v is None else str(v)) for k, v in row(i).items()
                      if k not in ("payout_ref", "reason", "remark")}
            values["payee_id"] = f"SUP-{i:06d}"
            ref = f"OCT-{i:06d}"
            attempt = j.record_intent(ref, "run-1", canonical(values), {"id": f"q{i}"},
                                      {"quoteId": f"q{i}"}, 9e9, amount=values["amount"],
                                      source_currency="NGN", target_currency="CNY")
            j.record_answer(attempt, "accepted", status="COMPLETED", run_id="run-1",
                            payout_id=f"p{i}", reference_number=f"REF{i:010d}")


def next_month(n: int) -> list[dict[str, object]]:
    sheet = []
    for i in range(1, n + 1):
        values = row(i) | {"payout_ref": f"NOV-{i:06d}", "payee_id": f"SUP-{i:06d}"}
        if i % 50 == 0:
            values["account_number"] = f"6217{i:015d}"
        elif i % 50 == 25:  # a stranger: another person, never paid
            # (no ic_number: the made-up ones repeat every 900 rows, and a known ic_number is
            # its payee whatever the payee_id)
            values = row(n + i) | {"payout_ref": f"NOV-{i:06d}", "payee_id": f"NEW-{i:06d}",
                                   "ic_number": None}
        sheet.append(values)
    return sheet


def validate_seconds(sheet: Path, journal: Path) -> float:
    env = {**os.environ, "BATCHPAY_JOURNAL": str(journal)}
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "batchpay", "validate", str(sheet),
                               "--no-bank-check"], env=env, capture_output=True, text=True,
                              timeout=600)
        best = min(best, time.perf_counter() - started)
        if done.returncode != 0:
            raise SystemExit(f"validate exited {done.returncode}: {done.stderr[-2000:]}")
    return best


def main() -> int:
    n = benchmark_rows(__doc__ or "")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        journal = work / "journal.sqlite3"
        history(journal, n)
        sheet_rows = next_month(n)
        sheet = write_sheet(work / "november.xlsx", sheet_rows, ["payee_id", *HEADERS])
        without = validate_seconds(sheet, work / "none" / "journal.sqlite3")
        with_register = validate_seconds(sheet, journal)
        started = time.perf_counter()
        with Journal(journal) as j:
            findings = check_rows(j, ((i, i + 2, str(v["payout_ref"]), v)
                                      for i, v in enumerate(sheet_rows)), HoldRules())
        register_seconds = time.perf_counter() - started
    changed = {f.ref for f in findings if f.reason == CHANGED}
    expected = {str(v["payout_ref"]) for i, v in enumerate(sheet_rows, 1) if i % 50 == 0}
    new = {f.ref for f in findings if f.reason == NEW}
    strangers = {str(v["payout_ref"]) for i, v in enumerate(sheet_rows, 1) if i % 50 == 25}
    added = with_register - without
    print(f"rows={n} history={n} validate_s={without:.2f} with_register_s={with_register:.2f} "
          f"added_s={added:.2f} register_s={register_seconds:.2f} changed={len(changed)} "
          f"new={len(new)}")
    ok = changed == expected and new == strangers and (n < 10000 or added <= TARGET_SECONDS)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
