"""The money table a run and a dry run print: every total over the same rows (a dry run's
quoted rows, a run's sent rows); held and invalid rows counted apart (left out)."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from tests.support.e2e import batchpay, by_ref
from tests.support.sheets import row, write_sheet

WIDE = {"COLUMNS": "200"}


@pytest.fixture
def service(cli_sandbox: Any) -> Any:
    return cli_sandbox(settle_seconds=0.05)


def money_line(stderr: str, currency: str = "NGN") -> dict[str, str]:
    lines = stderr.splitlines()
    header = next(line for line in lines if "debit incl. fees" in line)
    names = [c.strip() for c in header.strip("┃ ").split("┃")]
    found = next(line for line in lines if line.startswith(f"│ {currency}"))
    return dict(zip(names, (c.strip() for c in found.strip("│ ").split("│")), strict=True))


def number(text: str) -> Decimal:
    return Decimal(text.replace(",", "") or "0")


def test_dry_run_totals_are_over_the_quoted_rows_only(service: Any, tmp_path: Path) -> None:
    paid = write_sheet(tmp_path / "oct.xlsx", [row(1)])
    assert batchpay("run", str(paid), "--out", str(tmp_path / "oct-r.xlsx"),
                    "--wait", "5").exit_code == 0
    repeat = row(1, payout_ref="NOV-1")  # the same account and amount: HELD as a repeat
    sheet = write_sheet(tmp_path / "nov.xlsx", [repeat, row(2), row(3),
                                                row(4, bank_name=None)])
    out = tmp_path / "dry.xlsx"
    dry = batchpay("run", str(sheet), "--dry-run", "--skip-invalid", "--out", str(out),
                   env=WIDE)
    cells = by_ref(out)
    assert cells["NOV-1"]["status"] == "HELD", dry
    line = money_line(dry.stderr)
    quoted = [cells["T-00002"], cells["T-00003"]]
    assert line["quoted"] == "2" and line["left out"] == "1 held, 1 invalid", line
    assert number(line["amount"]) == sum(Decimal(str(r["amount"])) for r in quoted)
    assert number(line["fees"]) == sum(Decimal(str(r["fee"])) for r in quoted)
    assert number(line["debit incl. fees"]) == number(line["amount"]) + number(line["fees"])

    run = batchpay("run", str(sheet), "--skip-invalid", "--out", str(tmp_path / "run.xlsx"),
                   "--wait", "5", env=WIDE)
    line = money_line(run.stderr)
    assert line["sent"] == "2" and line["left out"] == "1 held, 1 invalid", line
    assert number(line["debit incl. fees"]) == number(line["amount"]) + number(line["fees"])
