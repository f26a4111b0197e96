"""Who gets what, on the batch's page: the table Rows (sheet row, payout_ref, payee, masked
account, amount, CNY to deliver, finding), read from the stored review; IDs masked for
every role on every page but the maker's read-back of a held payee."""

from __future__ import annotations

import html
import re
from decimal import Decimal
from pathlib import Path

import openpyxl
import pytest

from batchpay.console.rows import CHANGED_, HELD_, KNOWN_, NEW_, NOT_PAID, RELEASED_, finding_of
from batchpay.controls.masking import mask_ids, masked_id
from batchpay.statuses import Status
from tests.console.conftest import SAMPLES, Desk, batch_id
from tests.support.e2e import sandbox_payouts

ID_COLUMNS = ("company_id", "ic_number")


def sheet_ids(path: Path) -> set[str]:
    """Every resident ID and USCC a sample sheet holds."""
    book = openpyxl.load_workbook(path, read_only=True)
    header, *rows = list(book["Payouts"].iter_rows(values_only=True))
    at = [header.index(name) for name in ID_COLUMNS]
    return {str(row[i]).strip() for row in rows for i in at if row[i]}


def table(page: str, name: str) -> list[list[str]]:
    """The body rows of the table named `name`, as the cells' texts."""
    found = re.search(rf'<table aria-label="{re.escape(name)}">(.*?)</table>', page, re.S)
    assert found, f"no table {name}"
    body = found.group(1).split("<tbody>", 1)[1]
    return [[html.unescape(re.sub(r"<[^>]+>", "", cell)).strip()
             for cell in re.findall(r"<td[^>]*>(.*?)</td>", tr, re.S)]
            for tr in re.findall(r"<tr[^>]*>(.*?)</tr>", body, re.S)]


def test_findings_are_the_reviews_facts() -> None:
    released = {"R-1": ["OLD-1"]}
    assert finding_of(Status.HELD, "A", "changed", True, released) == HELD_
    assert finding_of(Status.QUOTE_FAILED, "A", "", False, released) == NOT_PAID
    assert finding_of(Status.NOT_SENT, "R-1", "", False, released) == RELEASED_
    assert finding_of(Status.NOT_SENT, "A", "new", False, released) == NEW_
    assert finding_of(Status.NOT_SENT, "A", "known", True, released) == CHANGED_  # confirmed
    assert finding_of(Status.NOT_SENT, "A", "known", False, released) == KNOWN_
    assert finding_of(Status.NOT_SENT, "A", "", False, released) == KNOWN_


def test_ids_are_masked_in_any_text() -> None:
    person, company = "11010519491231002X", "91110108MA00003706"
    assert masked_id(person) == "…002X"
    text = f"payee {person} and {company}; account 6222020000099998888, plan 7KQ2-M9XD"
    assert mask_ids(text) == "payee …002X and …3706; account 6222020000099998888, plan 7KQ2-M9XD"
    assert mask_ids("a".join(["91110108MA0000370"] * 2)) == "a".join(["91110108MA0000370"] * 2)
    assert mask_ids("account 621483000001919412") == "account 621483000001919412"  # no date
    assert mask_ids(f"payee 张伟{person}：held") == "payee 张伟…002X：held"  # beside Chinese


@pytest.mark.slow
def test_the_approver_sees_who_gets_what_and_no_id(desk_factory) -> None:  # type: ignore[no-untyped-def]
    desk: Desk = desk_factory(require_approval=True)
    maker = desk.client("mia")
    batch = batch_id(maker.upload("november-payouts.xlsx"))
    assert maker.post(f"/batches/{batch}/review").status_code == 303
    ids = sheet_ids(SAMPLES / "november-payouts.xlsx")
    assert len(ids) == 25

    book = openpyxl.load_workbook(SAMPLES / "november-payouts.xlsx", read_only=True)
    header, *cells = list(book["Payouts"].iter_rows(values_only=True))
    first = dict(zip(header, cells[0], strict=True))
    for who in ("abe", "ada", "mia"):
        page = desk.client(who).http.get(f"/batches/{batch}").text
        rows = table(page, "Rows")
        assert len(rows) == 25 and [r[0] for r in rows] == [str(n) for n in range(2, 27)]
        account = str(first["account_number"])
        assert rows[0][:4] == ["2", "NOV26-001", first["recipient_name"],
                               f"{account[:4]}…{account[-4:]}"]
        assert rows[0][4] == f"{Decimal(str(first['amount'])):,.2f} NGN"
        assert Decimal(rows[0][5].replace(",", "")) > 0  # the CNY the quote delivers
        assert {r[6] for r in rows} == {"new"}  # a first month: every payee is new
        assert table(page, "Payee summary") == [["new", "25", "Show the new rows"]]
        assert len(table(page, "Largest rows")) == 5
        shown = [i for i in ids if i in page]
        assert not shown, (who, shown)  # no ID of the sheet, whoever reads the page
    assert "Next page" not in page  # 25 rows: one page

    approver = desk.client("abe")
    assert approver.press(batch, "approve").status_code == 303
    assert maker.press(batch, "pay").status_code == 303
    from tests.console.test_month import wait_final

    state = wait_final(maker, batch)
    assert not [i for i in ids if i in str(state)]  # the progress JSON too
    for who in ("abe", "ada"):
        for path in ("/", "/history", "/payees", f"/batches/{batch}", "/statement"):
            page = desk.client(who).http.get(path).text
            assert not [i for i in ids if i in page], (who, path)


@pytest.mark.slow
def test_rows_carry_the_findings_released_held_and_changed(desk: Desk, tmp_path: Path) -> None:
    """December after November: two payments again (one released by the maker, one held as a
    repeat) and a payee on a new account, confirmed: each row's finding, and the filter."""
    from tests.console.test_month import wait_final

    maker = desk.client("mia")
    first = batch_id(maker.upload("november-payouts-corrected.xlsx"))
    maker.post(f"/batches/{first}/review"), maker.press(first, "pay")
    wait_final(maker, first)

    book = openpyxl.load_workbook(SAMPLES / "november-payouts-corrected.xlsx")
    sheet = book["Payouts"]
    header = [c.value for c in sheet[1]]
    sheet.delete_rows(5, sheet.max_row)
    for n in (1, 2, 3):
        sheet.cell(row=n + 1, column=header.index("payout_ref") + 1).value = f"DEC-{n}"
    sheet.cell(row=4, column=header.index("account_number") + 1).value = "6222020000099998888"
    payee = str(sheet.cell(row=4, column=header.index("company_id") + 1).value)
    book.save(tmp_path / "december.xlsx")
    batch = batch_id(maker.upload(tmp_path / "december.xlsx"))
    assert maker.post(f"/batches/{batch}/review").status_code == 303
    rows = table(maker.http.get(f"/batches/{batch}").text, "Rows")
    assert [(r[1], r[6]) for r in rows] == [("DEC-1", "held"), ("DEC-2", "held"),
                                            ("DEC-3", "held")]
    assert maker.post("/payees/confirm", payee=payee, last4="8888", method="phone",
                      note="").status_code == 200
    assert maker.post(f"/batches/{batch}/review", release="DEC-1").status_code == 303

    page = desk.client("abe").http.get(f"/batches/{batch}").text
    rows = table(page, "Rows")
    assert [(r[1], r[3], r[6]) for r in rows] == [
        ("DEC-1", rows[0][3], "released"), ("DEC-2", rows[1][3], "held"),
        ("DEC-3", "6222…8888", "changed")]
    assert table(page, "Payee summary") == [["changed", "1", "Show the changed rows"],
                                            ["held", "1", "Show the held rows"],
                                            ["released", "1", "Show the released rows"]]
    released = desk.client("abe").http.get(f"/batches/{batch}?finding=released").text
    assert [r[1] for r in table(released, "Rows")] == ["DEC-1"]
    assert payee not in page and masked_id(payee) in page
    assert len(sandbox_payouts(desk.sandbox.url)) == 12  # reviews pay nothing
