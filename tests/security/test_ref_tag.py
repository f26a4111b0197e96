"""The `ref:` tag in a payout's remark is the service's only record of which payout_ref a
payout paid: it is always carried (a long remark is cut, and the row says so), and it is
recognised however a person typed it in the provider's dashboard. Played against the
sandbox over real HTTP, judged by the payouts it holds."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest

from batchpay.sheet.ref_tag import REMARK_LIMIT, ref_key, refs_in_remark, remark_with_ref
from tests.security.test_journal_memory import (
    assert_held_at_the_service,
    backdate_payouts,
    forget_journal,
)
from tests.support.e2e import batchpay, by_ref, sandbox_payouts
from tests.support.sheets import row, rows, write_sheet


@pytest.fixture
def service(cli_sandbox: Any) -> Any:
    return cli_sandbox(settle_seconds=0.05)


def pay_by_hand(service: Any, values: dict[str, Any], remark: str) -> None:
    """A payout made in the provider's dashboard: a quote, then the payout, its remark
    typed by a person."""
    with httpx.Client(base_url=service.url, headers={"X-API-Key": service.api_key}) as http:
        quote = http.post("/v1/quote", json={
            "paymentChannel": "BANK_TRANSFER", "target": {"country": "CN", "currency": "CNY"},
            "source": {"amount": str(values["amount"]), "country": "NG", "currency": "NGN"}})
        quote.raise_for_status()
        http.post("/v2/payout", json={
            "quoteId": quote.json()["data"]["id"], "reason": "by hand", "remark": remark,
            "recipient": {"name": values["recipient_name"], "type": "INDIVIDUAL",
                          "icNumber": values["ic_number"], "paymentChannel": "BANK_TRANSFER",
                          "currency": "CNY", "country": "CN",
                          "account": {"accountNumber": values["account_number"],
                                      "bankName": values["bank_name"]}}}).raise_for_status()


# how people type a ref by hand: any case, a space after the colon, a full stop after it,
# inside a sentence, a space before the colon and a comma after the ref
LOOSELY = {1: "REF:T-00001", 2: "ref: T-00002", 3: "ref:T-00003.",
           4: "March salary Ref:t-00004 (by hand)", 5: "ref : T-00005, paid by phone"}


def test_hand_payments_typed_loosely_hold_their_rows_from_a_fresh_journal(
        service: Any, tmp_path: Path) -> None:
    # paid by hand to the rows' accounts, but not their amounts (a correction, a part
    # payment): only the ref in the remark can tell the service's list that they were paid
    for n, remark in LOOSELY.items():
        pay_by_hand(service, row(2 * n - 1, amount=Decimal("5000.00"),
                                 account_number=f"6222{n:015d}"), remark)
    # a ref that merely begins or ends like another names neither
    pay_by_hand(service, row(11, amount=Decimal("7000.00")), "ref:T-000060 and ref:T-0000")
    assert len(sandbox_payouts(service.url)) == 6
    sheet = write_sheet(tmp_path / "nov.xlsx", [
        row(2 * n - 1, payout_ref=f"T-{n:05d}", account_number=f"6222{n:015d}")
        for n in range(1, 7)])
    run = batchpay("run", str(sheet), "--wait", "0", "--out", str(tmp_path / "nov-results.xlsx"))
    assert len(sandbox_payouts(service.url)) == 7, run  # T-00006 only: 0 paid again
    assert run.exit_code == 1, run
    refs = [f"T-{n:05d}" for n in LOOSELY]
    assert_held_at_the_service(tmp_path / "nov-results.xlsx", refs)
    got = by_ref(tmp_path / "nov-results.xlsx")
    assert all("matched by its payout_ref" in got[ref]["error"] for ref in refs)
    assert got["T-00006"]["status"] != "HELD", got["T-00006"]
    paid = [p for p in sandbox_payouts(service.url) if p["remark"] == "ref:T-00006"]
    assert len(paid) == 1


def test_a_long_ref_with_a_long_remark_carries_its_tag_and_is_held_when_the_journal_is_lost(
        service: Any, tmp_path: Path) -> None:
    long_ref = "SUPPLIER-2026-11/INVOICE-000123/LINE-0001.PART_A"
    assert len(long_ref) == 48
    remark = "Goods received note 4471, delivered 2026-11-03, container MSKU 7712; " \
             "balance of October order after credit note CN-5531 applied."
    assert len(remark) == 128
    sheet = write_sheet(tmp_path / "nov.xlsx", [row(1, payout_ref=long_ref, remark=remark),
                                                row(2, remark="Invoice 0002")])
    report = tmp_path / "checked.xlsx"
    checked = batchpay("validate", str(sheet), "--no-bank-check", "--report", str(report))
    assert checked.exit_code == 0, checked  # valid: the remark is cut, the row says so
    assert "Warnings (the rows stay VALID)" in checked.stderr and "remark" in checked.stderr
    said = by_ref(report)
    assert said[long_ref]["status"] == "VALID"
    assert f"128 characters leave no room for ref:{long_ref}" in said[long_ref]["warning"]
    assert not said["T-00002"]["warning"]

    paid = batchpay("run", str(sheet), "--wait", "0", "--out", str(tmp_path / "paid.xlsx"))
    assert paid.exit_code == 0, paid
    sent = {p["accountNumber"][-3:]: p["remark"] for p in sandbox_payouts(service.url)}
    assert sent["001"].endswith(f" ref:{long_ref}") and len(sent["001"]) <= REMARK_LIMIT
    assert sent["001"] == f"{remark[:REMARK_LIMIT - len(long_ref) - 5].rstrip()} ref:{long_ref}"
    assert sent["002"] == "Invoice 0002 ref:T-00002"
    assert f"ref:{long_ref}" in by_ref(tmp_path / "paid.xlsx")[long_ref]["warning"]

    backdate_payouts(tmp_path / "sandbox.sqlite3", 25)  # past the same-amount window
    forget_journal()
    again = batchpay("run", str(sheet), "--wait", "0", "--out", str(tmp_path / "again.xlsx"))
    assert len(sandbox_payouts(service.url)) == 2, again  # 0 paid twice
    assert_held_at_the_service(tmp_path / "again.xlsx", [long_ref, "T-00002"])


def test_a_remark_at_its_limit_is_cut_and_a_short_one_is_sent_whole() -> None:
    ref = "R-" + "9" * 62
    assert remark_with_ref(None, ref) == f"ref:{ref}"
    assert remark_with_ref("x" * 140, ref) == "x" * 71 + f" ref:{ref}"
    assert len(remark_with_ref("x" * 140, ref)) == REMARK_LIMIT
    assert remark_with_ref("Invoice 0001", "R-1") == "Invoice 0001 ref:R-1"
    assert remark_with_ref("x" * 132, "R-1") == "x" * 132 + " ref:R-1"  # exactly 140
    assert remark_with_ref("x" * 133, "R-1") == "x" * 132 + " ref:R-1"
    assert remark_with_ref("y" * 130 + "   z", "R-1") == "y" * 130 + " ref:R-1"


@pytest.mark.parametrize(("remark", "refs"), [
    ("Invoice 0001 ref:R-0001", {"R-0001"}),
    ("REF:HP-A", {"HP-A"}),
    ("ref: HP-B", {"HP-B"}),
    ("ref:HP-C.", {"HP-C"}),
    ("货款ref：hp-d，谢谢", {"HP-D"}),  # a Chinese keyboard's colon and comma
    ("(ref:A/1.b_c-2)", {"A/1.B_C-2"}),
    ("ref:R-10", {"R-10"}),  # names R-10, never R-1
    ("ref:R-1 and REF: R-2", {"R-1", "R-2"}),
    ("xref:R-1 prefix:R-2 refs", set()),  # not a ref tag: part of another word
    ("fail", set()),
    (None, set()),
])
def test_tags_are_read_however_they_are_typed(remark: str | None, refs: set[str]) -> None:
    assert refs_in_remark(remark) == refs
    assert ref_key("hp-c.") == "HP-C" and ref_key("R-10") != ref_key("R-1")


def test_every_valid_ref_survives_its_own_tag() -> None:
    for ref in ["A", "a/1.b_c-2", "R-" + "9" * 62, "x" * 64]:
        for remark in [None, "fail", "y" * 140, "Invoice 1 ref:OTHER"]:
            assert ref_key(ref) in refs_in_remark(remark_with_ref(remark, ref))


def test_a_validate_report_says_the_remark_is_cut(tmp_path: Path) -> None:
    values = rows(2)
    values[0]["remark"] = "y" * 130
    sheet = write_sheet(tmp_path / "nov.xlsx", values)
    report = tmp_path / "report.xlsx"
    checked = batchpay("validate", str(sheet), "--no-bank-check", "--report", str(report))
    assert checked.exit_code == 0, checked
    got = by_ref(report)
    assert got["T-00001"]["status"] == "VALID"
    assert "130 characters leave no room for ref:T-00001" in got["T-00001"]["warning"]
    assert "keeps the first 128 characters" in got["T-00001"]["warning"]
    assert not got["T-00002"]["warning"]
