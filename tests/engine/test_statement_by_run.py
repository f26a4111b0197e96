"""Each run's money, as History shows it: counted from the chain as the statement counts
it, a refund in the run that sent the refunded request, and the runs adding up to the
statement's net debit and to the wallet's movement at the sandbox, to the cent."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

from batchpay.engine.statement import build_statement, totals_by_run
from batchpay.journal.store import Journal
from tests.engine.test_statement import (  # noqa: F401 - service: the fixture
    pay_fix_and_repay,
    service,
    wallet,
)
from tests.support.e2e import sandbox_payouts
from tests.support.sheets import row, write_sheet


def test_each_run_holds_its_own_money_and_its_own_refund(service: Any,  # noqa: F811
                                                          tmp_path: Path) -> None:
    before = wallet(service.url)
    sheet = write_sheet(tmp_path / "nov.xlsx", [row(1), row(2, remark="fail"), row(3)])
    pay_fix_and_repay(service, sheet, tmp_path)
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
