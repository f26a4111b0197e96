"""Keys are checked when they are loaded and never shown; a remote service needs https."""

from __future__ import annotations

from pathlib import Path

import pytest

from batchpay.errors import ConfigError
from batchpay.settings.load import load_settings
from batchpay.settings.model import scrub
from tests.support.e2e import batchpay

CANARY = "canary-key-5d1e8f2a"


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("BATCHPAY_BASE_URL", "https://payouts.example.com")
    return monkeypatch


@pytest.mark.parametrize(("key", "said"), [
    (CANARY + "\n", "a line break at position 20 of 20"),
    (" " + CANARY, "a space at position 1"),
    (CANARY + "é", "not printable ASCII"),
])
def test_a_key_that_cannot_be_a_header_is_refused_without_being_shown(
        env: pytest.MonkeyPatch, key: str, said: str) -> None:
    env.setenv("BATCHPAY_API_KEY", key)
    result = batchpay("banks", "--country", "NG", "--currency", "NGN")
    assert result.exit_code == 2, result
    assert said in result.stderr
    assert "BATCHPAY_API_KEY" in result.stderr
    assert "canary" not in result.stdout + result.stderr
    assert "Traceback" not in result.stderr


def test_a_secret_of_the_wrong_type_in_the_file_is_not_echoed(tmp_path: Path) -> None:
    settings = tmp_path / "batchpay.toml"
    settings.write_text("api_key = 51234987\n", encoding="utf-8")
    settings.chmod(0o600)
    with pytest.raises(ConfigError) as refused:
        load_settings(env={}, files=[settings])
    assert "51234987" not in refused.value.message
    assert "(not shown)" in refused.value.message


@pytest.mark.parametrize(("url", "ok"), [
    ("https://payouts.example.com", True),
    ("http://127.0.0.1:8787", True),
    ("http://localhost:8787", True),
    ("http://[::1]:8787", True),
    ("http://payouts.example.com", False),
    ("http://127.example.com", False),
    ("ftp://payouts.example.com", False),
    ("https://", False),
])
def test_base_url_must_be_https_unless_on_this_machine(url: str, ok: bool) -> None:
    env = {"BATCHPAY_BASE_URL": url, "BATCHPAY_API_KEY": CANARY}
    if ok:
        assert load_settings(env=env, files=[]).base_url == url
    else:
        with pytest.raises(ConfigError, match="https://"):
            load_settings(env=env, files=[])


def test_every_form_of_a_loaded_key_is_cut_from_messages() -> None:
    load_settings(env={"BATCHPAY_BASE_URL": "https://x.example", "BATCHPAY_API_KEY": CANARY,
                       "BATCHPAY_WEBHOOK_SECRET": "whsec-" + CANARY}, files=[])
    text = (f"header {CANARY!r} / {CANARY.encode()!r} / whsec-{CANARY} / {CANARY}")
    cleaned = scrub(text)
    assert "canary" not in cleaned
    assert cleaned.count("[secret]") == 4
