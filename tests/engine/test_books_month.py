"""Closing a month on the sandbox: a payout that failed and was refunded, fees, and a payment
made outside batchpay directly at the service. Every export is read back by an independent
reader and summed against the statement and the wallet; `reconcile` names the outside
payment. Figures are counted at the sandbox over real HTTP, cells read from the files."""

from __future__ import annotations

import csv
import time
import xml.etree.ElementTree as ET
from decimal import Decimal
from pathlib import Path
from typing import Any

import openpyxl
import pytest
from ofxtools.Parser import OFXTree

from tests.engine.test_statement import cents, sheet_rows, today, wallet
from tests.support.e2e import batchpay, by_ref, edit_results, sandbox_payouts
from tests.support.sandbox_calls import api, pay
from tests.support.sheets import row, write_sheet
from tests.support.timing import settled

HOSTILE = "=HYPERLINK(\"http://x\",\"y\")"
BOOKS_TOML = """
time_zone = "UTC"
[books]
base_currency = "CNY"
voucher_per = "payout"
payable = "2202"
fees = "6603.01"
fx_difference = "6603.02"
[books.wallet]
NGN = "1002.01"
[books.reason]
"Invoice INV-00001" = "2202.99"
"""


@pytest.fixture(scope="module")
def month(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """One month, made once for the tests of this module (a run, a refund, an outside
    payment, a rerun), with the sandbox kept running."""
    from batchpay.sandbox.config import SandboxConfig
    from batchpay.sandbox.server import start_in_thread

    folder = tmp_path_factory.mktemp("month")
    running = start_in_thread(SandboxConfig(port=0, settle_seconds=0.05,
                                            state_path=folder / "sandbox.sqlite3"))
    env = {"BATCHPAY_BASE_URL": running.url, "BATCHPAY_API_KEY": running.api_key,
           "BATCHPAY_JOURNAL": str(folder / "journal" / "journal.sqlite3"),
           "XDG_CONFIG_HOME": str(folder / "config"), "XDG_DATA_HOME": str(folder / "data")}
    settings = folder / "config" / "batchpay" / "batchpay.toml"
    settings.parent.mkdir(parents=True)
    settings.write_text(BOOKS_TOML, encoding="utf-8")
    try:
        yield _make_month(folder, running, env)
    finally:
        running.stop()


class Month:
    def __init__(self, folder: Path, url: str, env: dict[str, str], before: Decimal,
                 after: Decimal, outside: dict[str, Any]) -> None:
        self.folder, self.url, self.env = folder, url, env
        self.before, self.after, self.outside = before, after, outside

    def run(self, *args: str) -> Any:
        return batchpay(*args, env=self.env)

    def export(self, fmt: str, name: str) -> Any:
        out = self.folder / name
        done = self.run("export", "--from", today(), "--to", today(), "--format", fmt,
                        "--out", str(out), "--overwrite")
        assert done.exit_code == 0, done
        return out, done


def _make_month(folder: Path, running: Any, env: dict[str, str]) -> Month:
    def run(*args: str) -> Any:
        return batchpay(*args, env=env)

    before = wallet(running.url)
    sheet = write_sheet(folder / "nov.xlsx", [row(1), row(2, remark="fail"),
                                              row(3, recipient_name=HOSTILE)])
    first = folder / "first.xlsx"
    assert run("run", str(sheet), "--out", str(first), "--wait", "10").exit_code == 1
    deadline = time.monotonic() + 10
    while by_ref(first)["T-00002"]["status"] != "REFUNDED" and time.monotonic() < deadline:
        time.sleep(0.2)
        run("sync", "--out", str(first), "--overwrite")
    assert by_ref(first)["T-00002"]["status"] == "REFUNDED"
    # someone pays from the provider's dashboard (straight at the service's API)
    with api(running) as client:
        outside = pay(client, amount=123456)
    edit_results(first, "T-00002", remark=None, account_number="6222000000000000777")
    second = folder / "second.xlsx"
    assert run("rerun", str(first), "--out", str(second), "--wait", "10").exit_code == 0
    settled(running.url)  # every refund credited at the sandbox
    return Month(folder, running.url, env, before, wallet(running.url), outside)


def statement_totals(month: Month) -> dict[str, Any]:
    out = month.folder / "statement.xlsx"
    made = month.run("statement", "--from", today(), "--to", today(), "--out", str(out),
                     "--overwrite")
    assert made.exit_code == 0, made
    return next(r for r in sheet_rows(out, "Totals") if r["source_currency"] == "NGN")


def outside_total(month: Month) -> Decimal:
    return Decimal(str(month.outside["quote"]["summary"]["total"]))


def test_ofx_parses_with_ofxtools_and_sums_to_the_wallets_movement(month: Month) -> None:
    out, done = month.export("ofx", "nov.ofx")
    parser = OFXTree()
    parser.parse(str(out))
    ofx = parser.convert()
    (statement,) = ofx.statements
    assert statement.curdef == "NGN"
    moved = sum(t.trnamt for t in statement.transactions)
    # the wallet moved by batchpay's movements and the outside payment, to the cent
    assert moved - outside_total(month) == month.after - month.before
    totals = statement_totals(month)
    assert moved == -Decimal(str(totals["net_debit"])).quantize(Decimal("0.01"))
    assert statement.ledgerbal.balamt == month.after
    kinds = [t.fitid.rsplit("-", 1)[1] for t in statement.transactions]
    # 4 payouts with 4 fees, 1 refund (the failed one, given back whole)
    assert kinds.count("P") == 4 and kinds.count("F") == 4 and kinds.count("R") == 1
    refund = next(t for t in statement.transactions if t.fitid.endswith("-R"))
    failed = next(p for p in sandbox_payouts(month.url) if p["state"] == "REFUNDED")
    assert refund.fitid == failed["id"].replace("-", "") + "-R"
    # FITIDs are stable: the same payout gives the same ids in a second export
    again, _ = month.export("ofx", "nov-again.ofx")
    parser.parse(str(again))
    assert [t.fitid for t in parser.convert().statements[0].transactions] == [
        t.fitid for t in statement.transactions]
    assert "Export: nov.ofx" in done.stdout or str(out) in done.stdout


def test_xero_csv_reads_back_with_text_kept_as_text(month: Month) -> None:
    out, _ = month.export("xero", "nov-xero.csv")
    with open(out, encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert list(rows[0]) == ["Date", "Amount", "Payee", "Description", "Reference"]
    total = sum(Decimal(r["Amount"]) for r in rows)
    assert total - outside_total(month) == month.after - month.before
    payees = {r["Payee"] for r in rows}
    assert "'" + HOSTILE in payees and HOSTILE not in payees  # never a formula
    assert all(r["Date"].count("/") == 2 for r in rows)
    ours = {p["referenceNumber"] for p in sandbox_payouts(month.url)
            if p["id"] != month.outside["id"]}
    assert {r["Reference"] for r in rows} == ours


def test_camt053_validates_against_the_iso_schema_and_reads_back(month: Month) -> None:
    out, _ = month.export("camt053", "nov.xml")
    from lxml import etree

    xsd = etree.XMLSchema(etree.parse(str(camt_schema())))
    document = etree.parse(str(out))
    assert xsd.validate(document), xsd.error_log
    ns = {"c": "urn:iso:std:iso:20022:tech:xsd:camt.053.001.02"}
    root = ET.parse(out).getroot()
    (stmt,) = root.findall("c:BkToCstmrStmt/c:Stmt", ns)
    assert stmt.findtext("c:Acct/c:Ccy", namespaces=ns) == "NGN"
    signed = Decimal(0)
    for entry in stmt.findall("c:Ntry", ns):
        amount = Decimal(entry.findtext("c:Amt", namespaces=ns) or "")
        signed += amount if entry.findtext("c:CdtDbtInd", namespaces=ns) == "CRDT" else -amount
    assert signed - outside_total(month) == month.after - month.before
    balances = {b.findtext("c:Tp/c:CdOrPrtry/c:Cd", namespaces=ns):
                Decimal(b.findtext("c:Amt", namespaces=ns) or "")
                for b in stmt.findall("c:Bal", ns)}
    assert balances == {"OPBD": month.before, "CLBD": month.after}
    names = [n.text for n in stmt.iter(f"{{{ns['c']}}}Nm")]
    assert HOSTILE in names


# The ISO 20022 camt.053.001.02 schema (BankToCustomerStatementV02, as ISO publishes it;
# this copy as the camt053 package, Apache-2.0 OR MIT, ships it): the exports are checked
# against the standard, not against our own reading of it.
CAMT_SCHEMA = Path(__file__).resolve().parents[1] / "support" / "schemas" / "camt.053.001.02.xsd"


def camt_schema() -> Path:
    return CAMT_SCHEMA


def test_the_camt_schema_is_there_to_check_against() -> None:
    assert CAMT_SCHEMA.is_file()
    assert 'targetNamespace="urn:iso:std:iso:20022:tech:xsd:camt.053.001.02"' in \
        CAMT_SCHEMA.read_text(encoding="utf-8")


@pytest.mark.parametrize("layout,columns", [
    ("kingdee", ("凭证号", "科目代码", "借方", "贷方", "原币金额", "币别代码")),
    ("yonyou", ("凭证号", "科目编码", "借方金额", "贷方金额", "外币借方金额", "外币贷方金额")),
])
def test_every_voucher_balances_and_its_totals_equal_the_statements(
        month: Month, layout: str, columns: tuple[str, ...]) -> None:
    number, account, debit, credit, *_ = columns
    out, done = month.export(layout, f"nov-{layout}.xlsx")
    wb = openpyxl.load_workbook(out)
    assert [c for s in wb for r in s.iter_rows() for c in r if c.data_type == "f"] == []
    grid = list(wb.active.iter_rows(values_only=True))
    header = list(grid[0])
    lines = [dict(zip(header, r, strict=True)) for r in grid[1:]]
    by_voucher: dict[Any, list[dict[str, Any]]] = {}
    for line in lines:
        by_voucher.setdefault(line[number], []).append(line)
    assert len(by_voucher) == 4 + 1  # one per payout, one for the refund
    for entries in by_voucher.values():
        assert cents(sum(Decimal(str(e[debit])) for e in entries)) == cents(
            sum(Decimal(str(e[credit])) for e in entries))
    totals = statement_totals(month)

    def original(line: dict[str, Any]) -> Decimal:
        if layout == "kingdee":
            sign = 1 if line[debit] else -1
            return sign * Decimal(str(line["原币金额"]))
        if line["外币借方金额"]:
            return Decimal(str(line["外币借方金额"]))
        return -Decimal(str(line["外币贷方金额"] or 0))

    wallet_net = sum(original(x) for x in lines if x[account] == "1002.01")
    fees = sum(original(x) for x in lines if x[account] == "6603.01")
    assert cents(-wallet_net) == cents(totals["net_debit"])
    assert cents(fees) == cents(totals["fees"])
    assert "2202.99" in {x[account] for x in lines}  # the reason's own account
    assert "5 voucher(s)" in done.stderr


def test_one_voucher_per_run_when_the_books_say_so(month: Month) -> None:
    config = month.folder / "per-run" / "batchpay"
    config.mkdir(parents=True, exist_ok=True)
    (config / "batchpay.toml").write_text(
        BOOKS_TOML.replace('voucher_per = "payout"', 'voucher_per = "run"'), encoding="utf-8")
    out = month.folder / "per-run.xlsx"
    done = batchpay("export", "--from", today(), "--to", today(), "--format", "kingdee",
                    "--out", str(out), "--overwrite",
                    env={**month.env, "XDG_CONFIG_HOME": str(config.parent)})
    assert done.exit_code == 0, done
    grid = list(openpyxl.load_workbook(out).active.iter_rows(values_only=True))
    header = list(grid[0])
    vouchers: dict[Any, Decimal] = {}
    for r in grid[1:]:
        line = dict(zip(header, r, strict=True))
        vouchers[line["凭证号"]] = vouchers.get(line["凭证号"], Decimal(0)) + Decimal(
            str(line["借方"])) - Decimal(str(line["贷方"]))
    # the first run, its refund, and the rerun
    assert len(vouchers) == 3
    assert all(cents(v) == 0 for v in vouchers.values())


def test_journal_csv_is_balanced_double_entry(month: Month) -> None:
    out, _ = month.export("journal", "nov-journal.csv")
    with open(out, encoding="utf-8-sig", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert list(rows[0]) == ["date", "account", "debit", "credit", "currency", "memo",
                             "payout_ref", "reference"]
    debits = sum(Decimal(r["debit"] or 0) for r in rows)
    credits = sum(Decimal(r["credit"] or 0) for r in rows)
    assert debits == credits
    wallet_net = sum(Decimal(r["debit"] or 0) - Decimal(r["credit"] or 0)
                     for r in rows if r["account"] == "1002.01")
    assert wallet_net - outside_total(month) == month.after - month.before


def test_reconcile_names_the_outside_payment_and_explains_the_gap(month: Month) -> None:
    out = month.folder / "reconcile.xlsx"
    done = month.run("reconcile", "--from", today(), "--to", today(), "--out", str(out),
                     "--overwrite")
    assert done.exit_code == 1, done
    reference = month.outside["referenceNumber"]
    assert reference in done.stderr
    outside = sheet_rows(out, "Outside batchpay")
    assert {r["reference_number"] for r in outside} == {reference}
    assert cents(-sum(Decimal(str(r["amount"])) for r in outside)) == outside_total(month)
    assert sheet_rows(out, "Not in wallet") == [] and sheet_rows(out, "Amounts differ") == []
    assert len(sheet_rows(out, "Matched")) == 4 + 4 + 1
    gap = [r for r in sheet_rows(out, "Gap") if r["currency"] == "NGN"]
    said = {r["line"]: Decimal(str(r["amount"])) for r in gap}
    assert cents(said["movement minus net debit"]) == outside_total(month)
    assert said["not explained by the lines above"] == 0
    assert any(reference in line for line in said)


def test_reconcile_from_a_statement_file_matches_once_the_outside_payment_is_gone(
        month: Month) -> None:
    """The wallet's statement as the provider's dashboard exports it: with the outside
    payment, exit 1; with it removed, everything matches and the exit is 0."""
    lines = [("date", "type", "amount", "currency", "reference", "payout_id", "description")]
    for p in sandbox_payouts(month.url):
        fee = fee_of(month, p["id"])
        lines.append((today(), "payout", f"-{p['sourceAmount']}", "NGN", p["referenceNumber"],
                      p["id"], p["remark"] or ""))
        lines.append((today(), "fee", f"-{fee}", "NGN", p["referenceNumber"], p["id"], ""))
        if p["state"] == "REFUNDED":
            lines.append((today(), "refund", str(Decimal(str(p["sourceAmount"])) + fee), "NGN",
                          p["referenceNumber"], p["id"], ""))
    full, without = month.folder / "wallet.csv", month.folder / "wallet-without.csv"
    write_csv(full, lines)
    write_csv(without, [x for x in lines if x[5] != month.outside["id"]])
    with_it = month.run("reconcile", "--from", today(), "--to", today(), "--statement",
                        str(full), "--out", str(month.folder / "r1.xlsx"), "--overwrite")
    assert with_it.exit_code == 1 and month.outside["referenceNumber"] in with_it.stderr
    clean = month.run("reconcile", "--from", today(), "--to", today(), "--statement",
                      str(without), "--out", str(month.folder / "r2.xlsx"), "--overwrite")
    assert clean.exit_code == 0, clean
    assert "9 matched" in clean.stderr
    # a payout of the journal that the wallet never shows: named, exit 1
    gone = next(p for p in sandbox_payouts(month.url) if p["state"] == "COMPLETED")
    short = month.folder / "wallet-short.csv"
    write_csv(short, [x for x in lines if x[5] not in (month.outside["id"], gone["id"])])
    out = month.folder / "r3.xlsx"
    missing = month.run("reconcile", "--from", today(), "--to", today(), "--statement",
                        str(short), "--out", str(out), "--overwrite")
    assert missing.exit_code == 1 and gone["referenceNumber"] in missing.stderr
    assert {(r["kind"], r["reference_number"]) for r in sheet_rows(out, "Not in wallet")} == {
        ("payout", gone["referenceNumber"]), ("fee", gone["referenceNumber"])}


def fee_of(month: Month, payout_id: str) -> Decimal:
    import httpx

    answer = httpx.get(f"{month.url}/v1/transaction/{payout_id}",
                       headers={"X-API-KEY": "sandbox-key"}, timeout=10)
    return Decimal(str(answer.json()["data"]["quote"]["fee"]["amount"]))


def write_csv(path: Path, lines: list[tuple[str, ...]]) -> None:
    with open(path, "w", encoding="utf-8", newline="") as handle:
        csv.writer(handle).writerows(lines)
