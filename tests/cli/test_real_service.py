"""A service that is not the sandbox means real money: confirmation, and the key stays secret.

The "real" service here is the sandbox behind a proxy that removes the sandbox's
`X-Batchpay-Sandbox` header, so batchpay cannot tell it from the provider.
"""

from __future__ import annotations

import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from batchpay.serving import ServerThread
from batchpay.settings.model import default_journal
from tests.support.e2e import TLS, batchpay, results, sandbox_payouts, sandbox_stats, set_wallet
from tests.support.sheets import rows, write_sheet

CANARY = "canary-key-7f3a9c1e5b"


def disguise(upstream: str) -> Starlette:
    """Forward everything to the sandbox; drop the header that says it is one."""
    async def forward(request: Request) -> Response:
        async with httpx.AsyncClient(base_url=upstream, verify=TLS) as client:
            answer = await client.request(
                request.method, request.url.path, params=request.query_params,
                content=await request.body(),
                headers={k: v for k, v in request.headers.items() if k.lower() != "host"})
        headers = {k: v for k, v in answer.headers.items()
                   if k.lower() not in ("x-batchpay-sandbox", "content-length",
                                        "content-encoding", "transfer-encoding")}
        return Response(answer.content, answer.status_code, headers=headers)

    return Starlette(routes=[Route("/{path:path}", forward,
                                   methods=["GET", "POST", "PUT", "DELETE"])])


@pytest.fixture
def real(sandbox_factory: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
         ) -> Iterator[tuple[Any, str]]:
    sandbox = sandbox_factory(settle_seconds=0.2, api_key=CANARY)
    with ServerThread(disguise(sandbox.url), what="proxy") as proxy:
        monkeypatch.chdir(tmp_path)
        monkeypatch.setenv("BATCHPAY_BASE_URL", proxy.url)
        monkeypatch.setenv("BATCHPAY_API_KEY", CANARY)
        monkeypatch.setenv("BATCHPAY_JOURNAL", str(tmp_path / "journal.sqlite3"))
        yield sandbox, proxy.url


def test_real_money_without_a_terminal_and_without_yes_sends_nothing(real: Any,
                                                                    tmp_path: Path) -> None:
    sandbox, _ = real
    sheet = write_sheet(tmp_path / "nov.xlsx", rows(3))
    result = batchpay("run", str(sheet))
    assert result.exit_code == 2, result
    assert "About to pay 3 row(s)" in result.stderr and "NGN" in result.stderr
    assert "--yes" in result.stderr
    assert sandbox_payouts(sandbox.url) == []
    assert "SANDBOX" not in result.stderr


def test_yes_confirms_in_advance(real: Any, tmp_path: Path) -> None:
    sandbox, _ = real
    sheet = write_sheet(tmp_path / "nov.xlsx", rows(3))
    out = tmp_path / "r.xlsx"
    result = batchpay("run", str(sheet), "--yes", "--wait", "10", "--out", str(out))
    assert result.exit_code == 0, result
    assert len(sandbox_payouts(sandbox.url)) == 3
    assert {r["status"] for r in results(out)} == {"COMPLETED"}


def _everything_written(tmp_path: Path) -> bytes:
    """Every byte batchpay left on disk: journal, its WAL, workbooks (unzipped), caches."""
    blob = b""
    for path in tmp_path.rglob("*"):
        if not path.is_file() or "sandbox" in path.name:
            continue  # the service's own state is not ours
        if path.suffix == ".xlsx":
            with zipfile.ZipFile(path) as z:
                blob += b"".join(z.read(name) for name in z.namelist())
        else:
            blob += path.read_bytes()
    return blob


def test_the_api_key_is_never_written_or_printed(real: Any, tmp_path: Path,
                                                 caplog: pytest.LogCaptureFixture,
                                                 monkeypatch: pytest.MonkeyPatch,
                                                 no_backoff: None) -> None:
    sandbox, _ = real
    sheet = write_sheet(tmp_path / "nov.xlsx", rows(3))
    outputs = [batchpay("run", str(sheet), "--yes", "--wait", "5", "--out",
                        str(tmp_path / "ok.xlsx")),
               batchpay("sync", "--out", str(tmp_path / "synced.xlsx")),
               batchpay("config"), batchpay("runs", "--json")]
    # and when requests fail: the service down, then the key refused
    other = write_sheet(tmp_path / "b.xlsx", rows(2, start=50))
    monkeypatch.setenv("BATCHPAY_BASE_URL", "http://127.0.0.1:9")
    outputs.append(batchpay("run", str(other), "--yes", "--journal", str(tmp_path / "down.sqlite3")))
    monkeypatch.setenv("BATCHPAY_BASE_URL", real[1])
    monkeypatch.setenv("BATCHPAY_API_KEY", CANARY + "-wrong")
    outputs.append(batchpay("run", str(other), "--yes",
                            "--journal", str(tmp_path / "other.sqlite3")))
    assert outputs[0].exit_code == 0 and outputs[-1].exit_code == 2, outputs
    assert len(sandbox_payouts(sandbox.url)) == 3
    for out in outputs:
        assert CANARY not in out.stdout and CANARY not in out.stderr, out
    assert CANARY not in caplog.text
    assert CANARY.encode() not in _everything_written(tmp_path)
    assert "sha256:" in outputs[2].stdout  # config shows the fingerprint instead


def test_a_live_run_says_so_and_names_its_journal(real: Any, tmp_path: Path) -> None:
    _, url = real
    sheet = write_sheet(tmp_path / "nov.xlsx", rows(1))
    result = batchpay("run", str(sheet), "--yes", "--wait", "0", "--out", str(tmp_path / "r.xlsx"))
    assert result.exit_code == 0, result
    assert f"LIVE: {url}, real money" in result.stderr
    assert f"Journal: {tmp_path / 'journal.sqlite3'}" in result.stderr


def test_a_new_empty_journal_for_a_real_service_is_said_and_needs_a_yes(
        real: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sandbox, url = real
    monkeypatch.delenv("BATCHPAY_JOURNAL")  # the default journal of this service: new
    sheet = write_sheet(tmp_path / "nov.xlsx", rows(2))
    refused = batchpay("run", str(sheet))
    assert refused.exit_code == 2, refused
    journal = default_journal(url)
    assert f"NEW JOURNAL: {journal} holds no earlier payout" in refused.stderr
    assert "--yes" in refused.stderr
    assert sandbox_payouts(sandbox.url) == []
    assert not any("/v2/payout" in k for k in sandbox_stats(sandbox.url)["requests"])
    paid = batchpay("run", str(sheet), "--yes", "--wait", "5")
    assert paid.exit_code == 0, paid
    assert "NEW JOURNAL" in paid.stderr and len(sandbox_payouts(sandbox.url)) == 2
    more = write_sheet(tmp_path / "dec.xlsx", rows(1, start=30))
    later = batchpay("run", str(more), "--yes", "--wait", "0")
    assert later.exit_code == 0 and "NEW JOURNAL" not in later.stderr, later


def test_the_confirmation_shows_each_wallet_and_the_total_debit(real: Any, tmp_path: Path) -> None:
    sandbox, _ = real
    set_wallet(sandbox.url, "NGN", "1000000")
    sheet = write_sheet(tmp_path / "nov.xlsx", rows(2))  # 101,000.50 + 102,000.50 NGN
    out = tmp_path / "r.xlsx"
    result = batchpay("run", str(sheet), "--yes", "--wait", "0", "--out", str(out))
    assert result.exit_code == 0, result
    # the fee share of the smallest row, each row's fee rounded up: a cent above the 2,030.02
    # the sandbox charges (1 % of each row, rounded half up)
    assert ("NGN: 2 row(s), amount 203,001.00, fees about 2,030.03, total debit about "
            "205,031.03; wallet 1,000,000") in result.stderr
    assert {r["total_debit"] for r in results(out)} == {102010.51, 103020.51}


def test_a_short_wallet_refuses_to_start(real: Any, tmp_path: Path) -> None:
    sandbox, _ = real
    set_wallet(sandbox.url, "NGN", "150000")
    sheet = write_sheet(tmp_path / "nov.xlsx", rows(3))  # about 309,000 NGN with fees
    result = batchpay("run", str(sheet), "--yes")
    assert result.exit_code == 2, result
    assert "the NGN wallet holds 150,000 but the batch needs about 309,061.55" in result.stderr
    assert "short by 159,061.55 NGN" in result.stderr and "--allow-partial" in result.stderr
    assert sandbox_payouts(sandbox.url) == []


def test_allow_partial_pays_what_fits(real: Any, tmp_path: Path) -> None:
    sandbox, _ = real
    set_wallet(sandbox.url, "NGN", "150000")
    sheet = write_sheet(tmp_path / "nov.xlsx", rows(3))
    out = tmp_path / "r.xlsx"
    result = batchpay("run", str(sheet), "--yes", "--allow-partial", "--concurrency", "1",
                      "--wait", "5", "--out", str(out))
    assert result.exit_code == 1, result
    assert len(sandbox_payouts(sandbox.url)) == 1
    statuses = sorted(r["status"] for r in results(out))
    assert statuses == ["COMPLETED", "REJECTED", "REJECTED"]
    assert all("Insufficient wallet balance" in r["error"] for r in results(out)
               if r["status"] == "REJECTED")


@pytest.mark.parametrize("answer", [False, True])
def test_at_a_terminal_a_new_journal_is_asked_about(real: Any, tmp_path: Path, answer: bool,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from batchpay import display

    sandbox, _ = real
    asked: list[str] = []

    def confirm(self: Any, text: str) -> bool:
        asked.append(text)
        return answer

    monkeypatch.setattr(display, "is_interactive", lambda: True)
    monkeypatch.setattr(display.RichReporter, "confirm", confirm)
    sheet = write_sheet(tmp_path / "nov.xlsx", rows(2))
    result = batchpay("run", str(sheet), "--wait", "0")
    assert asked == ["Pay now?"]
    assert "NEW JOURNAL" in result.stderr
    assert result.exit_code == (0 if answer else 2), result
    assert len(sandbox_payouts(sandbox.url)) == (2 if answer else 0)
    if not answer:
        assert "Cancelled: nothing was sent." in result.stderr
