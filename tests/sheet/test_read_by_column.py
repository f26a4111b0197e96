"""The checks start from the columns the reader made (`Sheet.values_by_column`) instead of
turning the rows back into columns: they must judge every row exactly as from the rows, and
never from columns that no longer stand for the sheet's rows."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from batchpay.sheet.read import Sheet, SheetRow, read_sheet
from batchpay.sheet.validate import Validation, validate_sheet
from tests.support.sheets import HEADERS, row, write_grid

COLUMNS = [*HEADERS, "payee_id", "target_amount", "currency", "notes"]


def mixed_rows() -> list[list[Any]]:
    """Valid rows and every kind of cell the reader converts: numbers in text and id
    columns, empty cells, texts to upper-case and strip, amounts as text, repeats."""
    changes: list[dict[str, Any]] = [
        {},
        {"account_number": 6222021234567890.0},  # a number with 16 digits: digits lost
        {"payee_id": 12345.0, "remark": 7.0},  # numbers in an id and a text column
        {"recipient_type": " business ", "source_currency": "ngn"},
        {"amount": "1,250.50"},  # grouped text amount
        {"amount": "12.345"},  # more decimals than NGN has
        {"recipient_type": "BUSINESS", "company_id": None},  # BUSINESS without its id
        {"payout_ref": "T-00001"},  # the first row's ref again
        {"amount": None, "target_amount": "88.10", "currency": "cny"},
        {"bank_name": "中国\u3000银行 ", "notes": 3.5},
        {"ic_number": "110105194912310021"},  # check digit wrong
        {"amount": 1500.0, "account_number": "6222 0212-3456 7890"},
        {"account_number": "6222000000000000042", "amount": 1000.0},
        {"account_number": "6222000000000000042", "amount": 1000.0},  # same as the row above
    ]
    grid: list[list[Any]] = []
    for n, change in enumerate(changes, start=1):
        values = {**row(n), "amount": 100000.5 + n, **change}
        grid.append([values.get(name) for name in COLUMNS])
    return grid


def outcome(validation: Validation) -> list[tuple[Any, ...]]:
    return [(r.row, r.status, r.errors, r.warnings, r.payout_ref, r.payout)
            for r in validation.rows]


def test_checks_from_the_readers_columns_judge_as_checks_from_the_rows(tmp_path: Path) -> None:
    sheet = read_sheet(write_grid(tmp_path / "mixed.xlsx", COLUMNS, mixed_rows()))
    assert sheet.values_by_column() is not None  # the reader's columns are used
    from_rows = dataclasses.replace(sheet, rows=list(sheet.rows))
    assert from_rows.values_by_column() is None  # another list: the rows are used
    fast, slow = validate_sheet(sheet), validate_sheet(from_rows)
    assert outcome(fast) == outcome(slow)
    assert fast.counts == {"VALID": 8, "INVALID": 6}
    assert [r.row for r in fast.rows if r.status == "INVALID"] == [2, 3, 7, 8, 9, 12]
    assert fast.rows[2].status == "VALID" and fast.rows[2].payout is not None
    assert fast.rows[2].payout.payee_id == "12345"
    assert fast.rows[-1].warnings and fast.rows[-2].warnings  # the same account and amount


def test_rows_replaced_after_reading_are_checked_as_they_are(tmp_path: Path) -> None:
    sheet = read_sheet(write_grid(tmp_path / "mixed.xlsx", COLUMNS, mixed_rows()[:1]))
    assert validate_sheet(sheet).counts == {"VALID": 1}
    first = sheet.rows[0]
    changed = [*first.values]
    changed[COLUMNS.index("account_number")] = "not digits"
    later = dataclasses.replace(sheet, rows=[SheetRow(first.row, changed, {})])
    result = validate_sheet(later)
    assert result.counts == {"INVALID": 1}
    assert result.rows[0].errors[0].startswith("account_number: must be digits only")


def test_a_sheet_with_a_blank_row_is_checked_from_its_rows(tmp_path: Path) -> None:
    grid = mixed_rows()[:3]
    grid.insert(1, [None] * len(COLUMNS))
    sheet = read_sheet(write_grid(tmp_path / "blank.xlsx", COLUMNS, grid))
    assert [r.row for r in sheet.rows] == [2, 4, 5]
    assert sheet.values_by_column() is None
    result = validate_sheet(sheet)
    assert [(r.row, r.status) for r in result.rows] == [(2, "VALID"), (4, "INVALID"),
                                                        (5, "VALID")]


def test_a_sheet_made_by_hand_has_no_reader_columns() -> None:
    sheet = Sheet(Path("p.xlsx"), "Payouts", ["payout_ref"], ["payout_ref"],
                  [SheetRow(2, ["R-1"])], "0" * 64)
    assert sheet.values_by_column() is None
