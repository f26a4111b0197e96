"""Each run's money, as History shows it: counted from the chain as the statement counts
it, a refund in the run that sent the refunded request, and the runs adding up to the
statement's net debit and to the wallet's movement at the sandbox, to the cent."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

from batchpay.engine.statement import build_statement, totals_by_run
from batchpay.journal.store import Journal
from tests.engine.test_statement import service, wallet  # noqa: F401 - the fixture
from tests.support.e2e import batchpay, by_ref, edit_results, sandbox_payouts
from tests.support.sheets import row, write_sheet
from tests.support.timing import settled


def test_each_run_holds_its_own_money_and_its_own_refund(service: Any,  # noqa: F811
                                                          tmp_path: Path) -> None:
    before = wallet(service.url)
    sheet = write_sheet(tmp_path / "nov.xlsx", [row(1), row(2, remark="fail"), row(3)])
    first = tmp_path / "first.xlsx"
    assert batchpay("run", str(sheet), "--out", str(first), "--wait", "10").exit_code == 1
    deadline = time.monotonic() + 10
    while by_ref(first)["T-00002"]["status"] != "REFUNDED" and time.monotonic() < deadline:
        time.sleep(0.2)
        batchpay("sync", "--out", str(first), "--overwrite")
    edit_results(first, "T-00002", remark=None, account_number="6222000000000000777")
    second = tmp_path / "second.xlsx"
    assert batchpay("rerun", str(first), "--out", str(second), "--wait", "10").exit_code == 0
    settled(service.url)  # every refund credited at the sandbox
    moved = before - wallet(service.url)

    today = datetime.now(UTC).date()
    with Journal(tmp_path / "journal" / "journal.sqlite3") as journal:
        runs = [r.id for r in journal.runs() if r.kind != "dry-run"]
        by_run = totals_by_run(journal)
        month = build_statement(journal, today, today).totals["NGN"]
    assert len(runs) == 2 and set(by_run) == set(runs)
    paid, repaid = by_run[runs[0]]["NGN"], by_run[runs[1]]["NGN"]
    refunded = next(p for p in sandbox_payouts(service.url) if p["state"] == "REFUNDED")
    assert (paid.payouts, paid.requests, repaid.payouts, repaid.requests) == (2, 3, 1, 1)
    assert paid.refunded > Decimal(refunded["sourceAmount"]) > 0  # its debit: fee included
    assert repaid.refunded == 0 and paid.in_doubt == repaid.in_doubt == 0
    assert paid.net_debit + repaid.net_debit == month.net_debit == moved
    assert paid.refunded == month.refunded
    assert paid.fees + repaid.fees == month.fees
