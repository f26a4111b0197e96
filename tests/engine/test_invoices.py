"""Invoice amounts through the CLI against the sandbox over real HTTP: a target_amount row is
paid at least its invoice and at most one source minor unit's worth more, counted at the
sandbox; both or neither amount is INVALID; limits are named; the Summary reconciles."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from tests.support.e2e import batchpay, by_ref, edit_results, sandbox_payouts, sandbox_stats
from tests.support.sheets import HEADERS, row, write_sheet

INVOICE_HEADERS = HEADERS + ["target_amount"]
BOUND = {"NGN": Decimal("0.01"), "USD": Decimal("0.08")}


def invoice(n: int, target: str, source: str = "NGN", **overrides: Any) -> dict[str, Any]:
    return row(n, amount=None, target_amount=Decimal(target), source_currency=source,
               **overrides)


def mixed_sheet(tmp_path: Path) -> tuple[Path, list[dict[str, Any]]]:
    """Amount rows and invoice rows, from NGN and USD wallets."""
    sheet_rows = [
        row(1),
        invoice(2, "12345.67"),
        invoice(3, "10.00"),
        row(4, amount=Decimal("1500.00"), source_currency="USD"),
        invoice(5, "499000.99", "USD"),
        invoice(6, "888.88", "USD"),
        invoice(7, "2436.50"),
        row(8),
    ]
    return write_sheet(tmp_path / "mixed.xlsx", sheet_rows, INVOICE_HEADERS), sheet_rows


@pytest.mark.parametrize(("rounding", "drift"), [("half-up", 0.0), ("down", 0.0),
                                                 ("up", 0.0), ("half-even", 0.002)])
def test_invoices_are_paid_never_short_and_within_the_bound(
        cli_sandbox: Any, tmp_path: Path, rounding: str, drift: float) -> None:
    service = cli_sandbox(settle_seconds=0.05, rounding=rounding, rate_drift=drift)
    sheet, sheet_rows = mixed_sheet(tmp_path)
    out = tmp_path / "out.xlsx"
    outcome = batchpay("run", str(sheet), "--wait", "5", "--out", str(out))
    assert outcome.exit_code == 0, outcome
    paid = {p["accountNumber"]: p for p in sandbox_payouts(service.url)}
    assert len(paid) == len(sheet_rows)  # one payout per row
    cells = by_ref(out)
    for r in sheet_rows:
        payout = paid[r["account_number"]]
        cell = cells[r["payout_ref"]]
        if r.get("target_amount") is None:
            assert Decimal(str(payout["sourceAmount"])) == r["amount"]
            assert cell["quotes_used"] is None
            continue
        delivered = Decimal(str(payout["targetAmount"]))
        assert delivered >= r["target_amount"], (r, payout)  # never short
        assert delivered - r["target_amount"] <= BOUND[r["source_currency"]], (r, payout)
        assert Decimal(str(cell["delivered_amount"])) == delivered
        assert Decimal(str(cell["target_amount"])) == r["target_amount"]  # as asked
        assert 1 <= cell["quotes_used"] <= 6
    summary = _summary_text(out)
    assert "Control totals reconcile" in summary and "DO NOT" not in summary
    quotes = sum(n for key, n in sandbox_stats(service.url)["requests"].items()
                 if key.startswith("POST /v1/quote"))
    used = sum(cells[r["payout_ref"]]["quotes_used"] or 1 for r in sheet_rows)
    assert quotes == used  # the workbook counts every quote a row took


def _summary_text(path: Path) -> str:
    import openpyxl

    wb = openpyxl.load_workbook(path, read_only=True)
    try:
        return "\n".join(" ".join(str(c) for c in r if c is not None)
                         for r in wb["Summary"].iter_rows(values_only=True))
    finally:
        wb.close()


def test_the_summary_shows_invoices_asked_delivered_and_overpaid(
        cli_sandbox: Any, tmp_path: Path) -> None:
    cli_sandbox(settle_seconds=0.05)
    sheet, _ = mixed_sheet(tmp_path)
    out = tmp_path / "out.xlsx"
    outcome = batchpay("run", str(sheet), "--wait", "5", "--out", str(out))
    assert outcome.exit_code == 0, outcome
    import openpyxl

    wb = openpyxl.load_workbook(out, read_only=True)
    lines = [r for r in wb["Summary"].iter_rows(values_only=True) if r and r[0]]
    wb.close()
    start = next(i for i, r in enumerate(lines) if r[0] == "Invoices (target_amount rows)")
    table = {(r[0], r[2]): r for r in lines[start + 2:]}
    ngn, usd = table[("NGN", "sent")], table[("USD", "sent")]
    assert ngn[1] == "CNY" and ngn[3] == 3
    assert Decimal(str(ngn[4])) == Decimal("14792.17")  # 12345.67 + 10.00 + 2436.50 asked
    assert Decimal(str(ngn[5])) - Decimal(str(ngn[4])) == Decimal(str(ngn[6])) >= 0
    assert usd[3] == 2 and Decimal(str(usd[4])) == Decimal("499889.87")
    assert 0 <= Decimal(str(usd[6])) <= 2 * BOUND["USD"]
    assert "Invoices from NGN: 3, asked 14,792.17 CNY, delivered" in outcome.stderr


@pytest.mark.parametrize(("cells", "words"), [
    ({"amount": Decimal("1000.00"), "target_amount": Decimal("50.00")},
     "amount and target_amount are both filled"),
    ({"amount": None, "target_amount": None}, "fill amount"),
    ({"amount": None, "target_amount": Decimal("50.005")}, "target_amount: 50.005 has 3 decimals"),
    ({"amount": None, "target_amount": Decimal("-5")}, "target_amount: must be more than 0"),
])
def test_both_neither_or_a_bad_target_amount_is_invalid(
        cli_sandbox: Any, tmp_path: Path, cells: dict[str, Any], words: str) -> None:
    service = cli_sandbox(settle_seconds=0.05)
    sheet = write_sheet(tmp_path / "bad.xlsx", [row(1, **cells), row(2)], INVOICE_HEADERS)
    outcome = batchpay("run", str(sheet), "--wait", "1", "--out", str(tmp_path / "o.xlsx"))
    assert outcome.exit_code == 1, outcome
    bad = by_ref(tmp_path / "o.xlsx")["T-00001"]
    assert bad["status"] == "INVALID" and words in bad["error"], bad["error"]
    assert sandbox_payouts(service.url) == []  # an invalid row holds the sheet back


@pytest.mark.parametrize(("target", "words"), [
    ("5.00", "below the service's minimum of 10 CNY"),
    ("600000.00", "above the service's maximum of 500000 CNY"),
])
def test_an_invoice_outside_the_service_limits_is_quote_failed_naming_the_limit(
        cli_sandbox: Any, tmp_path: Path, target: str, words: str) -> None:
    service = cli_sandbox(settle_seconds=0.05)
    sheet = write_sheet(tmp_path / "s.xlsx", [row(1), invoice(2, target)], INVOICE_HEADERS)
    outcome = batchpay("run", str(sheet), "--wait", "2", "--out", str(tmp_path / "o.xlsx"))
    assert outcome.exit_code == 1, outcome
    cell = by_ref(tmp_path / "o.xlsx")["T-00002"]
    assert cell["status"] == "QUOTE_FAILED" and words in cell["error"], cell["error"]
    assert [p["accountNumber"] for p in sandbox_payouts(service.url)] == [row(1)["account_number"]]


def test_a_dry_run_finds_every_invoice_and_a_rerun_pays_it(cli_sandbox: Any,
                                                           tmp_path: Path) -> None:
    service = cli_sandbox(settle_seconds=0.05)
    sheet = write_sheet(tmp_path / "s.xlsx", [invoice(1, "12345.67"), invoice(2, "99.99", "USD"),
                                             row(3, bank_name=None)], INVOICE_HEADERS)
    dry = batchpay("run", str(sheet), "--dry-run", "--skip-invalid",
                   "--out", str(tmp_path / "dry.xlsx"))
    assert dry.exit_code == 1, dry  # row 3 is invalid
    cells = by_ref(tmp_path / "dry.xlsx")
    assert cells["T-00001"]["status"] == "NOT_SENT"
    assert Decimal(str(cells["T-00001"]["delivered_amount"])) >= Decimal("12345.67")
    assert cells["T-00001"]["total_debit"] > 0 and cells["T-00001"]["quotes_used"] >= 1
    assert sandbox_payouts(service.url) == []
    first = batchpay("run", str(sheet), "--skip-invalid", "--wait", "5",
                     "--out", str(tmp_path / "first.xlsx"))
    assert first.exit_code == 1, first
    edit_results(tmp_path / "first.xlsx", "T-00003", bank_name="中国银行")
    again = batchpay("rerun", str(tmp_path / "first.xlsx"), "--wait", "5",
                     "--out", str(tmp_path / "again.xlsx"))
    assert again.exit_code == 0, again
    paid = sandbox_payouts(service.url)
    assert len(paid) == 3
    final = by_ref(tmp_path / "again.xlsx")
    assert Decimal(str(final["T-00002"]["target_amount"])) == Decimal("99.99")
    assert Decimal(str(final["T-00002"]["delivered_amount"])) >= Decimal("99.99")
