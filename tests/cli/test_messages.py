"""Every error an operator can cause: one or two lines (what happened, what to do), the right
exit code, never a traceback unless --debug asks for it. Payouts are counted at the sandbox."""

from __future__ import annotations

import errno
import socket
import sqlite3
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import httpx
import pytest
from openpyxl.utils.exceptions import InvalidFileException

from batchpay.journal.store import Journal
from tests.support.e2e import Outcome, batchpay, own_settings, sandbox_payouts, sandbox_stats
from tests.support.sheets import HEADERS, rows, write_sheet


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working folder with no settings from outside, wide tables, fast give-up on retries."""
    for var in ("BATCHPAY_BASE_URL", "BATCHPAY_API_KEY", "BATCHPAY_JOURNAL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("COLUMNS", "250")
    own_settings("retry_attempts = 1\nretry_seconds = 1\nconnect_timeout = 2\n")
    return tmp_path


@pytest.fixture
def service(sandbox_factory: Any, folder: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    running = sandbox_factory(settle_seconds=0.2, state_path=folder / "sandbox.sqlite3")
    monkeypatch.setenv("BATCHPAY_BASE_URL", running.url)
    monkeypatch.setenv("BATCHPAY_API_KEY", running.api_key)
    return running


@pytest.fixture
def sheet(folder: Path) -> Path:
    return write_sheet(folder / "nov.xlsx", rows(3))


def journal_path(folder: Path) -> Path:
    return folder / ".batchpay" / "journal.sqlite3"


def assert_message(result: Outcome, code: int, *fragments: str) -> None:
    """The exit code, the fragments in the error lines, and no traceback anywhere."""
    assert result.exit_code == code, result
    assert "Traceback" not in result.stdout + result.stderr, result
    lines = result.stderr.splitlines(keepends=True)
    starts = [i for i, line in enumerate(lines) if line.startswith("Error: ")]
    assert starts, result
    error_at = len("".join(lines[:starts[-1]]))
    error_lines = result.stderr[error_at:].strip().splitlines()
    assert 1 <= len(error_lines) <= 2, result  # what happened, what to do
    for fragment in fragments:
        assert fragment in result.stderr[error_at:], (fragment, result)
    assert "This is a bug" not in result.stderr, result


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# --- the sheet --------------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["validate", "run"])
def test_missing_file(folder: Path, command: str) -> None:
    result = batchpay(command, "nowhere.xlsx")
    assert_message(result, 2, "File not found: nowhere.xlsx", "Check the name and the folder")


@pytest.mark.parametrize("command", ["validate", "run"])
def test_wrong_sheet_name(sheet: Path, command: str) -> None:
    result = batchpay(command, str(sheet), "--sheet", "December")
    assert_message(result, 2, "has no sheet named 'December'", "Its sheets are: 'Payouts'")


def test_a_missing_required_column(folder: Path) -> None:
    path = write_sheet(folder / "cols.xlsx", rows(2), [h for h in HEADERS if h != "amount"])
    result = batchpay("validate", str(path))
    assert_message(result, 2, "has no column amount or target_amount (required)",
                   "Add the column")


def test_a_misspelt_required_column_is_named(folder: Path) -> None:
    headers = ["amout" if h == "amount" else h for h in HEADERS]
    data = [{("amout" if k == "amount" else k): v for k, v in r.items()} for r in rows(2)]
    result = batchpay("run", str(write_sheet(folder / "cols.xlsx", data, headers)))
    assert_message(result, 2, "has no column amount", "rename amout to amount")


@pytest.mark.parametrize("damage, fragment", [
    ("truncated", "nov.xlsx is damaged"),
    ("not a workbook", "nov.xlsx is not an Excel workbook"),
])
def test_a_damaged_workbook_is_named(folder: Path, damage: str, fragment: str) -> None:
    path = folder / "nov.xlsx"
    if damage == "truncated":
        whole = write_sheet(folder / "whole.xlsx", rows(3)).read_bytes()
        path.write_bytes(whole[: len(whole) // 2])
    else:
        with zipfile.ZipFile(path, "w") as archive:
            archive.writestr("notes.txt", "hello")
    assert_message(batchpay("validate", str(path)), 2, fragment)


# --- the service ------------------------------------------------------------------------------


def test_wrong_key_stops_the_run(service: Any, sheet: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BATCHPAY_API_KEY", "not-the-key")
    result = batchpay("run", str(sheet), "--yes")
    assert_message(result, 2, "Invalid API key", "Check BATCHPAY_API_KEY")
    assert "not-the-key" not in result.stdout + result.stderr
    assert sandbox_payouts(service.url) == []


def test_service_down(folder: Path, sheet: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BATCHPAY_BASE_URL", f"http://127.0.0.1:{closed_port()}")
    monkeypatch.setenv("BATCHPAY_API_KEY", "k")
    result = batchpay("run", str(sheet), "--yes")
    assert_message(result, 2, "Could not reach the payout service", "Nothing was sent",
                   "Check BATCHPAY_BASE_URL")


def test_service_down_for_banks(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BATCHPAY_BASE_URL", f"http://127.0.0.1:{closed_port()}")
    monkeypatch.setenv("BATCHPAY_API_KEY", "k")
    result = batchpay("banks", "--country", "CN", "--currency", "CNY")
    assert_message(result, 2, "Could not reach the payout service", "Check BATCHPAY_BASE_URL")


def test_a_base_url_without_a_key(folder: Path, sheet: Path,
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BATCHPAY_BASE_URL", "https://pay.example.com")
    assert_message(batchpay("run", str(sheet)), 2, "No API key for https://pay.example.com",
                   "Set BATCHPAY_API_KEY")


# --- the journal ------------------------------------------------------------------------------


def test_journal_locked_by_another_run(service: Any, folder: Path, sheet: Path) -> None:
    holder = Journal(journal_path(folder))
    holder.lock()
    try:
        result = batchpay("run", str(sheet), "--yes")
    finally:
        holder.close()
    assert_message(result, 2, "Another batchpay run is using the journal", "Wait for it")
    assert sandbox_payouts(service.url) == []
    assert sandbox_stats(service.url)["requests"] == {}  # not even a quote


def test_journal_of_another_service(service: Any, folder: Path, sheet: Path) -> None:
    with Journal(journal_path(folder)) as other:
        other.bind_service("https://other.example.com")
    result = batchpay("run", str(sheet), "--yes")
    assert_message(result, 2, "This journal records payouts of https://other.example.com",
                   "--journal or BATCHPAY_JOURNAL")
    assert sandbox_payouts(service.url) == []


def test_a_file_that_is_not_a_journal(folder: Path, sheet: Path) -> None:
    garbage = folder / "garbage.sqlite3"
    garbage.write_bytes(b"not a database" * 400)
    for args in (["run", str(sheet), "--journal", str(garbage)],
                 ["runs", "--journal", str(garbage)]):
        assert_message(batchpay(*args), 2, "Cannot open the journal", "Is it a batchpay journal?")


def test_no_journal_yet(folder: Path) -> None:
    assert_message(batchpay("runs"), 2, "No journal at", "Run `batchpay run SHEET` first")


@pytest.mark.parametrize("error", [
    OSError(errno.ENOSPC, "No space left on device"),
    sqlite3.OperationalError("database or disk is full"),
])
def test_disk_full_before_sending(service: Any, sheet: Path, monkeypatch: pytest.MonkeyPatch,
                                  error: Exception) -> None:
    def full(*args: Any, **kwargs: Any) -> None:
        raise error

    monkeypatch.setattr(Journal, "start_run", full)
    result = batchpay("run", str(sheet), "--yes")
    assert_message(result, 2, "The disk is full", "Free some space")
    assert sandbox_payouts(service.url) == []


def test_disk_full_after_paying_then_the_same_command_again(
        service: Any, folder: Path, sheet: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from batchpay.engine import runner

    real_render = runner.render_run

    def full(*args: Any, **kwargs: Any) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(runner, "render_run", full)
    out = folder / "out.xlsx"
    result = batchpay("run", str(sheet), "--out", str(out), "--wait", "3")
    # paid and journaled, only the workbook is missing: exit 1, the count and the way back
    assert_message(result, 1, "3 row(s) were sent and are in the journal",
                   "No space left on device", "batchpay report --run")
    assert len(sandbox_payouts(service.url)) == 3
    monkeypatch.setattr(runner, "render_run", real_render)
    again = batchpay("run", str(sheet), "--out", str(out), "--wait", "3")
    assert again.exit_code == 0, again  # what the hint promised
    assert len(sandbox_payouts(service.url)) == 3 and out.is_file()


# --- outputs and options ----------------------------------------------------------------------


@pytest.mark.parametrize("args", [
    ["run", "{sheet}", "--out", "{missing}/results.xlsx"],
    ["run", "{sheet}", "--dry-run", "--out", "{missing}/results.xlsx"],
    ["validate", "{sheet}", "--report", "{missing}/check.xlsx"],
    ["template", "--out", "{missing}/template.xlsx"],
])
def test_an_output_path_that_cannot_be_written(service: Any, folder: Path, sheet: Path,
                                               args: list[str]) -> None:
    given = [a.format(sheet=sheet, missing=folder / "no-such-folder") for a in args]
    result = batchpay(*given)
    assert result.exit_code == 2, result
    assert "does not exist: create it, or choose another path" in result.stderr
    assert "Traceback" not in result.stderr
    assert sandbox_stats(service.url)["requests"] == {}  # checked before anything was sent


@pytest.mark.parametrize("args, fragment", [
    (["--concurrency", "0"], "Invalid value for '--concurrency'"),
    (["--concurrency", "many"], "Invalid value for '--concurrency'"),
    (["--max-rps", "abc"], "Invalid value for '--max-rps'"),
    (["--wait", "-1"], "Invalid value for '--wait'"),
    (["--source-currency", "NAIRA"], "--source-currency NAIRA is not an ISO 4217 currency code"),
    (["--frobnicate"], "No such option"),
])
def test_bad_option_values(sheet: Path, args: list[str], fragment: str) -> None:
    result = batchpay("run", str(sheet), *args)
    assert result.exit_code == 2, result
    assert fragment in result.stderr
    assert "Traceback" not in result.stdout + result.stderr


def test_bad_sandbox_options(folder: Path) -> None:
    for args in (["--rate-limit", "lots"], ["--error-rate", "2"], ["--webhook-url", "ftp://x"]):
        result = batchpay("sandbox", *args)
        assert result.exit_code == 2 and "Invalid value" in result.stderr, result


# --- nothing from below escapes ---------------------------------------------------------------


@pytest.mark.parametrize("error, fragment", [
    (httpx.ReadError("connection reset"), "The connection to the payout service failed"),
    (httpx.RemoteProtocolError("peer closed"), "The connection to the payout service failed"),
    (sqlite3.OperationalError("database is locked"), "The journal could not be read or written"),
    (sqlite3.DatabaseError("database disk image is malformed"), "The journal could not be"),
    (zipfile.BadZipFile("Bad CRC-32"), "A workbook could not be read"),
    (InvalidFileException("not a workbook"), "A workbook could not be read"),
])
def test_no_lower_level_exception_escapes(sheet: Path, monkeypatch: pytest.MonkeyPatch,
                                          error: Exception, fragment: str) -> None:
    def broken(*args: Any, **kwargs: Any) -> None:
        raise error

    monkeypatch.setattr("batchpay.sheet.validate.read_sheet", broken)
    for command in ("validate", "run"):
        assert_message(batchpay(command, str(sheet)), 2, fragment)


def test_debug_shows_the_traceback(folder: Path) -> None:
    for args in (["validate", "nowhere.xlsx", "--debug"], ["--debug", "validate", "nowhere.xlsx"]):
        done = subprocess.run([sys.executable, "-m", "batchpay", *args], cwd=folder,
                              capture_output=True, text=True, timeout=60)
        assert done.returncode != 0
        assert "Traceback (most recent call last)" in done.stderr, done.stderr
        assert "InputError" in done.stderr
    quiet = subprocess.run([sys.executable, "-m", "batchpay", "validate", "nowhere.xlsx"],
                           cwd=folder, capture_output=True, text=True, timeout=60)
    assert quiet.returncode == 2 and "Traceback" not in quiet.stderr
