"""A `batchpay.toml` that came with the current folder sets only what it is allowed to (a few
settings freely, the controls only stricter than the user's own value), the environment
cannot name another journal than the user's file, and a number out of range stops the run
before it starts. Each attack is tried on the sandbox over real HTTP, with the payouts
counted there: none of them pays anything, and a folder's `base_url` never receives the
user's key. Every setting of the settings model is classified for a folder's file, so a
setting added later cannot slip through unclassified."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from batchpay.journal.store import Journal
from batchpay.settings.model import TABLES, Settings, setting_names
from batchpay.settings.rules import FROM_A_FOLDER
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
                      "approvers_file = \"my-approvers\"\n", False, "may set: approvers_file."),
    "a fresh journal": ("", "journal = \"fresh.sqlite3\"\n", True, "may set: journal."),
    "no repeat window": ("repeat_window_days = 45\n", "repeat_window_days = 0\n", True,
                         "repeat_window_days = 0 (yours: 45)"),
    "new payees unheld": ("hold_new_payees = true\n", "hold_new_payees = false\n", False,
                          "hold_new_payees = false (yours: true)"),
    # a change confirmed by the operator alone would be paid
    "maker confirms alone": ("payee_confirmed_by_other = true\n",
                             "payee_confirmed_by_other = false\n", False,
                             "payee_confirmed_by_other = false (yours: true)"),
    # with the journal lost, the service's list read one page only: paid again
    "one page of the list": ("", "sync_max_pages = 1\n", True,
                             "sync_max_pages = 1 (yours: 200)"),
    # a request proven "never received" before it could have been committed
    "short answers": ("", "read_timeout = 1\n", True, "read_timeout = 1.0 (yours: 30.0)"),
    "another list": ("", "[paths]\ntransactions = \"/v1/transaction/none\"\n", True,
                     "may set: [paths]."),
    "the real service as the sandbox": ("", "[headers]\nsandbox = \"Content-Type\"\n", True,
                                        "may set: [headers]."),
    "more retries": ("", "retry_attempts = 100\n", True, "may set: retry_attempts."),
    "bigger sheets": ("", "max_file_mb = 5000\n", False, "max_file_mb = 5000.0 (yours: 50.0)"),
    "more cells": ("", "max_cells = 100000000\n", False,
                   "max_cells = 100000000 (yours: 10000000)"),
    "weaker signatures": ('signature_algorithms = ["sha512"]\n',
                          'signature_algorithms = ["sha256"]\n', False,
                          "signature_algorithms = [sha256] (yours: [sha512])"),
    "webhooks from the network": ("", 'webhook_secret = "whsec-the-folder-knows-it"\n'
                                  'listen_host = "0.0.0.0"\n', False,
                                  "may set: listen_host, webhook_secret."),
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
    assert f"The settings file {planted} in the current folder " in outcome.stderr
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


def test_a_listener_is_not_opened_to_the_network_by_a_folder_file(
        service: Any, tmp_path: Path) -> None:
    """The folder's secret and address would let whoever wrote the file post FAILED events
    from the network: `listen` refuses before binding anything."""
    user_settings(tmp_path, "")
    folder_settings('webhook_secret = "whsec-the-folder-knows-it"\nlisten_host = "0.0.0.0"\n')
    outcome = batchpay("listen", "--port", "0")
    assert outcome.exit_code == 2, outcome
    assert "may set: listen_host, webhook_secret." in outcome.stderr
    assert "Listening" not in outcome.stderr and "whsec-the-folder" not in outcome.stderr


def test_a_folder_base_url_never_receives_the_users_key(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The key in the environment, no settings file of the user's, and a folder file that
    names a service on this machine: `batchpay banks` stops, and a catcher listening there
    sees no request at all (on the old rule it received X-API-KEY with the user's key)."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    from batchpay.serving import ServerThread

    caught: list[dict[str, str]] = []

    async def catch(request: Request) -> JSONResponse:
        caught.append(dict(request.headers))
        return JSONResponse({"status": "success", "message": "ok", "data": []})

    catcher = ServerThread(Starlette(routes=[Route("/{path:path}", catch,
                                                   methods=["GET", "POST"])]),
                           what="catcher").start()
    key = "live-key-of-the-user-0c9e"
    try:
        monkeypatch.delenv("BATCHPAY_BASE_URL", raising=False)
        monkeypatch.delenv("BATCHPAY_JOURNAL", raising=False)
        monkeypatch.setenv("BATCHPAY_API_KEY", key)
        monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))  # no file of yours
        (tmp_path / "work").mkdir()
        monkeypatch.chdir(tmp_path / "work")
        folder_settings(f'base_url = "{catcher.url}"\n')
        outcome = batchpay("banks", "--country", "NG", "--currency", "NGN")
        assert outcome.exit_code == 2, outcome
        assert "may set: base_url." in outcome.stderr and key not in outcome.stderr
        # the catcher is reachable: the same request from a trusted place does arrive
        import httpx

        assert httpx.get(catcher.url + "/health", timeout=10).status_code == 200
    finally:
        catcher.stop()
    assert [h for h in caught if key in h.values()] == []
    assert len(caught) == 1  # only the test's own health check


def test_every_setting_is_classified_for_a_folder_file() -> None:
    """Read from the settings model itself: a setting added to Settings and not listed in
    settings.rules.FROM_A_FOLDER (free, tighten-only with its rule, or the user's only)
    fails here, so it cannot be loosened by a folder's file unnoticed."""
    names = {f.name for f in dataclasses.fields(Settings)} & setting_names()
    unclassified = sorted(names - set(FROM_A_FOLDER))
    assert unclassified == [], f"classify these in settings.rules.FROM_A_FOLDER: {unclassified}"
    assert set(FROM_A_FOLDER) <= names, set(FROM_A_FOLDER) - names  # no stale names
    for name, rule in FROM_A_FOLDER.items():
        assert rule.kind in ("free", "tighten", "user"), name
        assert (rule.weaker is not None) == (rule.kind == "tighten"), name


def test_the_readme_lists_what_a_folder_file_may_set() -> None:
    """The README's list of what a folder's file may set is the classification's."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    section = readme.split("**What a settings file in the current folder may set.**", 1)[1]
    lines = section.split("\n\n", 1)[0].strip().splitlines()
    listed = {"free": next(line for line in lines if line.startswith("- Freely:")),
              "tighten": next(line for line in lines if line.startswith("- Only stricter")),
              "user": next(line for line in lines if line.startswith("- Nothing else"))}
    for name, rule in FROM_A_FOLDER.items():
        shown = f"`[{name}]`" if name in TABLES else f"`{name}`"
        where = [kind for kind, line in listed.items() if shown in line]
        assert where == [rule.kind], f"README lists {name} ({rule.kind}) under {where}"
