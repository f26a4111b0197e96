"""The books' rules one at a time: the time zone's days, the settings, a tampered journal,
how the service's list is read, and what a statement file may hold."""

from __future__ import annotations

import asyncio
import csv
import sqlite3
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest

from batchpay.clock import machine_zone, parse
from batchpay.days import Period
from batchpay.engine.payout_list import EVERY_STATE
from batchpay.engine.reconcile import read_service_lines, read_statement_file
from batchpay.errors import ConfigError, InputError, UsageError
from batchpay.provider.client import PayoutClient
from batchpay.settings.load import load_settings
from tests.support.e2e import batchpay
from tests.support.sheets import row, write_sheet


@pytest.fixture
def service(cli_sandbox: Any) -> Any:
    return cli_sandbox(settle_seconds=0.05)


def settings_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config" / "batchpay" / "batchpay.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def journal_rows(path: Path) -> list[dict[str, str]]:
    with open(path, encoding="utf-8-sig", newline="") as handle:
        return list(csv.DictReader(handle))


# ------------------------------------------------------------------------------ days


def test_a_period_is_counted_in_the_zones_days() -> None:
    shanghai = Period(datetime(2026, 11, 1).date(), datetime(2026, 11, 30).date(),
                      "Asia/Shanghai")
    assert shanghai.since == "2026-10-31T16:00:00.000000Z"
    assert shanghai.until == "2026-11-30T16:00:00.000000Z"
    assert shanghai.holds("2026-11-30T15:59:59.999999Z")
    assert not shanghai.holds("2026-11-30T16:00:00Z")
    assert shanghai.day_of("2026-10-31T16:30:00Z").isoformat() == "2026-11-01"
    assert parse("2026-11-01T00:00:00+08:00") == datetime(2026, 10, 31, 16, tzinfo=UTC)
    with pytest.raises(UsageError):
        Period(datetime(2026, 11, 2).date(), datetime(2026, 11, 1).date())


def test_time_zone_and_books_settings_are_checked(tmp_path: Path) -> None:
    assert load_settings(env={}, files=[]).time_zone == machine_zone()
    good = settings_file(tmp_path, 'time_zone = "Asia/Shanghai"\n[books]\nvoucher_per = "run"\n'
                         '[books.wallet]\nngn = "1002.01"\n[books.payee]\n"张三" = "2202.007"\n')
    settings = load_settings(env={}, files=[good])
    assert settings.time_zone == "Asia/Shanghai"
    assert settings.books.voucher_per == "run"
    assert settings.books.wallet_account("NGN") == "1002.01"
    assert settings.books.wallet_account("USD") == "1002"
    assert settings.books.payee_account("张三", "Salary") == "2202.007"
    assert settings.books.payee_account("李四", "Salary") == "2202"
    for text, said in [('time_zone = "Mars/Olympus"', "not a time zone"),
                       ('[books]\nvoucher_per = "month"', "voucher_per"),
                       ('[books]\nfee = "6603"', "did you mean books.fees"),
                       ('[books.wallet]\nNGN = 1002', "table of account codes")]:
        bad = settings_file(tmp_path, text + "\n")
        with pytest.raises(ConfigError) as refused:
            load_settings(env={}, files=[bad])
        assert said in refused.value.message


def other_day_zone() -> tuple[str, str]:
    """A zone whose day is not UTC's at this moment (UTC+14 or UTC-12), and that day."""
    now = datetime.now(UTC)
    for name, hours in (("Pacific/Kiritimati", 14), ("Etc/GMT+12", -12)):
        local = (now + timedelta(hours=hours)).date()
        if local != now.date():
            return name, local.isoformat()
    raise AssertionError("one of the two zones is always on another day")


def test_exports_and_the_statement_count_the_time_zones_days(service: Any,
                                                            tmp_path: Path) -> None:
    sheet = write_sheet(tmp_path / "nov.xlsx", [row(1)])
    assert batchpay("run", str(sheet), "--out", str(tmp_path / "r.xlsx"),
                    "--wait", "5").exit_code == 0
    zone, local_day = other_day_zone()
    utc_day = datetime.now(UTC).date().isoformat()
    settings_file(tmp_path, f'time_zone = "{zone}"\n')
    out = tmp_path / "j.csv"
    on_utc_day = batchpay("export", "--from", utc_day, "--to", utc_day, "--format", "journal",
                          "--out", str(out))
    assert on_utc_day.exit_code == 0, on_utc_day
    assert journal_rows(out) == [] and zone in on_utc_day.stderr
    on_local_day = batchpay("export", "--from", local_day, "--to", local_day, "--format",
                            "journal", "--out", str(out), "--overwrite")
    assert on_local_day.exit_code == 0, on_local_day
    rows = journal_rows(out)
    assert len(rows) == 4 and {r["date"] for r in rows} == {local_day}
    made = batchpay("statement", "--from", local_day, "--to", local_day, "--out",
                    str(tmp_path / "s.xlsx"))
    assert made.exit_code == 0 and "1 payout_ref(s)" in made.stderr and zone in made.stderr


def test_a_tampered_journal_is_refused_and_nothing_is_written(service: Any,
                                                              tmp_path: Path) -> None:
    sheet = write_sheet(tmp_path / "nov.xlsx", [row(1)])
    assert batchpay("run", str(sheet), "--out", str(tmp_path / "r.xlsx"),
                    "--wait", "5").exit_code == 0
    today = datetime.now(UTC).date().isoformat()
    (tmp_path / "kept.csv").write_text("mine", encoding="utf-8")
    refused = batchpay("export", "--from", today, "--to", today, "--format", "journal",
                       "--out", str(tmp_path / "kept.csv"))
    assert refused.exit_code == 2 and "already exists" in refused.stderr
    assert (tmp_path / "kept.csv").read_text(encoding="utf-8") == "mine"
    db = sqlite3.connect(tmp_path / "journal" / "journal.sqlite3")
    db.execute("UPDATE payouts SET amount = '1.00'")
    db.commit()
    db.close()
    for fmt in ("ofx", "kingdee"):
        out = tmp_path / f"books.{fmt}"
        refused = batchpay("export", "--from", today, "--to", today, "--format", fmt,
                           "--out", str(out))
        assert refused.exit_code == 2 and "changed outside batchpay" in refused.stderr
        assert not out.exists()
    refused = batchpay("reconcile", "--from", today, "--to", today)
    assert refused.exit_code == 2 and "changed outside batchpay" in refused.stderr


# ---------------------------------------------------------------- the service's list


def payout_record(n: int, state: str) -> dict[str, Any]:
    return {"id": f"p-{state}-{n}", "referenceNumber": f"R{n:012d}", "state": state,
            "remark": f"ref:T-{n}", "created": "2026-11-15T10:00:00.000Z",
            "processed": "2026-11-15T10:00:02.000Z",
            "quote": {"id": f"q-{state}-{n}", "source": {"amount": 1000, "currency": "NGN"},
                      "fee": {"amount": 10}, "summary": {"total": 1010}}}


def test_the_list_is_read_per_state_with_state_page_and_size_on_every_request() -> None:
    seen: list[dict[str, str]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        params = dict(request.url.params)
        seen.append(params)
        if set(params) != {"state", "page", "size"}:  # the provider refuses such a list
            return httpx.Response(400, json={"message": "Missing parameter", "status": "failed"})
        state, page = params["state"], int(params["page"])
        pages = 3 if state == "COMPLETED" else 1
        data = [payout_record(page * 10 + n, state) for n in range(2)]
        return httpx.Response(200, json={"status": "success", "message": "ok", "data": data,
                                         "page": page, "size": 100, "totalPages": pages})

    async def read() -> tuple[Any, bool]:
        async with PayoutClient("https://service.test", "k",
                                transport=httpx.MockTransport(handler)) as client:
            return await read_service_lines(client, "2026-11-01", "2026-12-01", 200)

    lines, complete = asyncio.run(read())
    assert complete
    assert sorted(p["state"] for p in seen) == sorted(["COMPLETED"] * 2 + list(EVERY_STATE))
    assert all(p["size"] == "100" for p in seen)
    assert sorted(p["page"] for p in seen if p["state"] == "COMPLETED") == ["0", "1", "2"]
    refunds = [x for x in lines if x.kind == "refund"]
    assert len(refunds) == 2 and all(x.amount == Decimal(1010) for x in refunds)
    assert {x.payout_ref for x in lines} >= {"T-0", "T-21"}
    assert sum(x.amount for x in lines if x.kind == "fee") == Decimal(-10) * 12


def test_a_service_without_a_list_says_to_use_a_statement_file() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(404, json={"message": "Not found", "status": "failed"})

    async def read() -> Any:
        async with PayoutClient("https://service.test", "k",
                                transport=httpx.MockTransport(handler)) as client:
            return await read_service_lines(client, "2026-11-01", "2026-12-01", 200)

    with pytest.raises(InputError) as refused:
        asyncio.run(read())
    assert "--statement" in (refused.value.hint or "")


# ------------------------------------------------------------------ a statement file


def test_a_statement_file_is_read_exactly_and_a_bad_line_is_named(tmp_path: Path) -> None:
    period = Period(datetime(2026, 11, 1).date(), datetime(2026, 11, 30).date(),
                    "Asia/Shanghai")
    good = tmp_path / "wallet.csv"
    good.write_text("Date,Type,Amount,Currency,Reference,Payout_ID,Description\n"
                    "2026-11-05,payout,-101000.50,ngn,R1,p1,=cmd\n"
                    "2026-11-05T10:00:00+08:00,fee,-1010.01,NGN,R1,p1,\n"
                    "2026-11-06,deposit,5000000,NGN,,,top-up\n", encoding="utf-8")
    lines = read_statement_file(good, period)
    assert [x.kind for x in lines] == ["payout", "fee", "other"]
    assert lines[0].amount == Decimal("-101000.50") and lines[0].currency == "NGN"
    assert lines[1].at == "2026-11-05T02:00:00.000000Z"
    assert period.day_of(lines[0].at).isoformat() == "2026-11-05"
    bad = tmp_path / "bad.csv"
    bad.write_text("date,type,amount,currency\n2026-11-05,payout,-1.0,NGN\n"
                   "2026-11-05,payout,twelve,NGN\n", encoding="utf-8")
    with pytest.raises(InputError) as refused:
        read_statement_file(bad, period)
    assert "line 3" in refused.value.message
    lacking = tmp_path / "lacking.csv"
    lacking.write_text("date,amount\n", encoding="utf-8")
    with pytest.raises(InputError) as refused:
        read_statement_file(lacking, period)
    assert "type" in refused.value.message


# ------------------------------------------------------------------------- vouchers


def closed_with(*payments: Any) -> Any:
    from batchpay.engine.books import ClosedPeriod

    day = datetime(2026, 11, 5).date()
    return ClosedPeriod(None, Period(day, day, "Asia/Shanghai"), list(payments), {})  # type: ignore[arg-type]


def payment(amount: str, fee: str, delivered: str, *, source: str = "NGN",
            target: str = "CNY", status: str = "COMPLETED", ref: str = "T-1") -> Any:
    from batchpay.engine.books import Payment
    from batchpay.engine.statement import Request

    request = Request(1, ref, "run-1", "2026-11-04T17:30:00.000000Z", status=status,
                      amount=Decimal(amount), fee=Decimal(fee),
                      total_debit=Decimal(amount) + Decimal(fee),
                      target_amount=Decimal(delivered), source_currency=source,
                      target_currency=target, reference_number="REF1", payout_id=f"p-{ref}",
                      status_at="2026-11-06T01:00:00.000000Z")
    return Payment(request, f"q-{ref}", "深圳市华强电子有限公司", "Goods", "")


def test_each_voucher_balances_and_rounding_goes_to_the_fx_difference() -> None:
    from batchpay.engine.vouchers import build_vouchers
    from batchpay.settings.model import Books

    books = Books(fees="6603.01", fx_difference="6603.02", wallet={"NGN": "1002.01"})
    paid = [payment("100000.50", "1000.01", "434.78", ref=f"T-{n}") for n in range(3)]
    refunded = payment("123457.89", "1234.57", "536.77", status="REFUNDED", ref="T-9")
    vouchers = build_vouchers(closed_with(*paid, refunded), books)
    assert len(vouchers) == 5
    assert all(v.balanced for v in vouchers)
    first = vouchers[0]
    assert first.day.isoformat() == "2026-11-05"  # 17:30 UTC is the 5th in Shanghai
    lines = {x.account: x for x in first.lines}
    assert lines["2202"].debit == Decimal("434.78") and lines["2202"].currency == "CNY"
    assert lines["1002.01"].original == Decimal("101000.51")
    assert lines["1002.01"].credit == (Decimal("101000.51") * lines["1002.01"].rate).quantize(
        Decimal("0.01"))
    assert not any(x.account == "6603.02" for x in first.lines)
    # at this size the rate's tenth decimal moves the fen: the difference is booked, not
    # dropped (credit 1504578.36 + fee at the rate exceeds the wallet's credit by 0.02)
    (large,) = build_vouchers(closed_with(payment("346308801.13", "1237.46", "1504578.36")),
                              books)
    assert large.balanced
    assert [(x.debit, x.credit) for x in large.lines if x.account == "6603.02"] == [
        (Decimal(0), Decimal("0.02"))]
    refund = vouchers[-1]
    assert refund.day.isoformat() == "2026-11-06"
    assert {x.account: x.debit for x in refund.lines}["1002.01"] > 0  # the money came back
    per_run = build_vouchers(closed_with(*paid), Books(voucher_per="run"))
    assert len(per_run) == 1 and per_run[0].balanced and len(per_run[0].lines) >= 9


def test_a_payout_in_no_base_currency_is_refused() -> None:
    from batchpay.engine.vouchers import build_vouchers
    from batchpay.settings.model import Books

    assert all(v.balanced for v in build_vouchers(
        closed_with(payment("500.00", "5.00", "3600.00", source="CNY", target="CNY")),
        Books()))
    from_base = build_vouchers(closed_with(payment("1000.00", "10.00", "138.50",
                                                   source="CNY", target="USD")), Books())
    assert from_base[0].balanced
    with pytest.raises(ConfigError) as refused:
        build_vouchers(closed_with(payment("1000.00", "10.00", "4.35", target="USD")),
                       Books())
    assert "base_currency" in (refused.value.hint or "")


def test_two_wallet_currencies_give_two_files_an_empty_day_none_and_reconcile_matches(
        service: Any, tmp_path: Path) -> None:
    from ofxtools.Parser import OFXTree

    sheet = write_sheet(tmp_path / "nov.xlsx", [
        row(1), row(2, source_currency="USD", amount=Decimal("250.00"))])
    assert batchpay("run", str(sheet), "--out", str(tmp_path / "r.xlsx"),
                    "--wait", "5").exit_code == 0
    settings_file(tmp_path, 'time_zone = "UTC"\n')
    today = datetime.now(UTC).date().isoformat()
    done = batchpay("export", "--from", today, "--to", today, "--format", "ofx",
                    "--out", str(tmp_path / "nov.ofx"))
    assert done.exit_code == 0, done
    for currency in ("NGN", "USD"):
        tree = OFXTree()
        tree.parse(str(tmp_path / f"nov-{currency}.ofx"))
        (statement,) = tree.convert().statements
        assert statement.curdef == currency and len(statement.transactions) == 2
    assert not (tmp_path / "nov.ofx").exists()
    camt = batchpay("export", "--from", today, "--to", today, "--format", "camt053",
                    "--out", str(tmp_path / "nov.xml"))
    assert camt.exit_code == 0, camt
    from lxml import etree

    from tests.engine.test_books_month import camt_schema

    document = etree.parse(str(tmp_path / "nov.xml"))
    xsd = etree.XMLSchema(etree.parse(str(camt_schema())))
    assert xsd.validate(document), xsd.error_log
    ns = {"c": "urn:iso:std:iso:20022:tech:xsd:camt.053.001.02"}
    ids = document.xpath("//c:Stmt/c:Id/text()", namespaces=ns)
    assert len(ids) == len(set(ids)) == 2
    assert document.xpath("//c:Stmt/c:Acct/c:Ccy/text()", namespaces=ns) == ["NGN", "USD"]
    # nothing moved outside batchpay: the service's list matches the journal, exit 0
    matched = batchpay("reconcile", "--from", today, "--to", today, "--out",
                       str(tmp_path / "reconciled.xlsx"))
    assert matched.exit_code == 0, matched
    assert "4 matched, 0 in the wallet only" in matched.stderr
    yesterday = (datetime.now(UTC).date() - timedelta(days=1)).isoformat()
    empty = batchpay("export", "--from", yesterday, "--to", yesterday, "--format", "camt053",
                     "--out", str(tmp_path / "empty.xml"))
    assert empty.exit_code == 0 and "no file written" in empty.stderr
    assert not (tmp_path / "empty.xml").exists()


def test_a_payout_of_a_request_in_doubt_is_named_as_batchpays_own(sandbox: Any,
                                                                    tmp_path: Path) -> None:
    """The service holds a payout whose answer the journal never got (UNKNOWN): reconcile
    still exits 1, but names it as this journal's request to sync, not as outside money."""
    from contextlib import contextmanager

    from batchpay.engine.reconcile import reconcile_period
    from batchpay.journal.store import Journal
    from batchpay.sandbox.checks import check_payout_request
    from batchpay.service import Service
    from batchpay.settings.model import Settings
    from tests.support.sandbox_calls import payout_request

    quote = sandbox.state.create_quote("BANK_TRANSFER", Decimal("100000.00"), "NGN", "NG",
                                       "CNY", "CN")
    body = payout_request(quote["id"])
    sandbox.state.create_payout(check_payout_request(body))
    path = tmp_path / "journal.sqlite3"
    with Journal(path) as j:
        j.bind_service(sandbox.url)
        attempt = j.record_intent("T-1", "run-1", "{}", dict(quote), body, 9e9,
                                  amount="100000.00", fee=str(quote["fee"]["amount"]),
                                  total_debit=str(quote["summary"]["total"]),
                                  source_currency="NGN", target_currency="CNY")
        j.record_answer(attempt, "lost", status="UNKNOWN", run_id="run-1")

    @contextmanager
    def connect() -> Any:
        yield Service(sandbox.url, sandbox.api_key, embedded=False)

    today = datetime.now(UTC).date()
    settings = Settings(base_url=sandbox.url, api_key=sandbox.api_key, journal=path)
    done = reconcile_period(settings, Period(today, today, "UTC"), tmp_path / "r.xlsx", None,
                            connect)
    assert done.exit_code == 1 and not done.matched
    assert {x.kind for x in done.outside} == {"payout", "fee"}
    assert all("in doubt" in x.description and x.payout_ref == "T-1" for x in done.outside)
    assert "batchpay sync" in "\n".join(done.summary_lines())


def test_the_readmes_books_settings_load(tmp_path: Path) -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Close the books", 1)[1]
    sample = section.split("```toml\n", 1)[1].split("```", 1)[0]
    settings = load_settings(env={}, files=[settings_file(tmp_path, sample)])
    assert settings.time_zone == "Asia/Shanghai"
    assert settings.books.wallet_account("USD") == "1002.02"
    assert settings.books.payee_account("深圳市华强电子有限公司", "Goods") == "2202.001"
    assert settings.books.payee_account("张三", "Salary November") == "2211"
