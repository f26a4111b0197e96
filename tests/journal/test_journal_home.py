"""The journal does not depend on the current folder: one per user and per service in the
user data folder, named on screen and in the workbook; a journal left in ./.batchpay/ is
still found; reading commands never create one; an empty sheet is an error."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

import openpyxl
import pytest

from batchpay.settings.model import default_journal, service_folder
from tests.support.e2e import Outcome, batchpay, results, sandbox_payouts, sandbox_stats
from tests.support.sheets import rows, write_grid, write_sheet


@pytest.fixture
def service(cli_sandbox: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """A sandbox the CLI points at, with no journal chosen: the default one is used."""
    running = cli_sandbox(settle_seconds=0.1)
    monkeypatch.delenv("BATCHPAY_JOURNAL")
    return running


def folder(tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / name
    path.mkdir(exist_ok=True)
    monkeypatch.chdir(path)
    return path


def run_sheet_values(path: Path) -> list[Any]:
    wb = openpyxl.load_workbook(path, read_only=True)
    try:
        return [cell for row in wb["Run"].iter_rows(values_only=True) for cell in row]
    finally:
        wb.close()


def from_two_folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, count: int,
                     wait: str) -> tuple[Outcome, Outcome]:
    """The same sheet run on monday from one folder, on tuesday from another; the results
    workbooks are monday.xlsx and tuesday.xlsx in tmp_path."""
    sheet = write_sheet(tmp_path / "nov.xlsx", rows(count))
    outcomes = []
    for day in ("monday", "tuesday"):
        folder(tmp_path, day, monkeypatch)
        outcomes.append(batchpay("run", str(sheet), "--wait", wait,
                                 "--out", str(tmp_path / f"{day}.xlsx")))
    assert all(o.exit_code == 0 for o in outcomes), outcomes
    return outcomes[0], outcomes[1]


def test_the_same_sheet_from_two_folders_pays_each_row_once(
        service: Any, tmp_path: Path, data_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first, again = from_two_folders(tmp_path, monkeypatch, 4, wait="5")
    assert len(sandbox_payouts(service.url)) == 4  # not 8
    assert "Nothing to send" in again.stderr
    journal = default_journal(service.url)
    assert journal.is_absolute() and journal.is_file()
    assert journal.is_relative_to(data_home / "batchpay" / "journals")
    for outcome in (first, again):
        assert f"Journal: {journal}" in outcome.stderr
    assert not (tmp_path / "monday" / ".batchpay").exists()
    assert str(journal) in run_sheet_values(tmp_path / "tuesday.xlsx")


def embedded_payouts(data_home: Path) -> int:
    state = data_home / "batchpay" / "journals" / "embedded" / "sandbox-state.sqlite3"
    with sqlite3.connect(state) as db:
        return int(db.execute("SELECT COUNT(*) FROM payout").fetchone()[0])


def test_on_the_embedded_sandbox_another_folder_sends_nothing(
        tmp_path: Path, data_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("BATCHPAY_BASE_URL", "BATCHPAY_API_KEY", "BATCHPAY_JOURNAL"):
        monkeypatch.delenv(var, raising=False)
    first, again = from_two_folders(tmp_path, monkeypatch, 3, wait="0")
    assert "Paying" in first.stderr and "Nothing to send" in again.stderr
    assert embedded_payouts(data_home) == 3
    journal = data_home / "batchpay" / "journals" / "embedded" / "journal.sqlite3"
    assert f"Journal: {journal}" in again.stderr
    assert [r["reference_number"] for r in results(tmp_path / "monday.xlsx")] == \
        [r["reference_number"] for r in results(tmp_path / "tuesday.xlsx")]


def test_a_journal_left_in_dot_batchpay_is_found_named_and_used(
        service: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    work = folder(tmp_path, "work", monkeypatch)
    sheet = write_sheet(work / "nov.xlsx", rows(2))
    # what an older batchpay did: the journal in ./.batchpay/ of the current folder
    legacy = work / ".batchpay" / "journal.sqlite3"
    monkeypatch.setenv("BATCHPAY_JOURNAL", str(legacy))
    assert batchpay("run", str(sheet), "--wait", "0").exit_code == 0
    monkeypatch.delenv("BATCHPAY_JOURNAL")
    again = batchpay("run", str(sheet), "--wait", "0")
    assert again.exit_code == 0, again
    assert len(sandbox_payouts(service.url)) == 2
    assert "Nothing to send" in again.stderr
    assert f"Journal: {legacy}" in again.stderr
    assert "move .batchpay/* to" in again.stderr
    assert f"BATCHPAY_JOURNAL={legacy}" in again.stderr
    assert not default_journal(service.url).exists()
    config = batchpay("config")
    assert f"journal                   {legacy}" in config.stdout
    assert "found in ./.batchpay/" in config.stderr


@pytest.mark.parametrize("command", [["sync"], ["report", "--out", "r.xlsx"], ["verify"],
                                     ["runs"]])
def test_reading_commands_without_a_journal_say_so_and_create_none(
        service: Any, command: list[str]) -> None:
    outcome = batchpay(*command)
    assert outcome.exit_code == 2, outcome
    journal = default_journal(service.url)
    assert f"No journal at {journal}" in outcome.stderr
    assert not journal.exists() and not journal.parent.exists()


@pytest.mark.parametrize("data", [[], [[None] * 3, ["", " ", None]]],
                         ids=["headers-only", "blank-rows"])
def test_run_of_a_sheet_without_payout_rows_is_an_error(
        service: Any, tmp_path: Path, data: list[list[Any]]) -> None:
    sheet = write_grid(tmp_path / "empty.xlsx", ["payout_ref", "recipient_type", "amount"], data)
    outcome = batchpay("run", str(sheet))
    assert outcome.exit_code == 2, outcome
    assert "no payout rows" in outcome.stderr
    assert "already in the journal" not in outcome.stderr
    assert sandbox_stats(service.url)["requests"] == {}


def test_a_dry_run_of_a_fully_paid_sheet_is_fine(service: Any, tmp_path: Path) -> None:
    sheet = write_sheet(tmp_path / "nov.xlsx", rows(2))
    assert batchpay("run", str(sheet), "--wait", "5").exit_code == 0
    dry = batchpay("run", str(sheet), "--dry-run", "--out", str(tmp_path / "dry.xlsx"))
    assert dry.exit_code == 0, dry
    assert {r["status"] for r in results(tmp_path / "dry.xlsx")} <= {"COMPLETED", "PENDING",
                                                                        "PROCESSING"}


def test_a_relative_journal_is_shown_absolute(service: Any, tmp_path: Path) -> None:
    sheet = write_sheet(tmp_path / "nov.xlsx", rows(1))
    outcome = batchpay("run", str(sheet), "--journal", "mine.sqlite3", "--wait", "0",
                       "--out", str(tmp_path / "r.xlsx"))
    assert outcome.exit_code == 0, outcome
    assert f"Journal: {Path.cwd() / 'mine.sqlite3'}" in outcome.stderr
    assert str(Path.cwd() / "mine.sqlite3") in run_sheet_values(tmp_path / "r.xlsx")


def test_every_service_has_its_own_readable_journal_folder() -> None:
    assert service_folder(None) == "embedded"
    name = service_folder("https://api.pay.example.com/v1/")
    assert name.startswith("api.pay.example.com-v1-") and len(name.rsplit("-", 1)[1]) == 8
    assert service_folder("https://api.pay.example.com/v1") == name
    assert service_folder("https://api.pay.example.com/v2") != name
    assert os.sep not in name
