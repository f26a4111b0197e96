"""A sheet whose file name makes the results workbook's name longer than the file system
takes is refused before anything is sent, not paid and then left without its results."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.e2e import batchpay, sandbox_payouts
from tests.support.sheets import rows, write_sheet


def long_stem(size: int) -> str:
    """A file stem of `size` bytes in UTF-8, Chinese as operators name their sheets. A
    230-byte stem is a legal sheet name (255 bytes at most with .xlsx); with
    "-results-<run id>.xlsx" it is not."""
    chinese = "十一月供应商付款" * 4  # 32 characters, 96 bytes
    return chinese + "x" * (size - len(chinese.encode()))


@pytest.fixture
def service(cli_sandbox: Any) -> Any:
    return cli_sandbox(settle_seconds=0.05)


@pytest.mark.parametrize("command", [["run"], ["run", "--dry-run"]])
def test_a_results_name_too_long_is_refused_before_anything_is_sent(
        service: Any, tmp_path: Path, command: list[str]) -> None:
    sheet = write_sheet(tmp_path / f"{long_stem(230)}.xlsx", rows(3))
    result = batchpay(*command, str(sheet), "--wait", "1")
    assert result.exit_code == 2, result
    assert "is too long" in result.stderr and "--out" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
    assert sandbox_payouts(service.url) == []
    assert [p.name for p in tmp_path.iterdir() if "results" in p.name] == []


def test_with_out_the_same_sheet_is_paid(service: Any, tmp_path: Path) -> None:
    sheet = write_sheet(tmp_path / f"{long_stem(230)}.xlsx", rows(3))
    result = batchpay("run", str(sheet), "--wait", "2", "--out", str(tmp_path / "r.xlsx"))
    assert result.exit_code == 0, result
    assert len(sandbox_payouts(service.url)) == 3


def test_an_out_name_too_long_is_refused(service: Any, tmp_path: Path) -> None:
    sheet = write_sheet(tmp_path / "nov.xlsx", rows(2))
    out = tmp_path / f"{long_stem(250)}.xlsx"  # fits; its partial file does not
    result = batchpay("run", str(sheet), "--wait", "1", "--out", str(out))
    assert result.exit_code == 2 and "is too long" in result.stderr, result
    assert sandbox_payouts(service.url) == []


def test_a_report_name_too_long_is_refused(tmp_path: Path) -> None:
    sheet = write_sheet(tmp_path / "nov.xlsx", rows(2))
    report = tmp_path / f"{long_stem(252)}.xlsx"
    result = batchpay("validate", str(sheet), "--no-bank-check", "--report", str(report))
    assert result.exit_code == 2 and "is too long" in result.stderr, result
