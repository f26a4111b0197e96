"""Settings: batchpay.toml in the current folder, then the user config dir; the environment wins;
the key only in a private file, and only ever shown as a fingerprint."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from batchpay.cli import cli
from batchpay.config import fingerprint, load_settings

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
                      'base_url = "https://pay.example.com"\nconcurrency = 7\nmax_rps = 2\n'
                      '[paths]\npayout = "/v3/payout"\n')
    settings = load_settings()
    assert settings.base_url == "https://pay.example.com"
    assert settings.concurrency == 7 and settings.max_rps == 2.0
    assert settings.paths.payout == "/v3/payout" and settings.paths.quote == "/v1/quote"
    assert settings.source == str(path)


def test_the_file_in_the_user_config_dir(home: Path) -> None:
    path = write_toml(user_file(home), 'base_url = "https://user.example.com"\n'
                      f'api_key = "{KEY}"\n')
    settings = load_settings()
    assert settings.base_url == "https://user.example.com" and settings.api_key == KEY
    assert settings.source == str(path)


def test_the_current_folder_comes_before_the_user_config_dir(home: Path) -> None:
    write_toml(user_file(home), 'base_url = "https://user.example.com"\nconcurrency = 2\n')
    write_toml(Path.cwd() / "batchpay.toml", 'base_url = "https://here.example.com"\n')
    settings = load_settings()
    assert settings.base_url == "https://here.example.com"
    assert settings.concurrency == 4  # the files are not merged: the first one found counts


def test_the_environment_overrides_the_file(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_toml(Path.cwd() / "batchpay.toml",
               'base_url = "https://file.example.com"\njournal = "file.sqlite3"\n'
               'api_key = "file-key"\nconcurrency = 3\n')
    monkeypatch.setenv("BATCHPAY_BASE_URL", "https://env.example.com")
    monkeypatch.setenv("BATCHPAY_API_KEY", KEY)
    monkeypatch.setenv("BATCHPAY_JOURNAL", "env.sqlite3")
    settings = load_settings()
    assert settings.base_url == "https://env.example.com"
    assert settings.api_key == KEY and settings.journal == Path.cwd() / "env.sqlite3"
    assert settings.concurrency == 3  # what the environment does not set comes from the file
    assert settings.source.endswith("+ environment")


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
    assert config().exit_code == 0


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
    write_toml(Path.cwd() / "batchpay.toml", text)
    result = CliRunner().invoke(cli, ["runs"])
    assert result.exit_code == 2, result.output
    assert fragment in result.stderr
    assert len(result.stderr.strip().splitlines()) <= 2  # what happened, what to do
    assert "Traceback" not in result.output
    shown = config()  # config shows the error beside everything else
    assert shown.exit_code == 2 and fragment in shown.stderr, shown.output
    assert "concurrency" in shown.stdout and "Traceback" not in shown.output


def test_config_with_an_unknown_name_shows_the_rest_of_the_file(home: Path) -> None:
    path = write_toml(Path.cwd() / "batchpay.toml",
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
    path = write_toml(Path.cwd() / "batchpay.toml",
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
    assert lines["loaded_from"] == f"{path} + environment"
    assert KEY not in result.output and "whsec-also-secret" not in result.output
    assert KEY[:8] not in result.output


def test_config_without_settings_names_the_embedded_sandbox(home: Path) -> None:
    result = config()
    assert result.exit_code == 0
    assert "embedded sandbox" in result.stdout and "(not set)" in result.stdout
