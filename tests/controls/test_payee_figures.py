"""What `batchpay payees` and a changed payee's hold message say was paid: the source
amount per wallet currency and what the recipient got (CNY) apart, never one summed under
the other's currency (an invoice row's sheet amount is CNY, its debit USD)."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from tests.support.e2e import batchpay, by_ref, sandbox_payouts
from tests.support.sheets import HEADERS, row, write_sheet

INVOICE_HEADERS = ["payee_id", *HEADERS, "target_amount"]


@pytest.fixture
def service(cli_sandbox: Any) -> Any:
    return cli_sandbox(settle_seconds=0.05)


def test_payees_shows_source_paid_and_cny_delivered_apart(service: Any, tmp_path: Path) -> None:
    invoice = row(1, payee_id="SUP-1", amount=None, target_amount=Decimal("8411.05"),
                  source_currency="USD")
    salary = row(2, payee_id="SUP-2")
    sheet = write_sheet(tmp_path / "nov.xlsx", [invoice, salary], INVOICE_HEADERS)
    assert batchpay("run", str(sheet), "--out", str(tmp_path / "nov-r.xlsx"),
                    "--wait", "5").exit_code == 0
    paid = {p["accountNumber"]: p for p in sandbox_payouts(service.url)}
    listed = {line["payee"]: line for line in json.loads(batchpay("payees", "--json").stdout)}
    usd = paid[invoice["account_number"]]
    assert listed["SUP-1"]["paid"] == {"USD": f"{Decimal(str(usd['sourceAmount'])):.2f}"}
    assert listed["SUP-1"]["delivered"] == {"CNY": f"{Decimal(str(usd['targetAmount'])):.2f}"}
    assert Decimal(listed["SUP-1"]["paid"]["USD"]) < Decimal("8411.05")  # USD, not the CNY
    ngn = paid[salary["account_number"]]
    assert listed["SUP-2"]["paid"] == {"NGN": f"{Decimal(str(ngn['sourceAmount'])):.2f}"}
    table = batchpay("payees")
    assert "delivered" in table.stdout and "USD" in table.stdout

    # a changed account: the hold message says both figures
    changed = dict(invoice, payout_ref="DEC-1", account_number="6217000000000009876",
                   target_amount=Decimal("9000.00"))
    sheet2 = write_sheet(tmp_path / "dec.xlsx", [changed], INVOICE_HEADERS)
    batchpay("run", str(sheet2), "--out", str(tmp_path / "dec-r.xlsx"), "--wait", "1")
    error = by_ref(tmp_path / "dec-r.xlsx")["DEC-1"]["error"]
    assert f"{Decimal(str(usd['sourceAmount'])):,.2f} USD" in error, error
    assert f"({Decimal(str(usd['targetAmount'])):,.2f} CNY delivered)" in error, error
    assert "8,411.05 USD" not in error
