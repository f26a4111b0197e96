"""`list_banks`, the library function behind `batchpay banks`: the list, whether a sandbox
answered, and the sandbox said once, before the request when it is the embedded one."""

from __future__ import annotations

import contextlib
import dataclasses
import socket
from pathlib import Path
from typing import Any

import pytest

from batchpay.engine.banknames import list_banks
from batchpay.provider.errors import ProviderError
from batchpay.service import Service
from batchpay.settings.model import Settings
from tests.support.e2e import sandbox_stats


def bank_requests(url: str) -> int:
    return int(sandbox_stats(url)["requests"].get("GET /v1/bank 200", 0))


def opener(service: Service) -> Any:
    return lambda: contextlib.nullcontext(service)


def settings_at(running: Any, tmp_path: Path) -> Settings:
    return Settings(base_url=running.url, api_key=running.api_key,
                    journal=tmp_path / "journal.sqlite3")


def test_the_embedded_sandbox_is_said_before_the_request(sandbox: Any, tmp_path: Path) -> None:
    said: list[int] = []
    found = list_banks(settings_at(sandbox, tmp_path), " cn ", "cny",
                       opener(Service(sandbox.url, sandbox.api_key, embedded=True)),
                       on_sandbox=lambda: said.append(bank_requests(sandbox.url)))
    assert said == [0]  # once, and before the service was asked
    assert bank_requests(sandbox.url) == 1
    assert (found.country, found.currency, found.sandbox) == ("CN", "CNY", True)
    assert "中国工商银行" in [bank.bank_name for bank in found.banks]


def test_a_sandbox_at_a_configured_url_is_said_once_it_answers(sandbox: Any,
                                                                tmp_path: Path) -> None:
    said: list[int] = []
    found = list_banks(settings_at(sandbox, tmp_path), "CN", "CNY",
                       opener(Service(sandbox.url, sandbox.api_key, embedded=False)),
                       on_sandbox=lambda: said.append(bank_requests(sandbox.url)))
    assert said == [1] and found.sandbox and found.banks


def test_an_error_from_the_embedded_sandbox_follows_its_banner(tmp_path: Path) -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}"
    settings = dataclasses.replace(Settings(base_url=url, api_key="k",
                                            journal=tmp_path / "journal.sqlite3"),
                                   retry_attempts=1, retry_seconds=1.0)
    said: list[str] = []
    with pytest.raises(ProviderError):
        list_banks(settings, "CN", "CNY", opener(Service(url, "k", embedded=True)),
                   on_sandbox=lambda: said.append("SANDBOX"))
    assert said == ["SANDBOX"]
    said.clear()
    with pytest.raises(ProviderError):  # a configured service that never answered: no banner
        list_banks(settings, "CN", "CNY", opener(Service(url, "k", embedded=False)),
                   on_sandbox=lambda: said.append("SANDBOX"))
    assert said == []
