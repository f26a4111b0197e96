"""The books on the auditor's Statement page, over HTTP with real sessions after a real
payment through the console against a sandbox over real HTTP: each export's link downloads
the file `batchpay export` writes for the same period (read back by independent readers:
ofxtools, csv, lxml against the ISO schema, openpyxl), Reconcile reads the service's list
and names a payment made outside batchpay straight at the service's API, and the refusals
are the commands' (a journal changed outside batchpay, a service without a list), never a
traceback. A maker alone reads none of it. The last test walks the page on a phone's width
in Debian's Chromium."""

from __future__ import annotations

import csv
import io
import re
import xml.etree.ElementTree as ET
from decimal import Decimal
from pathlib import Path
from typing import Any
from urllib.parse import quote

import openpyxl
import pytest

from tests.console.conftest import Desk, Signed
from tests.console.test_browser import Served, browser, served  # noqa: F401 - fixtures
from tests.console.test_statement_page import COLUMNS, FROM, TO, cells, number, paid, tamper  # noqa: F401
from tests.engine.test_books_month import camt_schema
from tests.support.e2e import batchpay, sandbox_payouts
from tests.support.sandbox_calls import api, pay

pytestmark = pytest.mark.slow

# the page's accessible name and the file's suffix, per `batchpay export --format`
NAMES = {"ofx": ("OFX", ".ofx"), "xero": ("Xero CSV", ".csv"), "camt053": ("camt.053", ".xml"),
         "kingdee": ("Kingdee vouchers", ".xlsx"), "yonyou": ("Yonyou vouchers", ".xlsx"),
         "journal": ("Double-entry CSV", ".csv")}
CAMT = {"c": "urn:iso:std:iso:20022:tech:xsd:camt.053.001.02"}
OVERFLOW = "document.documentElement.scrollWidth <= window.innerWidth"
VOUCHER_COLUMNS = {"kingdee": ("凭证号", "借方", "贷方"), "yonyou": ("凭证号", "借方金额", "贷方金额")}


def links(html: str, prefix: str) -> dict[str, str]:
    """The page's download links under `prefix`: accessible name -> address."""
    return {name: href.replace("&amp;", "&") for href, name in re.findall(
        rf'<a href="({re.escape(prefix)}[^"]*)" download>([^<]+)</a>', html)}


def statement_page(signed: Signed) -> str:
    page = signed.http.get(f"/statement?from={FROM}&to={TO}")
    assert page.status_code == 200, page.text
    return page.text


def ngn_totals(html: str) -> dict[str, str]:
    return dict(zip(COLUMNS, cells(html, "Totals per currency")[1], strict=True))


def ofx_transactions(data: bytes, tmp_path: Path, name: str, currency: str = "NGN"
                     ) -> list[tuple[str, Decimal]]:
    from ofxtools.Parser import OFXTree

    path = tmp_path / name
    path.write_bytes(data)
    parser = OFXTree()
    parser.parse(str(path))
    (statement,) = parser.convert().statements
    assert statement.curdef == currency
    return [(t.fitid, t.trnamt) for t in statement.transactions]


def camt_entries(data: bytes) -> list[tuple[str, str, str]]:
    from lxml import etree

    xsd = etree.XMLSchema(etree.parse(str(camt_schema())))
    assert xsd.validate(etree.fromstring(data)), xsd.error_log
    root = ET.fromstring(data)
    return [(e.findtext("c:Amt", namespaces=CAMT) or "",
             e.findtext("c:CdtDbtInd", namespaces=CAMT) or "",
             e.findtext(".//c:AcctSvcrRef", namespaces=CAMT) or "")
            for e in root.iter(f"{{{CAMT['c']}}}Ntry")]


def grid(data: bytes) -> list[tuple[Any, ...]]:
    book = openpyxl.load_workbook(io.BytesIO(data), read_only=True)
    rows = [tuple(r) for r in book.active.iter_rows(values_only=True)]
    book.close()
    return rows


def csv_rows(data: bytes, encoding: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(data.decode(encoding), newline="")))


def test_each_export_downloads_reads_back_and_is_the_commands(
        paid: tuple[Desk, str, str], tmp_path: Path) -> None:  # noqa: F811
    desk, _, _ = paid
    auditor = desk.client("ada")
    page = statement_page(auditor)
    found = links(page, "/statement/books/")
    assert list(found) == [name for name, _ in NAMES.values()]
    ngn = ngn_totals(page)
    moved = number(ngn["wallet after"]) - number(ngn["wallet before"])
    assert moved == -number(ngn["net debit"]) and moved < 0

    for fmt, (name, suffix) in NAMES.items():
        answer = auditor.http.get(found[name])
        assert answer.status_code == 200, (name, answer.text[:500])
        file_name = f"books-{fmt}-{FROM}-{TO}{suffix}"
        assert answer.headers["content-disposition"] == (
            f"attachment; filename=\"{file_name}\"; filename*=UTF-8''{quote(file_name)}")
        out = tmp_path / f"by-the-command-{fmt}{suffix}"
        made = batchpay("export", "--from", FROM, "--to", TO, "--format", fmt, "--out",
                        str(out))
        assert made.exit_code == 0, made
        theirs, ours = out.read_bytes(), answer.content
        if fmt == "ofx":
            got = ofx_transactions(ours, tmp_path, "page.ofx")
            assert got == ofx_transactions(theirs, tmp_path, "command.ofx")
            assert len(got) == 25 + 25  # a payout and its fee each
            assert sum(amount for _, amount in got) == moved
        elif fmt == "camt053":
            got_entries = camt_entries(ours)
            assert got_entries == camt_entries(theirs) and len(got_entries) == 50
        elif fmt in VOUCHER_COLUMNS:
            rows = grid(ours)
            assert rows == grid(theirs)
            number_at, debit_at, credit_at = (rows[0].index(c) for c in VOUCHER_COLUMNS[fmt])
            vouchers: dict[Any, Decimal] = {}
            for line in rows[1:]:
                vouchers[line[number_at]] = vouchers.get(line[number_at], Decimal(0)) + \
                    Decimal(str(line[debit_at] or 0)) - Decimal(str(line[credit_at] or 0))
            assert vouchers and all(v == 0 for v in vouchers.values()), vouchers
        else:
            encoding = "utf-8-sig" if fmt == "journal" else "utf-8"
            rows_read = csv_rows(ours, encoding)
            assert ours == theirs and rows_read
            if fmt == "xero":
                assert sum(Decimal(r["Amount"]) for r in rows_read) == moved
                assert {r["Reference"] for r in rows_read} == {
                    p["referenceNumber"] for p in sandbox_payouts(desk.sandbox.url)}
            else:
                assert sum(Decimal(r["debit"] or 0) for r in rows_read) == sum(
                    Decimal(r["credit"] or 0) for r in rows_read)
    assert auditor.http.get(f"/statement/books/pdf?from={FROM}&to={TO}").status_code == 409


def test_reconcile_names_a_payment_made_outside_batchpay(
        paid: tuple[Desk, str, str]) -> None:  # noqa: F811
    desk, _, _ = paid
    approver = desk.client("abe")
    page = statement_page(approver)
    form = re.search(r'<form method="get" action="/statement/reconcile">.*?</form>', page, re.S)
    assert form and "Reconcile</button>" in form.group(0)
    fields = dict(re.findall(r'name="([^"]+)" value="([^"]*)"', form.group(0)))
    assert fields == {"from": FROM, "to": TO}

    clean = approver.http.get("/statement/reconcile", params=fields)
    assert clean.status_code == 200, clean.text
    assert "Everything matched</strong>: 50 matched, 0 outside batchpay, 0 not in the " \
        "wallet" in clean.text
    assert ngn_totals(clean.text)["payouts"] == "25"  # the statement stays on the page

    # someone pays from the provider's dashboard, straight at the service's API
    with api(desk.sandbox) as client:
        outside = pay(client, amount=123456)
    assert len(sandbox_payouts(desk.sandbox.url)) == 26
    found = approver.http.get("/statement/reconcile", params=fields)
    assert found.status_code == 200, found.text
    said = " ".join(re.sub(r"<[^>]+>", " ", found.text).split())
    assert "Not everything matched : 50 matched, 2 outside batchpay, 0 not in the wallet" \
        in said, said[-1500:]
    assert f"reference {outside['referenceNumber']} payout {outside['id']}" in said

    workbook = links(found.text, "/statement/reconciliation")
    assert list(workbook) == ["Reconciliation workbook"]
    download = approver.http.get(workbook["Reconciliation workbook"])
    assert download.status_code == 200
    file_name = f"reconcile-{FROM}-{TO}.xlsx"
    assert f'filename="{file_name}"' in download.headers["content-disposition"]
    book = openpyxl.load_workbook(io.BytesIO(download.content), read_only=True)
    outside_rows = list(book["Outside batchpay"].iter_rows(values_only=True))
    header = outside_rows[0]
    references = {dict(zip(header, r, strict=True))["reference_number"]
                  for r in outside_rows[1:]}
    assert references == {outside["referenceNumber"]}
    assert len(list(book["Matched"].iter_rows(values_only=True))) == 1 + 50
    book.close()


def test_a_tampered_journal_is_refused_by_every_link(
        paid: tuple[Desk, str, str]) -> None:  # noqa: F811
    desk, _, _ = paid
    tamper(desk)
    auditor = desk.client("ada")
    for path in ("/statement/books/ofx", "/statement/books/kingdee", "/statement/reconcile",
                 "/statement/reconciliation"):
        refused = auditor.http.get(f"{path}?from={FROM}&to={TO}")
        assert refused.status_code == 409, path
        assert "changed outside batchpay" in refused.text, path
        assert "Traceback" not in refused.text and 'role="alert"' in refused.text


def test_a_service_without_a_list_is_told_to_use_a_statement_file(
        paid: tuple[Desk, str, str]) -> None:  # noqa: F811
    """The month paid, then the console on the same journal with a list path the service
    does not have (a 404, as on an account that offers no list)."""
    import dataclasses

    from batchpay.console.app import create_app
    from batchpay.provider.endpoints import Paths

    desk, _, _ = paid
    settings = dataclasses.replace(desk.settings, paths=Paths(transactions="/v1/no-such-list"))
    listless = Desk(create_app(settings, allowed_hosts={"testserver"}, https=False),
                    settings, desk.sandbox)
    auditor = listless.client("ada")
    assert "Reconcile</button>" in statement_page(auditor)
    for path in ("/statement/reconcile", "/statement/reconciliation"):
        refused = auditor.http.get(f"{path}?from={FROM}&to={TO}")
        assert refused.status_code == 409, refused.text
        assert "no transaction list" in refused.text and "--statement FILE" in refused.text
        assert "Traceback" not in refused.text and 'role="alert"' in refused.text
    # the exports need no list
    assert auditor.http.get(f"/statement/books/journal?from={FROM}&to={TO}").status_code == 200


@pytest.mark.parametrize(("user", "may"), [("ada", True), ("abe", True), ("owner", True),
                                           ("mia", False)])
def test_a_maker_alone_gets_no_books(paid: tuple[Desk, str, str], user: str,  # noqa: F811
                                     may: bool) -> None:
    desk, _, _ = paid
    signed = desk.client(user)
    for path in ("/statement/books/journal", "/statement/reconcile",
                 "/statement/reconciliation"):
        answer = signed.http.get(f"{path}?from={FROM}&to={TO}")
        if may:
            assert answer.status_code == 200, (path, answer.text[:300])
        else:
            assert answer.status_code == 403 and "auditors, approvers" in answer.text, path


def test_the_books_on_a_phone(browser: Any, served: Served,  # noqa: F811
                              tmp_path: Path) -> None:
    """The Statement page with its export links and Reconcile in Debian's Chromium, 375 px
    wide: every link there by its name, a download named as the command names it, the
    reconciliation said on the page, and no page wider than the screen."""

    from playwright.sync_api import expect

    from tests.console.test_browser import shot
    from tests.console.test_statement_browser import pay_the_sample, statement_on_a_phone

    pay_the_sample(served, tmp_path)
    page = statement_on_a_phone(browser, served)
    for name, _ in NAMES.values():
        expect(page.get_by_role("link", name=name, exact=True)).to_be_visible()
    assert page.evaluate(OVERFLOW), page.evaluate("document.documentElement.scrollWidth")

    with page.expect_download() as download:
        page.get_by_role("link", name="Double-entry CSV", exact=True).click()
    assert download.value.suggested_filename == f"books-journal-{FROM}-{TO}.csv"
    saved = tmp_path / download.value.suggested_filename
    download.value.save_as(saved)
    with open(saved, encoding="utf-8-sig", newline="") as handle:
        assert len(list(csv.DictReader(handle))) > 0

    page.get_by_role("button", name="Reconcile").click()
    said = page.get_by_role("status", name="Reconciliation")
    expect(said).to_contain_text("Everything matched")
    expect(said).to_contain_text("50 matched, 0 outside batchpay, 0 not in the wallet")
    assert page.evaluate(OVERFLOW), page.evaluate("document.documentElement.scrollWidth")
    shot(page, "console-books", tmp_path)
    with page.expect_download() as download:
        page.get_by_role("link", name="Reconciliation workbook").click()
    assert download.value.suggested_filename == f"reconcile-{FROM}-{TO}.xlsx"
    page.context.close()


def test_a_period_of_two_currencies_downloads_a_zip_of_the_commands_files(
        paid: tuple[Desk, str, str], tmp_path: Path) -> None:  # noqa: F811
    """The NGN month and a USD payout: OFX and Xero CSV come as a zip holding each
    currency's file, byte for byte the files the command writes; the others stay one file."""
    import zipfile

    from tests.support.sheets import row, write_sheet

    desk, _, _ = paid
    sheet = write_sheet(tmp_path / "usd.xlsx", [row(901, source_currency="USD",
                                                   amount=Decimal("150.00"))])
    usd = batchpay("run", str(sheet), "--out", str(tmp_path / "usd-results.xlsx"), "--wait", "10")
    assert usd.exit_code == 0, usd
    auditor = desk.client("ada")
    found = links(statement_page(auditor), "/statement/books/")
    for fmt in ("ofx", "xero"):
        name, suffix = NAMES[fmt]
        answer = auditor.http.get(found[name])
        assert answer.status_code == 200, answer.text[:500]
        file_name = f"books-{fmt}-{FROM}-{TO}.zip"
        assert f'filename="{file_name}"' in answer.headers["content-disposition"]
        made = batchpay("export", "--from", FROM, "--to", TO, "--format", fmt, "--out",
                        str(tmp_path / f"books-{fmt}-{FROM}-{TO}{suffix}"))
        assert made.exit_code == 0, made
        with zipfile.ZipFile(io.BytesIO(answer.content)) as bundle:
            held = {n: bundle.read(n) for n in bundle.namelist()}
        assert sorted(held) == [f"books-{fmt}-{FROM}-{TO}-{c}{suffix}" for c in ("NGN", "USD")]
        for member, data in held.items():
            if fmt == "xero":
                assert data == (tmp_path / member).read_bytes(), member
            else:
                currency = member[-len("XXX.ofx"):-len(".ofx")]
                got = ofx_transactions(data, tmp_path, "page-" + member, currency)
                assert got and got == ofx_transactions((tmp_path / member).read_bytes(),
                                                       tmp_path, "read-" + member, currency)
    single = auditor.http.get(found["Double-entry CSV"])
    assert single.status_code == 200 and "USD" in single.content.decode("utf-8-sig")
