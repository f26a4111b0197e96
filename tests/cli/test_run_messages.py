"""What a run says while and after it waits: the waiting line, PENDING rows sent to
`batchpay sync`, and a FAILED row's error that says what to do."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.support.e2e import batchpay, by_ref
from tests.support.sheets import row, rows, write_sheet


def test_the_wait_is_announced_and_a_failed_row_says_what_to_do(
        cli_sandbox: Any, tmp_path: Path) -> None:
    cli_sandbox(settle_seconds=0.05)
    sheet = write_sheet(tmp_path / "nov.xlsx", [*rows(1), row(2, remark="fail")])
    out = tmp_path / "r.xlsx"
    result = batchpay("run", str(sheet), "--wait", "10", "--out", str(out))
    assert result.exit_code == 1, result
    assert "Waiting up to" in result.stderr and "Ctrl-C is safe" in result.stderr
    failed = by_ref(out)["T-00002"]
    assert failed["status"] in ("FAILED", "REFUNDED")
    assert "check the recipient's name and account" in failed["error"]
    assert "batchpay rerun" in failed["error"]
    assert by_ref(out)["T-00001"]["error"] in (None, "")


def test_rows_left_pending_send_the_operator_to_sync(cli_sandbox: Any, tmp_path: Path) -> None:
    cli_sandbox(settle_seconds=30)
    sheet = write_sheet(tmp_path / "nov.xlsx", rows(2))
    result = batchpay("run", str(sheet), "--wait", "0", "--out", str(tmp_path / "r.xlsx"))
    assert result.exit_code == 0, result
    assert "2 row(s) are PENDING or PROCESSING" in result.stderr
    assert "batchpay sync" in result.stderr
    assert "Waiting up to" not in result.stderr  # --wait 0: no wait to announce


def test_runs_is_readable_in_80_columns(cli_sandbox: Any, tmp_path: Path,
                                        monkeypatch: Any) -> None:
    from rich.console import Console

    from batchpay import display

    cli_sandbox(settle_seconds=0.05)
    sheet = write_sheet(tmp_path / "a-long-sheet-name-for-november-payouts.xlsx", rows(1))
    assert batchpay("run", str(sheet), "--wait", "2").exit_code == 0
    monkeypatch.setattr(display, "stdout_console",
                        lambda: Console(width=80, no_color=True))
    listed = batchpay("runs")
    assert listed.exit_code == 0, listed
    lines = listed.stdout.splitlines()
    assert all(len(line) <= 80 for line in lines), lines
    assert any("a-long-sheet-name-for-november-payouts.xlsx: ok" in line for line in lines)
    assert any(line.strip() == "COMPLETED 1" for line in lines)


def test_sandbox_and_dry_run_workbooks_say_so_first(cli_sandbox: Any, tmp_path: Path) -> None:
    import openpyxl

    cli_sandbox(settle_seconds=0.05)
    sheet = write_sheet(tmp_path / "nov.xlsx", rows(2))
    assert batchpay("run", str(sheet), "--dry-run", "--out", str(tmp_path / "d.xlsx")).exit_code == 0
    book = openpyxl.load_workbook(tmp_path / "d.xlsx")
    first = book["Summary"]["A1"].value
    assert "DRY RUN: nothing was paid" in first and "SANDBOX: no real money moved" in first
    assert "DRY RUN" in book["Results"].oddHeader.left.text
    assert batchpay("run", str(sheet), "--wait", "2", "--out", str(tmp_path / "r.xlsx")).exit_code == 0
    paid = openpyxl.load_workbook(tmp_path / "r.xlsx")["Summary"]["A1"].value
    assert paid == "SANDBOX: no real money moved"
