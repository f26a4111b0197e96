"""A `batchpay.toml` that came with the current folder cannot loosen the user's controls, the
environment cannot name another journal than the user's file, and a number out of range
stops the run before it starts. Each attack is tried on the sandbox over real HTTP, with
the payouts counted there: none of them pays anything."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from batchpay.journal.store import Journal
from tests.support.e2e import Outcome, batchpay, by_ref, sandbox_payouts
from tests.support.sheets import rows, write_sheet


@pytest.fixture
def service(sandbox_factory: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The sandbox named in the environment; the default journal of that service (none in the
    environment); a user config folder; a working folder as the current one."""
    running = sandbox_factory(settle_seconds=0.05, state_path=tmp_path / "sandbox.sqlite3")
    monkeypatch.setenv("BATCHPAY_BASE_URL", running.url)
    monkeypatch.setenv("BATCHPAY_API_KEY", running.api_key)
    monkeypatch.delenv("BATCHPAY_JOURNAL", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    return running


def user_settings(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config" / "batchpay" / "batchpay.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def folder_settings(text: str) -> Path:
    path = Path.cwd() / "batchpay.toml"
    path.write_text(text, encoding="utf-8")
    return path


def month(tmp_path: Path, name: str, prefix: str, count: int = 4) -> Path:
    """The same payees and amounts each month, under that month's payout_refs."""
    sheet = rows(count)
    for n, values in enumerate(sheet, start=1):
        values["payout_ref"] = f"{prefix}-{n:03d}"
    return write_sheet(tmp_path / name, sheet)


def pay(sheet: Path, out: Path) -> Outcome:
    return batchpay("run", str(sheet), "--wait", "5", "--out", str(out))


# (the user's own settings, the folder's file, whether October was paid first, what is named)
ATTACKS = {
    "approval turned off": ("require_approval = true\napprovers_file = \"approvers\"\n",
                            "require_approval = false\n", False, "require_approval = false"),
    "one approval of two": ("require_approval = true\napprovals_required = 2\n"
                            "approvers_file = \"approvers\"\n", "approvals_required = 1\n",
                            False, "approvals_required = 1 (yours: 2)"),
    "own approvers": ("require_approval = true\napprovers_file = \"approvers\"\n",
                      "approvers_file = \"my-approvers\"\n", False, "approvers_file = "),
    "a fresh journal": ("", "journal = \"fresh.sqlite3\"\n", True, "journal = "),
    "no repeat window": ("repeat_window_days = 45\n", "repeat_window_days = 0\n", True,
                         "repeat_window_days = 0 (yours: 45)"),
    "new payees unheld": ("hold_new_payees = true\n", "hold_new_payees = false\n", False,
                          "hold_new_payees = false (yours: true)"),
}


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_a_folder_file_that_loosens_a_control_pays_nothing(
        service: Any, tmp_path: Path, attack: str) -> None:
    mine, theirs, paid_first, named = ATTACKS[attack]
    user_settings(tmp_path, mine)
    if paid_first:  # October paid with the user's own settings
        assert pay(month(tmp_path, "october.xlsx", "OCT"), tmp_path / "oct.xlsx").exit_code == 0
    before = len(sandbox_payouts(service.url))
    planted = folder_settings(theirs)
    outcome = pay(month(tmp_path, "november.xlsx", "NOV"), tmp_path / "nov.xlsx")
    assert outcome.exit_code == 2, outcome
    assert f"The settings file {planted} in the current folder may only tighten" in outcome.stderr
    assert named in outcome.stderr
    assert len(sandbox_payouts(service.url)) == before  # not one payout more
    assert not (tmp_path / "nov.xlsx").exists()


def test_the_environment_cannot_point_at_a_fresh_journal_against_the_users_file(
        service: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    user_settings(tmp_path, 'journal = "books/journal.sqlite3"\n')
    assert pay(month(tmp_path, "october.xlsx", "OCT"), tmp_path / "oct.xlsx").exit_code == 0
    before = len(sandbox_payouts(service.url))
    monkeypatch.setenv("BATCHPAY_JOURNAL", str(tmp_path / "fresh.sqlite3"))
    outcome = pay(month(tmp_path, "november.xlsx", "NOV"), tmp_path / "nov.xlsx")
    assert outcome.exit_code == 2, outcome
    assert "names another journal than your settings file" in outcome.stderr
    assert len(sandbox_payouts(service.url)) == before


def test_a_folder_file_that_tightens_a_control_holds_the_rows(
        service: Any, tmp_path: Path) -> None:
    user = user_settings(tmp_path, "concurrency = 2\n")
    here = folder_settings("hold_new_payees = true\n")
    outcome = pay(month(tmp_path, "november.xlsx", "NOV"), tmp_path / "nov.xlsx")
    assert outcome.exit_code == 1, outcome
    assert {r["status"] for r in by_ref(tmp_path / "nov.xlsx").values()} == {"HELD"}
    assert sandbox_payouts(service.url) == []
    # the run names every settings file it merged, in order, and the environment
    assert f"Settings: {user} + {here} + environment (BATCHPAY_BASE_URL, BATCHPAY_API_KEY)" \
        in outcome.stderr


@pytest.mark.parametrize("text", ["concurrency = 0\n", "concurrency = -3\n"])
def test_zero_or_negative_workers_are_refused_before_the_run(
        service: Any, tmp_path: Path, text: str) -> None:
    path = user_settings(tmp_path, text)
    outcome = pay(month(tmp_path, "november.xlsx", "NOV", count=25), tmp_path / "nov.xlsx")
    assert outcome.exit_code == 2, outcome
    value = text.split("= ")[1].strip()
    assert f"Setting concurrency = {value} in {path} is out of range." in outcome.stderr
    assert "concurrency takes a whole number from 1 to 32" in outcome.stderr
    assert sandbox_payouts(service.url) == [] and not (tmp_path / "nov.xlsx").exists()


def test_a_journal_that_came_with_the_folder_is_not_used_instead_of_the_users(
        service: Any, tmp_path: Path) -> None:
    assert pay(month(tmp_path, "october.xlsx", "OCT"), tmp_path / "oct.xlsx").exit_code == 0
    before = len(sandbox_payouts(service.url))
    planted = Path.cwd() / ".batchpay" / "journal.sqlite3"  # an empty journal, old-style
    planted.parent.mkdir()
    with Journal(planted):
        pass
    outcome = pay(month(tmp_path, "october-again.xlsx", "OCT"), tmp_path / "again.xlsx")
    assert outcome.exit_code == 2, outcome
    assert "Two journals for this service" in outcome.stderr and str(planted) in outcome.stderr
    assert len(sandbox_payouts(service.url)) == before
