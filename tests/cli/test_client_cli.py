"""`batchpay banks` against a small fake service over real HTTP, and import hygiene."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest
import stamina
from click.testing import CliRunner

from batchpay.cli import cli

KEY = "cli-canary-key-5c1e"
BANKS = [
    {"bankName": "Access Bank", "sortCode": "044", "branchCode": None, "country": None},
    {"bankName": "Zenith Bank", "sortCode": "057", "branchCode": None, "country": None},
]


class FakeBankService(BaseHTTPRequestHandler):
    """GET /v1/bank as the service answers it: the envelope, or a bare string on errors."""

    seen: list[dict[str, Any]] = []

    def do_GET(self) -> None:  # noqa: N802 - the name http.server calls
        url = urlparse(self.path)
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        self.seen.append({"path": url.path, "query": query,
                          "key": self.headers.get("X-API-KEY")})
        if self.headers.get("X-API-KEY") != KEY:
            return self.answer(401, "Invalid API key")
        for name in ("country", "currency"):
            if name not in query:
                return self.answer(400, f"Missing required parameter: {name}")
        if (query["country"], query["currency"]) != ("NG", "NGN"):
            return self.answer(400, {"message": "Bank list not available for the specified "
                                                "country and currency", "status": "failed"})
        return self.answer(200, {"message": "Banks fetched", "status": "success", "data": BANKS})

    def answer(self, code: int, body: Any) -> None:
        raw = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet
        pass


@pytest.fixture
def fake_url() -> Iterator[str]:
    FakeBankService.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeBankService)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def banks(tmp_path: Path, url: str, key: str, *args: str) -> Any:
    env = {"BATCHPAY_BASE_URL": url, "BATCHPAY_API_KEY": key,
           "BATCHPAY_JOURNAL": str(tmp_path / "journal.sqlite3"),
           "XDG_CONFIG_HOME": str(tmp_path / "config"), "COLUMNS": "120"}
    runner = CliRunner()
    with contextlib.chdir(tmp_path):  # a settings file where the tests run must not count
        return runner.invoke(cli, ["banks", *args], env=env)


def test_banks_prints_a_table(tmp_path: Path, fake_url: str) -> None:
    result = banks(tmp_path, fake_url, KEY, "--country", "ng", "--currency", "NGN")
    assert result.exit_code == 0, result.output
    assert "Access Bank" in result.stdout and "057" in result.stdout
    assert "SANDBOX" not in result.stderr  # a service without the sandbox header
    assert FakeBankService.seen[0]["query"] == {"country": "NG", "currency": "NGN"}


def test_banks_json_is_the_list(tmp_path: Path, fake_url: str) -> None:
    result = banks(tmp_path, fake_url, KEY, "--country", "NG", "--currency", "NGN", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == BANKS


@pytest.mark.parametrize(("key", "country", "message", "hint"), [
    ("wrong-key", "NG", "Invalid API key", "BATCHPAY_API_KEY"),
    (KEY, "GH", "Bank list not available", "correct what its message names"),
])
def test_banks_refused_is_one_line_and_exit_2(tmp_path: Path, fake_url: str, key: str,
                                              country: str, message: str, hint: str) -> None:
    result = banks(tmp_path, fake_url, key, "--country", country, "--currency", "NGN")
    assert result.exit_code == 2
    assert result.stdout == ""
    first, *rest = result.stderr.strip().splitlines()
    assert first.startswith("Error: ") and message in first
    assert hint in " ".join(rest)
    assert "Traceback" not in result.stderr
    assert "wrong-key" not in result.stderr and KEY not in result.stderr
    assert len(FakeBankService.seen) == 1, "a refusal is not retried"


def test_banks_unreachable_service_is_exit_2(tmp_path: Path) -> None:
    with stamina.set_testing(True, attempts=2):  # retried, without the real backoff
        result = banks(tmp_path, "http://127.0.0.1:9", KEY, "--country", "NG",
                       "--currency", "NGN")
    assert result.exit_code == 2
    assert "Could not reach the payout service" in result.stderr
    assert "Traceback" not in result.stderr


def test_importing_the_cli_loads_no_heavy_library() -> None:
    code = ("import sys, batchpay.cli; "
            "print(sorted(m for m in ('pandas', 'httpx', 'starlette', 'stamina') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"


def test_banks_on_the_embedded_sandbox_says_sandbox(tmp_path: Path) -> None:
    env = {"BATCHPAY_BASE_URL": None, "BATCHPAY_API_KEY": None,
           "BATCHPAY_JOURNAL": str(tmp_path / ".batchpay" / "journal.sqlite3"),
           "XDG_CONFIG_HOME": str(tmp_path / "config")}
    runner = CliRunner()
    with contextlib.chdir(tmp_path):  # a settings file where the tests run must not count
        result = runner.invoke(cli, ["banks", "--country", "NG", "--currency", "NGN", "--json"],
                               env=env)
    assert result.exit_code == 0, result.output
    assert "SANDBOX" in result.stderr
    listed = json.loads(result.stdout)
    assert len(listed) >= 10
    assert set(listed[0]) == {"bankName", "sortCode", "branchCode", "country"}
