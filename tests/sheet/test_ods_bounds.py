"""An .ods is guarded as an .xlsx is: its repeat counts are measured before calamine expands
them, and its hidden rows and formula problems are found."""

from __future__ import annotations

from pathlib import Path

from batchpay.sheet.limits import SheetLimits
from batchpay.sheet.read import HIDDEN, read_sheet
from tests.support import hostile_files as crafted
from tests.support.refusals import refused

DATA = crafted.ods_text("P-1") + crafted.ods_text("6222020000000000001")


def test_a_small_ods_is_read(tmp_path: Path) -> None:
    path = crafted.ods(tmp_path / "ok.ods", [crafted.ODS_HEADER, crafted.ods_row(DATA)])
    assert read_sheet(path).column_values("account_number") == ["6222020000000000001"]


def test_empty_rows_repeated_to_the_end_of_the_sheet_are_not_counted(tmp_path: Path) -> None:
    """What LibreOffice writes below a formatted table: a million empty rows in one tag."""
    empty = crafted.ods_row('<table:table-cell table:number-columns-repeated="1024"/>', 1048574)
    path = crafted.ods(tmp_path / "libre.ods", [crafted.ODS_HEADER, crafted.ods_row(DATA), empty])
    assert len(read_sheet(path).rows) == 1


def test_a_repeated_row_holding_values_counts_every_repeat(tmp_path: Path) -> None:
    path = crafted.ods(tmp_path / "rows.ods",
                       [crafted.ODS_HEADER, crafted.ods_row(DATA, repeat=2_000_000)])
    error = refused(path)
    assert "Sheet 'Payouts' of rows.ods reaches row 2,000,001" in error.message, error.message


def test_a_cell_after_many_empty_ones_counts_its_column(tmp_path: Path) -> None:
    far = '<table:table-cell table:number-columns-repeated="16000"/>' + crafted.ods_text("x")
    path = crafted.ods(tmp_path / "wide.ods", [crafted.ODS_HEADER, crafted.ods_row(far)])
    assert "reaches column 16,001" in refused(path).message


def test_cells_over_the_cell_bound(tmp_path: Path) -> None:
    path = crafted.ods(tmp_path / "cells.ods", [
        crafted.ODS_HEADER, crafted.ods_row(crafted.ods_text("x", repeat=10), repeat=2_000)])
    assert "at most 15,000 cells" in refused(path, limits=SheetLimits(max_cells=15_000)).message


def test_a_doctype_is_refused(tmp_path: Path) -> None:
    path = crafted.ods(tmp_path / "dtd.ods", [crafted.ODS_HEADER],
                       doctype='<!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]>')
    assert "DOCTYPE/ENTITY" in refused(path).message


def test_hidden_rows_and_formula_problems_are_found(tmp_path: Path) -> None:
    no_value = '<table:table-cell table:formula="of:=1/0" office:value-type="float" ' \
               'office:value="0" calcext:value-type="error"><text:p>#DIV/0!</text:p>' \
               '</table:table-cell>'
    path = crafted.ods(tmp_path / "rows.ods", [
        crafted.ODS_HEADER, crafted.ods_row(DATA), crafted.ods_row(DATA, hidden=True),
        crafted.ods_row(crafted.ods_text("P-3") + no_value)])
    rows = read_sheet(path).rows
    assert [r.row for r in rows if HIDDEN in r.errors] == [3]
    assert rows[2].values[1] is None
    assert "cell B4 shows the error #DIV/0!" in rows[2].errors["account_number"]
