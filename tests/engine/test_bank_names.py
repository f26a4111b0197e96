"""Bank names checked against the service's bank list: near misses become warnings, never errors.

Requests are counted at the sandbox (/_sandbox/stats), so "the cache was used" means the
service really was not asked again.
"""

from __future__ import annotations

import asyncio
import json
import socket
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from batchpay.engine.banknames import bank_name_warning, check_bank_names
from batchpay.provider.client import PayoutClient
from batchpay.provider.errors import ConnectFailed, RequestRejected
from batchpay.sheet.read import read_sheet
from batchpay.sheet.validate import validate_sheet
from tests.support.e2e import batchpay, by_ref, sandbox_payouts, sandbox_stats
from tests.support.sheets import row, rows, write_sheet

NEAR_MISS = "bank_name: 中国工商 is not in the service's bank list for CN/CNY; did you mean 中国工商银行?"


@pytest.fixture
def service(cli_sandbox: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("COLUMNS", "250")  # tables on stderr keep each message on one line
    return cli_sandbox(settle_seconds=0.2)


def bank_requests(url: str) -> int:
    return int(sandbox_stats(url)["requests"].get("GET /v1/bank 200", 0))


def today_cache(tmp_path: Path) -> Path:
    day = datetime.now(UTC).date().isoformat()
    return tmp_path / "journal" / f"banks-CN-CNY-{day}.json"


def test_a_near_miss_is_a_warning_in_the_results_and_the_row_is_paid(
        service: Any, tmp_path: Path) -> None:
    sheet = write_sheet(tmp_path / "nov.xlsx", rows(2) + [row(3, bank_name="中国工商")])
    out = tmp_path / "out.xlsx"
    result = batchpay("run", str(sheet), "--out", str(out), "--wait", "10")
    assert result.exit_code == 0, result
    assert len(sandbox_payouts(service.url)) == 3  # the warned row is paid too
    got = by_ref(out)
    assert got["T-00003"]["status"] == "COMPLETED"
    assert got["T-00003"]["warning"] == NEAR_MISS
    assert got["T-00001"]["warning"] in (None, "")
    assert "1 row(s) name a bank the service does not list" in result.stderr


def test_validate_warns_keeps_the_row_valid_and_reports_it(service: Any, tmp_path: Path) -> None:
    sheet = write_sheet(tmp_path / "nov.xlsx", [row(1, bank_name="中国工商")])
    report = tmp_path / "check.xlsx"
    result = batchpay("validate", str(sheet), "--report", str(report))
    assert result.exit_code == 0, result
    assert "did you mean 中国工商银行?" in result.stderr
    assert by_ref(report)["T-00001"]["status"] == "VALID"
    assert by_ref(report)["T-00001"]["warning"] == NEAR_MISS


def test_the_list_is_cached_per_day_and_reused(service: Any, tmp_path: Path) -> None:
    sheet = write_sheet(tmp_path / "nov.xlsx", rows(3) + [row(4, bank_name="招商")])
    first = batchpay("validate", str(sheet))
    assert first.exit_code == 0, first
    assert bank_requests(service.url) == 1
    cached = json.loads(today_cache(tmp_path).read_text(encoding="utf-8"))
    assert "中国工商银行" in cached["banks"] and cached["service"] == service.url
    second = batchpay("validate", str(sheet))
    assert second.exit_code == 0, second
    assert "did you mean 招商银行?" in second.stderr  # the warning comes from the cache
    paid = batchpay("run", str(sheet), "--out", str(tmp_path / "r.xlsx"), "--wait", "5")
    assert paid.exit_code == 0, paid
    assert bank_requests(service.url) == 1  # neither the second validate nor the run asked
    assert "招商银行" in by_ref(tmp_path / "r.xlsx")["T-00004"]["warning"]


def test_yesterdays_list_is_not_used(service: Any, tmp_path: Path) -> None:
    stale = tmp_path / "journal" / "banks-CN-CNY-2000-01-01.json"
    stale.parent.mkdir(parents=True)
    stale.write_text(json.dumps({"service": service.url, "banks": ["中国工商"]}), encoding="utf-8")
    sheet = write_sheet(tmp_path / "nov.xlsx", [row(1, bank_name="中国工商")])
    result = batchpay("validate", str(sheet))
    assert "did you mean 中国工商银行?" in result.stderr  # the fresh list, not the stale one
    assert bank_requests(service.url) == 1
    assert not stale.exists() and today_cache(tmp_path).exists()


def test_no_bank_check_asks_nothing(service: Any, tmp_path: Path) -> None:
    sheet = write_sheet(tmp_path / "nov.xlsx", [row(1, bank_name="中国工商")])
    result = batchpay("validate", str(sheet), "--no-bank-check")
    assert result.exit_code == 0, result
    assert "did you mean" not in result.stderr
    assert bank_requests(service.url) == 0
    assert not today_cache(tmp_path).exists()


def test_validate_works_offline_with_one_note(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("BATCHPAY_BASE_URL", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("BATCHPAY_API_KEY", "k")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("COLUMNS", "250")  # tables on stderr keep each message on one line
    sheet = write_sheet(tmp_path / "nov.xlsx", [row(1, bank_name="中国工商")])
    result = batchpay("validate", str(sheet))
    assert result.exit_code == 0, result
    assert result.stderr.count("Bank names not checked") == 1
    assert "Traceback" not in result.stderr


def test_the_embedded_sandbox_is_used_when_nothing_is_configured(
        tmp_path: Path, data_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("BATCHPAY_BASE_URL", "BATCHPAY_API_KEY", "BATCHPAY_JOURNAL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("COLUMNS", "250")  # tables on stderr keep each message on one line
    sheet = write_sheet(tmp_path / "nov.xlsx", [row(1, bank_name="中国 工商银行")])
    result = batchpay("validate", str(sheet))
    # spacing is not a different bank, so nothing to say; the cache is beside the journal
    assert result.exit_code == 0 and "Warnings" not in result.stderr, result
    day = datetime.now(UTC).date().isoformat()
    journals = data_home / "batchpay" / "journals"
    assert (journals / "embedded" / f"banks-CN-CNY-{day}.json").is_file()
    assert not (tmp_path / ".batchpay").exists()


# --- the library function --------------------------------------------------------------------


def validation_of(tmp_path: Path, sheet_rows: list[dict[str, Any]]) -> Any:
    return validate_sheet(read_sheet(write_sheet(tmp_path / "s.xlsx", sheet_rows)))


def test_an_uncovered_destination_is_one_note_and_no_warnings(sandbox: Any,
                                                            tmp_path: Path) -> None:
    validation = validation_of(tmp_path, rows(4, bank_name="nowhere bank"))
    pairs = [("US", "USD")] * 4  # the sandbox's directory answers 400 for it

    async def check() -> Any:
        async with PayoutClient(sandbox.url, sandbox.api_key) as client:
            return await check_bank_names(validation, pairs, client, cache_dir=tmp_path,
                                          service="s")

    found = asyncio.run(check())
    assert found.warnings == {}
    assert found.notes == ["Bank names not checked for US/USD: the service has no bank list "
                           "for that destination."]
    assert sandbox_stats(sandbox.url)["requests"] == {"GET /v1/bank 400": 1}


def test_a_service_that_cannot_be_reached_is_asked_once(tmp_path: Path) -> None:
    validation = validation_of(tmp_path, rows(3))
    asked: list[tuple[str, str]] = []

    async def down(country: str, currency: str) -> list[str]:
        asked.append((country, currency))
        raise ConnectFailed("Could not reach the payout service (GET /v1/bank)")

    found = asyncio.run(check_bank_names(validation, [("CN", "CNY"), ("HK", "HKD"), None],
                                         down, cache_dir=tmp_path, service="s"))
    assert asked == [("CN", "CNY")]  # no request for the second pair once the first failed
    assert found.warnings == {}
    assert len(found.notes) == 1 and "could not get the service's bank list" in found.notes[0]
    assert list(tmp_path.glob("banks-*")) == []  # nothing cached from a failure


def test_a_400_from_a_callable_is_cached_as_not_covered(tmp_path: Path) -> None:
    validation = validation_of(tmp_path, rows(2))
    calls = 0

    async def uncovered(country: str, currency: str) -> list[str]:
        nonlocal calls
        calls += 1
        raise RequestRejected("Bank list not available", status=400)

    for _ in range(2):
        found = asyncio.run(check_bank_names(validation, [("CN", "CNY")] * 2, uncovered,
                                             cache_dir=tmp_path, service="s"))
        assert len(found.notes) == 1 and found.warnings == {}
    assert calls == 1


def test_the_warning_text() -> None:
    names = ["中国工商银行", "中国建设银行", "招商银行", "Access Bank"]
    assert bank_name_warning("中国工商银行", names, ("CN", "CNY")) is None
    assert bank_name_warning("ＡＣＣＥＳＳ  bank", names, ("NG", "NGN")) is None  # width, case
    several = bank_name_warning("中国银行", names, ("CN", "CNY"))
    assert several is not None and several.endswith("?")
    assert "中国工商银行" in several and "中国建设银行" in several and " or " in several
    none_close = bank_name_warning("Bank of Mars", names, ("CN", "CNY"))
    assert none_close == ("bank_name: Bank of Mars is not in the service's bank list for CN/CNY; "
                          "check the name against `batchpay banks --country CN --currency CNY`")


def test_english_names_and_abbreviations_are_recognized() -> None:
    names = ["中国工商银行", "中国建设银行", "中国银行", "交通银行", "招商银行", "中国农业银行"]
    for written, meant in [("ICBC", "中国工商银行"), ("ccb", "中国建设银行"),
                           ("ABC", "中国农业银行"), ("BOC", "中国银行"),
                           ("BoCom", "交通银行"), ("CMB", "招商银行"),
                           ("Industrial and Commercial Bank of China", "中国工商银行"),
                           ("bank of  china", "中国银行")]:
        warning = bank_name_warning(written, names, ("CN", "CNY"))
        assert warning == (f"bank_name: {written} is {meant} in the service's bank list for "
                           f"CN/CNY; write {meant}, the name its bank matches the account "
                           "against"), written


def test_run_names_a_row_written_with_an_abbreviation(service: Any, tmp_path: Path) -> None:
    sheet = write_sheet(tmp_path / "nov.xlsx", rows(1) + [row(2, bank_name="ICBC")])
    out = tmp_path / "out.xlsx"
    result = batchpay("run", str(sheet), "--out", str(out), "--wait", "5")
    assert result.exit_code == 0, result
    assert "ICBC is 中国工商银行" in by_ref(out)["T-00002"]["warning"]
    assert "1 row(s) name a bank the service does not list" in result.stderr
