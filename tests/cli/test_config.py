"""Settings: the user's batchpay.toml merged with the current folder's (which sets only a few
settings, and the controls only stricter than the user's); the environment wins; the key only in a private file, and only ever shown as a
fingerprint; every number in its range."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from batchpay.cli import cli
from batchpay.files import fingerprint
from batchpay.settings.load import load_settings

KEY = "live-key-do-not-print-7f3a9c"
ENV_VARS = ("BATCHPAY_BASE_URL", "BATCHPAY_API_KEY", "BATCHPAY_WEBHOOK_SECRET", "BATCHPAY_JOURNAL")


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty working folder and an empty user config dir; no BATCHPAY_* variables."""
    for var in ENV_VARS:
        monkeypatch.delenv(var, raising=False)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    return tmp_path


def write_toml(path: Path, text: str, mode: int = 0o600) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    os.chmod(path, mode)
    return path


def user_file(home: Path) -> Path:
    return home / "xdg" / "batchpay" / "batchpay.toml"


def config(*args: str) -> object:
    return CliRunner().invoke(cli, ["config", *args])


def test_defaults_without_any_file(home: Path) -> None:
    settings = load_settings()
    assert settings.embedded and settings.api_key is None
    assert settings.source == "defaults"


def test_the_file_in_the_current_folder(home: Path) -> None:
    path = write_toml(Path.cwd() / "batchpay.toml",
                      'concurrency = 7\nmax_rps = 2\nwait_seconds = 90\nsync_max_pages = 300\n')
    settings = load_settings()
    assert settings.concurrency == 7 and settings.max_rps == 2.0
    assert settings.wait_seconds == 90.0 and settings.sync_max_pages == 300
    assert settings.source == str(path)


def test_the_file_in_the_user_config_dir(home: Path) -> None:
    path = write_toml(user_file(home), 'base_url = "https://user.example.com"\n'
                      f'api_key = "{KEY}"\n')
    settings = load_settings()
    assert settings.base_url == "https://user.example.com" and settings.api_key == KEY
    assert settings.source == str(path)


def test_the_files_merge_the_users_then_the_current_folders(home: Path) -> None:
    user = write_toml(user_file(home), 'base_url = "https://pay.example.com"\nconcurrency = 2\n'
                      'max_rps = 5\n[paths]\nquote = "/v9/quote"\n')
    here = write_toml(Path.cwd() / "batchpay.toml", 'concurrency = 6\nmax_rows = 5000\n')
    settings = load_settings()
    assert settings.base_url == "https://pay.example.com" and settings.max_rps == 5.0
    assert settings.concurrency == 6 and settings.max_rows == 5000  # the folder's wins
    assert settings.paths.quote == "/v9/quote" and settings.paths.payout == "/v2/payout"
    assert settings.source == f"{user} + {here}"


def test_the_environment_overrides_the_files(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_toml(user_file(home),
               'base_url = "https://file.example.com"\napi_key = "file-key"\nconcurrency = 3\n')
    monkeypatch.setenv("BATCHPAY_BASE_URL", "https://env.example.com")
    monkeypatch.setenv("BATCHPAY_API_KEY", KEY)
    monkeypatch.setenv("BATCHPAY_JOURNAL", "env.sqlite3")  # no journal in the user's file
    settings = load_settings()
    assert settings.base_url == "https://env.example.com"
    assert settings.api_key == KEY and settings.journal == Path.cwd() / "env.sqlite3"
    assert settings.concurrency == 3  # what the environment does not set comes from the file
    assert settings.source.endswith(
        "+ environment (BATCHPAY_BASE_URL, BATCHPAY_API_KEY, BATCHPAY_JOURNAL)")


@pytest.mark.parametrize("where", ["cwd", "user"])
def test_a_key_in_a_file_others_can_read_is_refused(home: Path, where: str) -> None:
    target = Path.cwd() / "batchpay.toml" if where == "cwd" else user_file(home)
    path = write_toml(target, f'api_key = "{KEY}"\n', mode=0o644)
    result = config()
    assert result.exit_code == 2, result.output
    assert "holds an API key but others can read it" in result.stderr
    assert f"chmod 600 {path}" in result.stderr
    assert KEY not in result.output
    assert "Traceback" not in result.output
    os.chmod(path, 0o600)
    # private now; a folder's file still may not hold a key (only your own settings do)
    assert config().exit_code == (0 if where == "user" else 2)


def test_a_readable_file_without_a_key_is_fine(home: Path) -> None:
    write_toml(Path.cwd() / "batchpay.toml", "concurrency = 2\n", mode=0o644)
    assert load_settings().concurrency == 2


@pytest.mark.parametrize("text, fragment", [
    ("concurency = 4\n", "Unknown setting(s): concurency (did you mean concurrency?)."),
    ("journl = \"x\"\nzzz = 1\n", "Unknown setting(s): journl (did you mean journal?), zzz."),
    ("[paths]\npayouts = \"/x\"\n", "wrong shape"),
    ('concurrency = "four"\n', "Setting concurrency = 'four' is not a valid whole number."),
    ("max_rps = true\n", "Setting max_rps = True is not a valid number."),
    ("base_url = 42\n", "Setting base_url = 42 is not a valid text."),
    ('base_url = "pay.example.com"\n', "base_url must start with https://"),
    ("concurrency = \n", "Cannot read settings file"),
])
def test_a_setting_batchpay_cannot_use_is_refused(home: Path, text: str, fragment: str) -> None:
    write_toml(user_file(home), text)
    result = CliRunner().invoke(cli, ["runs"])
    assert result.exit_code == 2, result.output
    assert fragment in result.stderr
    assert len(result.stderr.strip().splitlines()) <= 2  # what happened, what to do
    assert "Traceback" not in result.output
    shown = config()  # config shows the error beside everything else
    assert shown.exit_code == 2 and fragment in shown.stderr, shown.output
    assert "concurrency" in shown.stdout and "Traceback" not in shown.output


def test_config_with_an_unknown_name_shows_the_rest_of_the_file(home: Path) -> None:
    path = write_toml(user_file(home),
                      'base_url = "https://pay.example.com"\nconcurency = 7\nmax_rps = 2\n')
    result = config()
    assert result.exit_code == 2, result.output
    assert "concurency (did you mean concurrency?)" in result.stderr
    lines = dict(line.split(None, 1) for line in result.stdout.splitlines())
    assert lines["base_url"] == "https://pay.example.com" and lines["max_rps"] == "2.0"
    assert lines["concurrency"] == "4"
    assert f"{path}  (loaded)" in result.stderr


def test_config_names_the_files_searched_the_journal_and_how_to_go_live(
        home: Path, data_home: Path) -> None:
    write_toml(user_file(home), "concurrency = 2\n")
    result = config()
    assert result.exit_code == 0, result.output
    assert f"{Path.cwd() / 'batchpay.toml'}  (not found)" in result.stderr
    assert f"{user_file(home)}  (loaded)" in result.stderr
    journal = data_home / "batchpay" / "journals" / "embedded" / "journal.sqlite3"
    assert f"Journal: {journal}  (the default for this service" in result.stderr
    assert "set BATCHPAY_BASE_URL and BATCHPAY_API_KEY" in result.stderr
    lines = dict(line.split(None, 1) for line in result.stdout.splitlines())
    assert lines["journal"] == str(journal)


def test_a_relative_journal_in_a_file_is_relative_to_the_file(home: Path) -> None:
    write_toml(user_file(home), 'journal = "books/journal.sqlite3"\n')
    assert load_settings().journal == user_file(home).parent / "books" / "journal.sqlite3"


def test_config_prints_the_effective_settings_and_only_a_fingerprint(
        home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_toml(user_file(home),
                      f'base_url = "https://pay.example.com"\napi_key = "{KEY}"\n'
                      'webhook_secret = "whsec-also-secret"\nconcurrency = 6\n')
    monkeypatch.setenv("BATCHPAY_JOURNAL", "/srv/pay/journal.sqlite3")
    result = config()
    assert result.exit_code == 0, result.output
    lines = dict(line.split(None, 1) for line in result.stdout.splitlines())
    assert lines["base_url"] == "https://pay.example.com"
    assert lines["api_key"] == fingerprint(KEY) and lines["api_key"].startswith("sha256:")
    assert lines["webhook_secret"] == fingerprint("whsec-also-secret")
    assert lines["journal"] == "/srv/pay/journal.sqlite3"
    assert lines["concurrency"] == "6"
    assert lines["loaded_from"] == f"{path} + environment (BATCHPAY_JOURNAL)"
    assert KEY not in result.output and "whsec-also-secret" not in result.output
    assert KEY[:8] not in result.output


def test_config_without_settings_names_the_embedded_sandbox(home: Path) -> None:
    result = config()
    assert result.exit_code == 0
    assert "embedded sandbox" in result.stdout and "(not set)" in result.stdout


@pytest.mark.parametrize("mine, folder, named", [
    ("require_approval = true\n", "require_approval = false\n", "require_approval = false"),
    ("approvals_required = 2\n", "approvals_required = 1\n", "approvals_required = 1 (yours: 2)"),
    ("hold_new_payees = true\n", "hold_new_payees = false\n", "hold_new_payees = false"),
    ("payee_confirmed_by_other = true\n", "payee_confirmed_by_other = false\n",
     "payee_confirmed_by_other = false (yours: true)"),
    ("", "repeat_window_days = 0\n", "repeat_window_days = 0 (yours: 20)"),
    ("", "service_check_days = 0\n", "service_check_days = 0 (yours: 62)"),
    ("service_check_days = 90\n", "service_check_days = 62\n", "service_check_days = 62"),
    ("repeat_window_days = 60\n", "repeat_window_days = 45\n", "repeat_window_days = 45"),
    ("payee_change_hold_hours = 24\n", "payee_change_hold_hours = 0\n", "payee_change_hold"),
    ("", "plan_tolerance = 0.5\n", "plan_tolerance = 0.5 (yours: 0.02)"),
    ("", "plan_hours = 9000\n", "plan_hours = 9000"),
    ("", "sync_max_pages = 1\n", "sync_max_pages = 1 (yours: 200)"),
    ("", "read_timeout = 1\n", "read_timeout = 1.0 (yours: 30.0)"),
    ("", "max_file_mb = 500\n", "max_file_mb = 500.0 (yours: 50.0)"),
    ("max_cells = 1000\n", "max_cells = 2000\n", "max_cells = 2000 (yours: 1000)"),
    ('signature_algorithms = ["sha512"]\n', 'signature_algorithms = ["sha512", "sha256"]\n',
     "signature_algorithms = [sha512, sha256] (yours: [sha512])"),
])
def test_a_folder_file_that_loosens_a_control_is_refused(
        home: Path, mine: str, folder: str, named: str) -> None:
    write_toml(user_file(home), mine)
    here = write_toml(Path.cwd() / "batchpay.toml", folder)
    result = CliRunner().invoke(cli, ["runs"])
    assert result.exit_code == 2, result.output
    first, hint = result.stderr.strip().splitlines()
    assert f"The settings file {here} in the current folder may only tighten" in first
    assert named in first
    assert f"Take these lines out of {here}" in hint and str(user_file(home)) in hint
    shown = config()  # config names the error and still shows the user's own settings
    assert shown.exit_code == 2 and named in shown.stderr, shown.output
    lines = dict(line.split(None, 1) for line in shown.stdout.splitlines())
    assert lines["loaded_from"] in ("defaults", str(user_file(home)))
    assert f"{here}  (not used: see the error)" in shown.stderr


@pytest.mark.parametrize("mine, folder, named", [
    ('base_url = "https://pay.example.com"\n', 'base_url = "https://pay.example.com"\n',
     "base_url"),
    ("", 'base_url = "https://collect.example.net"\n', "base_url"),
    ("", 'approvers_file = "mine"\n', "approvers_file"),
    ("", 'require_approval = true\napprovers_file = "approvers"\n', "approvers_file"),
    ("", 'journal = "fresh.sqlite3"\n', "journal"),
    ("", '[paths]\ntransactions = "/v9/transaction"\n', "[paths]"),
    ("", '[headers]\nsandbox = "Server"\n', "[headers]"),
    ("", '[source_countries]\nNGN = "GH"\n', "[source_countries]"),
    ("", 'listen_host = "0.0.0.0"\nconcurrency = 2\n', "listen_host"),
    ("", "retry_attempts = 50\nretry_seconds = 900\n", "retry_attempts, retry_seconds"),
    ("", 'webhook_secret = "whsec-known-to-the-folder"\n', "webhook_secret"),
])
def test_a_folder_file_naming_a_setting_only_yours_may_set_is_refused(
        home: Path, mine: str, folder: str, named: str) -> None:
    write_toml(user_file(home), mine)
    here = write_toml(Path.cwd() / "batchpay.toml", folder)
    result = CliRunner().invoke(cli, ["runs"])
    assert result.exit_code == 2, result.output
    first, hint = result.stderr.strip().splitlines()
    assert (f"The settings file {here} in the current folder sets what only your own "
            f"settings may set: {named}.") in first
    assert f"Take these lines out of {here}" in hint and str(user_file(home)) in hint
    assert "whsec-known" not in result.output


def test_a_folder_file_may_tighten_every_control(home: Path) -> None:
    write_toml(user_file(home), 'approvers_file = "team"\nrepeat_window_days = 30\n')
    write_toml(Path.cwd() / "batchpay.toml",
               'require_approval = true\napprovals_required = 2\n'
               'hold_new_payees = true\nrepeat_window_days = 90\n'
               'payee_change_hold_hours = 12\nplan_hours = 24\nplan_tolerance = 0.01\n'
               'payee_confirmed_by_other = true\nsync_max_pages = 400\nread_timeout = 60\n'
               'service_check_days = 120\nmax_file_mb = 5\nmax_rows = 10\nmax_columns = 30\n'
               'max_cells = 300\nsignature_algorithms = ["sha512"]\nconcurrency = 2\n')
    settings = load_settings()
    assert settings.require_approval and settings.approvals_required == 2
    assert settings.approvers_file == user_file(home).parent / "team"
    assert settings.hold_new_payees and settings.repeat_window_days == 90
    assert (settings.plan_hours, settings.plan_tolerance, settings.concurrency) == (24, 0.01, 2)
    assert settings.payee_confirmed_by_other and settings.signature_algorithms == ("sha512",)
    assert (settings.sync_max_pages, settings.read_timeout, settings.service_check_days) == (
        400, 60.0, 120)
    assert (settings.max_file_mb, settings.max_rows, settings.max_columns,
            settings.max_cells) == (5.0, 10, 30, 300)


def test_the_environment_cannot_name_another_journal_than_the_users_file(
        home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_toml(user_file(home), 'journal = "books/journal.sqlite3"\n')
    mine = user_file(home).parent / "books" / "journal.sqlite3"
    monkeypatch.setenv("BATCHPAY_JOURNAL", str(mine))  # the same journal: fine
    assert load_settings().journal == mine
    monkeypatch.setenv("BATCHPAY_JOURNAL", str(home / "fresh.sqlite3"))
    result = CliRunner().invoke(cli, ["runs"])
    assert result.exit_code == 2, result.output
    assert f"BATCHPAY_JOURNAL={home / 'fresh.sqlite3'} names another journal" in result.stderr
    assert "Unset BATCHPAY_JOURNAL" in result.stderr
    # --journal still picks another journal for one command, in plain sight
    monkeypatch.delenv("BATCHPAY_JOURNAL")
    picked = CliRunner().invoke(cli, ["runs", "--journal", str(home / "other.sqlite3")])
    assert "No journal at" in picked.stderr and "names another journal" not in picked.output


@pytest.mark.parametrize("text, fragment", [
    ("concurrency = 0\n", "concurrency = 0 in {file} is out of range"),
    ("concurrency = -3\n", "concurrency = -3 in {file} is out of range"),
    ("concurrency = 33\n", "concurrency takes a whole number from 1 to 32 (default 4)"),
    ("max_rps = -1\n", "max_rps takes a number of 0 or more"),
    ("max_rps = nan\n", "max_rps = nan in {file} is not a finite number"),
    ("wait_seconds = inf\n", "wait_seconds = inf in {file} is not a finite number"),
    ("connect_timeout = 0\n", "connect_timeout takes a number above 0"),
    ("read_timeout = -1\n", "read_timeout = -1.0 in {file} is out of range"),
    ("retry_attempts = 0\n", "retry_attempts takes a whole number of 1 or more"),
    ("retry_seconds = -5\n", "retry_seconds = -5.0"),
    ("max_file_mb = 0\n", "max_file_mb takes a number above 0"),
    ("max_rows = 0\n", "max_rows = 0"),
    ("max_columns = -1\n", "max_columns = -1"),
    ("max_cells = 0\n", "max_cells = 0"),
    ("sync_max_pages = 0\n", "sync_max_pages = 0"),
    ("repeat_window_days = -1\n", "repeat_window_days = -1"),
    ("payee_change_hold_hours = -2\n", "payee_change_hold_hours = -2.0"),
    ("approvals_required = 3\n", "approvals_required takes a whole number from 1 to 2"),
    ("plan_hours = 0\n", "plan_hours takes a number above 0"),
    ("plan_tolerance = 1.5\n", "plan_tolerance takes a number from 0 to 1"),
    ("listen_port = 70000\n", "listen_port = 70000"),
    ('rate_limit = "0/min"\n', "Setting rate_limit: The rate limit '0/min' must allow"),
])
def test_a_number_out_of_its_range_is_refused(home: Path, text: str, fragment: str) -> None:
    path = write_toml(user_file(home), text)
    result = CliRunner().invoke(cli, ["runs"])
    assert result.exit_code == 2, result.output
    assert fragment.format(file=path) in result.stderr
    assert len(result.stderr.strip().splitlines()) <= 2 and "Traceback" not in result.output


@pytest.mark.parametrize("option, fragment", [
    (["--max-rps", "nan"], "--max-rps = nan is not a finite number"),
    (["--wait", "inf"], "--wait = inf is not a finite number"),
    (["--concurrency", "0"], "0 is not in the range 1<=x<=32"),
])
def test_an_option_out_of_its_range_is_refused(home: Path, tmp_path: Path, option: list[str],
                                               fragment: str) -> None:
    sheet = tmp_path / "nov.csv"
    sheet.write_text("payout_ref,amount\nA,1\n", encoding="utf-8")
    result = CliRunner().invoke(cli, ["run", str(sheet), *option])
    assert result.exit_code == 2, result.output
    assert fragment in result.stderr and "Traceback" not in result.output
