"""A dry run's workbook is not named as results; the template's own example bank name is one
the service's directory lists (so it raises no bank-name warning)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from batchpay.sheet.columns import COLUMNS_BY_NAME
from tests.support.e2e import batchpay, results
from tests.support.sheets import row, write_sheet


@pytest.fixture
def service(cli_sandbox: Any) -> Any:
    return cli_sandbox(settle_seconds=0.05)


def test_a_dry_runs_default_name_is_not_results(service: Any, tmp_path: Path) -> None:
    sheet = write_sheet(tmp_path / "nov.xlsx", [row(1)])
    dry = batchpay("run", str(sheet), "--dry-run")
    assert dry.exit_code == 0, dry
    written = [p.name for p in tmp_path.glob("nov-*.xlsx")]
    assert len(written) == 1 and "-dry-run-" in written[0] and "-results-" not in written[0]
    paid = batchpay("run", str(sheet), "--wait", "2")
    assert any("-results-" in p.name for p in tmp_path.glob("nov-*.xlsx")), paid


def test_the_templates_example_bank_name_raises_no_warning(service: Any,
                                                           tmp_path: Path) -> None:
    example = COLUMNS_BY_NAME["bank_name"].example
    sheet = write_sheet(tmp_path / "nov.xlsx", [row(1, bank_name=example)])
    report = tmp_path / "report.xlsx"
    checked = batchpay("validate", str(sheet), "--report", str(report))
    assert checked.exit_code == 0, checked
    assert "Warnings" not in checked.stderr
    assert not results(report)[0].get("warning")


def test_payee_changes_carry_one_row_number_the_sheets(service: Any, tmp_path: Path) -> None:
    import json

    sheet = write_sheet(tmp_path / "nov.xlsx", [row(1), row(2)])
    paid = batchpay("run", str(sheet), "--json", "--out", str(tmp_path / "r.xlsx"),
                    "--wait", "2")
    changes = json.loads(paid.stdout)["payee_changes"]
    assert [c["row"] for c in changes] == [2, 3]
    assert all("seq" not in c for c in changes)
