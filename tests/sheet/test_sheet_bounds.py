"""Crafted sheets that ask for more than a payout sheet ever needs are refused before any
parser allocates, with one line and exit 2; a long or hostile cell is one INVALID row."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from batchpay.sheet.limits import SheetLimits
from batchpay.sheet.read import read_sheet
from tests.support import hostile_files as crafted
from tests.support.e2e import batchpay
from tests.support.refusals import refused
from tests.support.sheets import rows, write_sheet


@pytest.mark.parametrize(("make", "fragment"), [
    (lambda p: crafted.one_far_cell(p, "XFD1048576", 1048576), "reaches row 1,048,576"),
    (lambda p: crafted.one_far_cell(p, "ZZ200000", 200000), "reaches column 702"),
    (lambda p: crafted.one_far_cell(p, "GR60000", 60000), "spans up to 60,000 rows × 200 columns"),
    (lambda p: crafted.declared_only(p), "reaches row 1,048,576"),
    (lambda p: crafted.unreferenced_row(p, 300), "reaches column 301"),
])
def test_a_sheet_spanning_too_much_is_refused_unparsed(tmp_path: Path, make: Any,
                                                       fragment: str) -> None:
    path = make(tmp_path / "crafted.xlsx")
    assert path.stat().st_size < 10_000
    error = refused(path)
    assert fragment in error.message, error.message
    assert "Sheet 'Payouts' of crafted.xlsx" in error.message
    assert "setting" in (error.hint or "")


def test_the_cli_says_it_in_one_line_and_exits_2(tmp_path: Path) -> None:
    path = crafted.one_far_cell(tmp_path / "far.xlsx", "XFD1048576", 1048576)
    result = batchpay("validate", str(path), "--no-bank-check")
    assert result.exit_code == 2, result
    assert "Traceback" not in result.stderr
    error = [line for line in result.stderr.splitlines() if line.startswith("Error: ")]
    assert len(error) == 1 and "batchpay reads at most" in error[0], result.stderr


def test_a_cell_placed_below_its_row_is_measured_by_its_reference(tmp_path: Path) -> None:
    path = crafted.below_its_row(tmp_path / "below.xlsx", "A99999")
    assert "reaches row 99,999" in refused(path, limits=SheetLimits(max_rows=50_000)).message
    assert len(read_sheet(path).rows) == 2  # within the default bounds it is read as is


def test_cells_over_the_cell_bound(tmp_path: Path) -> None:
    path = crafted.many_cells(tmp_path / "cells.xlsx", rows=2_000, columns=10)
    error = refused(path, limits=SheetLimits(max_cells=15_000))
    assert "batchpay reads at most 15,000 cells" in error.message
    assert len(read_sheet(path, limits=SheetLimits(max_cells=60_000)).rows) == 2_000


def test_a_wide_sheet_within_the_bounds_is_read(tmp_path: Path) -> None:
    sheet_rows = rows(30)
    headers = list(sheet_rows[0]) + [f"note_{i}" for i in range(40)]  # columns to BH
    for row in sheet_rows:
        row.update({f"note_{i}": f"n{i}" for i in range(40)})
    path = write_sheet(tmp_path / "wide.xlsx", sheet_rows, headers)
    sheet = read_sheet(path)
    assert len(sheet.rows) == 30 and sheet.column_values("note_39")[0] == "n39"


@pytest.mark.parametrize(("separator", "fragment"), [
    ("\n", "reaches row"),  # a million lines of one character
    (",", "cells"),  # one line of a million fields
])
def test_a_csv_of_single_characters_is_refused_before_parsing(
        tmp_path: Path, separator: str, fragment: str) -> None:
    path = crafted.csv_of_characters(tmp_path / "chars.csv", 4, separator)
    error = refused(path, limits=SheetLimits(max_rows=100_000, max_cells=1_000_000))
    assert fragment in error.message and "chars.csv" in error.message, error.message


def test_a_csv_row_wider_than_the_bound_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "wide.csv"
    path.write_text("payout_ref,account_number\nT-1," + ",".join("x" * 300) + "\n")
    assert "reaches column 301" in refused(path).message


@pytest.mark.parametrize("suffix", [".xlsx", ".csv"])
def test_long_and_control_character_cells_are_invalid_rows(tmp_path: Path, suffix: str) -> None:
    sheet_rows = rows(6)
    sheet_rows[0]["remark"] = "x" * 200_000  # one cell of 200k characters
    sheet_rows[1]["recipient_name"] = "Li\x00Wei"
    sheet_rows[2]["bank_city"] = "Shen\x1bzhen"
    sheet_rows[3]["reason"] = "line one\nline two"
    sheet_rows[4]["company_name"] = "ACME\x85Ltd"  # a C1 control character
    path = tmp_path / f"nov{suffix}"
    if suffix == ".xlsx":
        write_sheet(path, sheet_rows)
    else:
        import csv

        with path.open("w", newline="", encoding="utf-8") as out:
            writer = csv.DictWriter(out, fieldnames=list(sheet_rows[0]))
            writer.writeheader()
            writer.writerows(sheet_rows)
    result = batchpay("validate", str(path), "--no-bank-check", "--json")
    assert result.exit_code == 1, result
    found = {r["payout_ref"]: r["error"] or "" for r in json.loads(result.stdout)["rows"]}
    assert "characters long; at most 140" in found["T-00001"]
    assert "contains a NUL character at character 3" in found["T-00002"]
    assert "contains an escape character" in found["T-00003"]
    assert "contains a line break" in found["T-00004"]
    assert "U+0085" in found["T-00005"]
    assert found["T-00006"] == ""


def test_a_large_sheet_is_judged_from_its_first_megabytes(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Scaled down: chunks of 64 KB instead of 1 MB, a 500 KB sheet instead of 250 MB."""
    from batchpay.sheet import xlsx_guard

    monkeypatch.setattr(xlsx_guard, "CHUNK", 64 * 1024)
    path = crafted.many_cells(tmp_path / "cells.xlsx", rows=2_000, columns=10)
    error = refused(path, limits=SheetLimits(max_cells=30_000))
    assert "judged from its first" in error.message, error.message
    # within the bounds, the estimate refuses nothing: the sheet is read whole
    assert len(read_sheet(path, limits=SheetLimits(max_cells=60_000)).rows) == 2_000
