"""Held payees on the console: a payee whose bank details changed since it was paid is
held by the review and the payment; a maker confirms it with the last four digits of the
new account (a wrong four refused, an auditor refused), and the next batch pays the row."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import openpyxl
import pytest

from batchpay.controls.masking import masked_id
from tests.console.conftest import SAMPLES, Desk, Signed, batch_id
from tests.console.test_month import wait_final
from tests.support.e2e import sandbox_payouts

pytestmark = pytest.mark.slow


def changed_sheet(tmp_path: Path, name: str, ref: str) -> tuple[Path, str]:
    """The November sample's first row only, paid to a new account under a new ref."""
    book = openpyxl.load_workbook(SAMPLES / "november-payouts.xlsx")
    sheet = book["Payouts"]
    header = [c.value for c in sheet[1]]
    sheet.delete_rows(3, sheet.max_row)
    sheet.cell(row=2, column=header.index("account_number") + 1).value = "6222020000099998888"
    sheet.cell(row=2, column=header.index("payout_ref") + 1).value = ref
    path = tmp_path / name
    book.save(path)
    return path, str(sheet.cell(row=2, column=header.index("company_id") + 1).value)


def held_after_a_month(maker: Signed, tmp_path: Path) -> tuple[str, str]:
    """November paid by `maker`; then a batch paying its first payee on a new account,
    reviewed (and so held). Returns that batch and the payee."""
    first = batch_id(maker.upload("november-payouts.xlsx"))
    maker.post(f"/batches/{first}/review"), maker.press(first, "pay")
    wait_final(maker, first)
    sheet, payee = changed_sheet(tmp_path, "december.xlsx", "DEC26-001")
    held = batch_id(maker.upload(sheet))
    assert maker.post(f"/batches/{held}/review").status_code == 303
    return held, payee


def test_a_held_payee_is_confirmed_with_its_last_four_digits(desk: Desk, tmp_path: Path) -> None:
    maker = desk.client("mia")
    held, payee = held_after_a_month(maker, tmp_path)
    page = maker.http.get(f"/batches/{held}").text
    # the payee (its USCC) by its last four on the batch's page, as on every page
    assert "Rows held" in page and masked_id(payee) in page and payee not in page
    assert maker.press(held, "pay").status_code == 409  # the review pays nothing

    # the maker reads the new account back in full; every other role sees it masked
    payees = maker.http.get("/payees").text
    assert payee in payees and "6222020000099998888" in payees
    audited = desk.client("ada").http.get("/payees").text
    assert "6222…8888" in audited and "6222020000099998888" not in audited
    assert masked_id(payee) in audited and payee not in audited
    wrong = maker.post("/payees/confirm", payee=payee, last4="1234", method="phone", note="")
    assert wrong.status_code == 409 and "do not match" in wrong.text
    auditor = desk.client("ada")
    assert auditor.post("/payees/confirm", payee=payee, last4="8888", method="phone",
                        note="").status_code == 403
    done = maker.post("/payees/confirm", payee=payee, last4="8888", method="phone",
                      note="called the number on file")
    assert done.status_code == 200 and "Confirmed payee" in done.text
    assert "called the number on file" in desk.client("ada").http.get("/history").text

    again, _ = changed_sheet(tmp_path, "december-again.xlsx", "DEC26-001")
    batch = batch_id(maker.upload(again))
    maker.post(f"/batches/{batch}/review")
    assert maker.press(batch, "pay").status_code == 303
    assert dict(wait_final(maker, batch)["counts"]) == {"COMPLETED": 1}
    paid = [p["accountNumber"] for p in sandbox_payouts(desk.sandbox.url)]
    assert len(paid) == 26 and paid.count("6222020000099998888") == 1


def test_a_change_its_maker_alone_confirmed_stays_held_until_another_user_confirms(
        desk_factory: Any, tmp_path: Path) -> None:
    desk: Desk = desk_factory(payee_confirmed_by_other=True)
    maker = desk.client("mia")
    held, payee = held_after_a_month(maker, tmp_path)
    assert maker.post("/payees/confirm", payee=payee, last4="8888", method="phone",
                      note="").status_code == 200
    # mia uploaded this batch: her word alone does not release her own batch's row
    assert maker.post(f"/batches/{held}/review").status_code == 303
    page = maker.http.get(f"/batches/{held}").text
    assert "confirmed by mia, who makes this batch" in page
    assert maker.press(held, "pay").status_code == 409  # nothing to pay
    payees = maker.http.get("/payees").text  # still held, and whose word it has so far
    assert "another user confirms it too" in payees and "Confirmed so far by mia 20" in payees

    assert desk.client("max").post("/payees/confirm", payee=payee, last4="8888",
                                   method="email", note="").status_code == 200
    assert maker.post(f"/batches/{held}/review").status_code == 303
    assert maker.press(held, "pay").status_code == 303
    assert dict(wait_final(maker, held)["counts"]) == {"COMPLETED": 1}
    paid = [p["accountNumber"] for p in sandbox_payouts(desk.sandbox.url)]
    assert len(paid) == 26 and paid.count("6222020000099998888") == 1
    history = desk.client("ada").http.get("/history").text  # each confirmer by their name
    assert "<td>max</td><td>email</td>" in history and "<td>mia</td><td>phone</td>" in history
