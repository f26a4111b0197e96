"""The README's systemd unit and environment file for a team server hold together: every
variable is one batchpay reads, the unit starts `batchpay serve` with options it has, and
the environment file's settings load as the README says (the service's settings file under
XDG_CONFIG_HOME, its data under XDG_DATA_HOME)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from batchpay.cli import cli
from batchpay.settings.load import load_settings, settings_files
from batchpay.settings.model import DatabaseURL
from tests.support.readme_transcript import README

PACKAGE = Path(__file__).resolve().parents[2] / "batchpay"


def block(first_line: str) -> str:
    """The README's ```ini block whose first line begins with `first_line`."""
    text = README.read_text(encoding="utf-8")
    found = re.search(r"```ini\n(" + re.escape(first_line) + r"[^\n]*\n.*?)```", text,
                      re.DOTALL)
    assert found, f"no ```ini block starting {first_line!r} in the README"
    return found.group(1)


def environment_file() -> dict[str, str]:
    lines = block("# /etc/batchpay/batchpay.env").splitlines()
    return dict(line.split("=", 1) for line in lines if line and not line.startswith("#"))


def test_every_variable_of_the_environment_file_is_read_by_batchpay_or_libpq() -> None:
    source = "\n".join(p.read_text(encoding="utf-8") for p in PACKAGE.rglob("*.py"))
    for name in environment_file():
        if name.startswith("BATCHPAY_"):
            assert name in source, name
        else:  # libpq's and the XDG base directories', which batchpay's libraries read
            assert name in {"PGPASSFILE", "PGSSLROOTCERT", "XDG_CONFIG_HOME", "XDG_DATA_HOME"}


def test_the_unit_starts_serve_with_its_options_and_the_environment_file() -> None:
    unit = block("# /etc/systemd/system/batchpay.service")
    assert "EnvironmentFile=/etc/batchpay/batchpay.env" in unit.splitlines()
    start = re.search(r"^ExecStart=(.*?)(?<!\\)$", unit, re.MULTILINE | re.DOTALL)
    assert start
    words = shlex.split(start.group(1).replace("\\\n", " "))
    assert words[:2] == ["/opt/batchpay/bin/batchpay", "serve"]
    options = {o for p in cli.commands["serve"].params for o in getattr(p, "opts", [])}
    given = [w for w in words if w.startswith("--")]
    assert given and set(given) <= options, set(given) - options


def test_the_environment_files_settings_load(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    env = environment_file()
    # the service's folders, moved under tmp_path
    env["XDG_CONFIG_HOME"] = str(tmp_path / "etc")
    env["XDG_DATA_HOME"] = str(tmp_path / "var-lib")
    for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME"):
        monkeypatch.setenv(name, env[name])
    own = settings_files()[0]
    assert own == tmp_path / "etc" / "batchpay" / "batchpay.toml"  # /etc/batchpay/batchpay.toml
    own.parent.mkdir(parents=True)
    own.write_text('rate_budget = "postgresql://batchpay@db.example.com/batchpay"\n')
    settings = load_settings(env=env, files=[own])
    assert settings.base_url == env["BATCHPAY_BASE_URL"]
    assert settings.api_key == env["BATCHPAY_API_KEY"]
    assert isinstance(settings.journal, DatabaseURL)
    assert settings.rate_budget.startswith("postgresql://")
