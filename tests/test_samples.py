"""The committed sample sheets: what tests/support/make_samples.py writes, and what validate says of them."""

from __future__ import annotations

import dataclasses
from decimal import Decimal
from pathlib import Path
from typing import Any

import openpyxl
import pytest

from batchpay.sheet.china_ids import is_valid_resident_id, is_valid_uscc
from batchpay.sheet.columns import IDENTIFIER_COLUMNS
from batchpay.sheet.validate import validate_file
from tests.support.make_samples import CORRECTED_SAMPLE, MAIN_SAMPLE, MISTAKES_SAMPLE, make_samples

SAMPLES = Path(__file__).resolve().parents[1] / "samples"
NGN_PER_CNY = Decimal(230)


def content(path: Path) -> dict[str, Any]:
    book = openpyxl.load_workbook(path)
    return {sheet.title: [[(c.value, c.data_type, c.number_format) for c in row]
                          for row in sheet.iter_rows()] for sheet in book}


@pytest.mark.parametrize("name", [MAIN_SAMPLE, MISTAKES_SAMPLE, CORRECTED_SAMPLE])
def test_committed_samples_are_what_the_script_writes(tmp_path: Path, name: str) -> None:
    make_samples(tmp_path)
    assert content(SAMPLES / name) == content(tmp_path / name)


def test_main_sample_is_clean_realistic_and_valid() -> None:
    outcome = validate_file(SAMPLES / MAIN_SAMPLE)
    rows = outcome.validation.rows
    assert len(rows) == 25 and outcome.validation.all_valid
    assert [r.warning for r in rows] == [""] * 25
    payouts = outcome.validation.valid
    assert [p.payout_ref for p in payouts] == [f"NOV26-{n:03d}" for n in range(1, 26)]
    kinds = {p.recipient_type for p in payouts}
    assert kinds == {"BUSINESS", "INDIVIDUAL"}
    invoices = [p for p in payouts if p.target_amount is not None]
    assert len(invoices) == 3  # suppliers who invoiced in CNY: paid by target_amount
    for p in payouts:
        if p.target_amount is not None:
            assert p.amount is None and Decimal(10) <= p.target_amount <= Decimal(500_000)
            assert p.recipient_type == "BUSINESS"
        else:
            assert p.amount is not None and Decimal(50_000) <= p.amount <= Decimal(5_000_000)
            assert -p.amount.as_tuple().exponent <= 2
            assert Decimal(10) <= p.amount / NGN_PER_CNY <= Decimal(500_000)
        assert 16 <= len(p.account_number) <= 19
        assert p.source_currency == "NGN" and p.remark != "fail"
        if p.recipient_type == "BUSINESS":
            assert is_valid_uscc(p.company_id) and p.company_name == p.recipient_name
        else:
            assert is_valid_resident_id(p.ic_number)
    assert len({p.account_number for p in payouts}) == 25


def id_cells(path: Path) -> list[Any]:
    sheet = openpyxl.load_workbook(path)["Payouts"]
    header = [c.value for c in sheet[1]]
    columns = [header.index(name) for name in IDENTIFIER_COLUMNS]
    return [row[i] for row in sheet.iter_rows(min_row=2) for i in columns
            if row[i].value is not None]


def test_identifiers_are_text_cells_except_the_deliberate_mistake() -> None:
    assert {c.data_type for c in id_cells(SAMPLES / MAIN_SAMPLE)} == {"s"}
    numeric = [c.coordinate for c in id_cells(SAMPLES / MISTAKES_SAMPLE) if c.data_type != "s"]
    assert numeric == ["G3"]


def test_mistakes_sample_shows_each_typical_mistake() -> None:
    rows = validate_file(SAMPLES / MISTAKES_SAMPLE).validation.rows
    by_row = {r.row: r for r in rows}
    expected = {
        3: "account_number: cell G3 is a number with 19 digits",
        4: "company_id: check character is wrong",
        5: "ic_number: check digit is wrong",
        6: "payout_ref: NOV26-M05 is also used in row 7",
        7: "payout_ref: NOV26-M05 is also used in row 6",
        8: "company_id: required",
        9: "amount: ",
        10: "source_currency: 'NGX'",
        11: "bank_name: required",
        12: "account_number: must be digits only",
    }
    for row, start in expected.items():
        assert by_row[row].status == "INVALID" and by_row[row].error.startswith(start), by_row[row]
    assert "3 decimals" in by_row[9].error
    assert [r.row for r in rows if r.status == "VALID"] == [2, 13]


def test_corrected_sample_fixes_every_mistake_and_keeps_the_valid_rows() -> None:
    mistakes = validate_file(SAMPLES / MISTAKES_SAMPLE).validation
    corrected = validate_file(SAMPLES / CORRECTED_SAMPLE).validation
    assert corrected.all_valid and len(corrected.rows) == 12
    kept = {p.payout_ref: p for p in mistakes.valid}
    again = {p.payout_ref: p for p in corrected.valid}
    assert set(kept) == {"NOV26-M01", "NOV26-M12"} and set(kept) <= set(again)
    for ref in kept:  # the rows that were right stay exactly the same payments
        assert dataclasses.replace(kept[ref], row=0) == dataclasses.replace(again[ref], row=0)
