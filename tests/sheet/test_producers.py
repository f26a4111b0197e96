"""Workbooks saved by the programs operators use are read with the same rows and values as
the sheet they came from: real LibreOffice Calc (run here), and .xlsx shaped as Excel and
Google Sheets write them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from batchpay.sheet.read import HIDDEN, read_sheet
from batchpay.sheet.validate import validate_sheet
from batchpay.statuses import Status
from tests.support import producers
from tests.support.e2e import batchpay, by_ref, edit_results, results, sandbox_payouts
from tests.support.sheets import row, rows, write_sheet

SOURCE_ROWS = rows(12)


def as_read(path: Path) -> tuple[list[str], list[tuple[int, list[Any], dict[str, str]]]]:
    sheet = read_sheet(path)
    return sheet.columns, [(r.row, r.values, r.errors) for r in sheet.rows]


@pytest.fixture(scope="session")
def sources(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("sources")
    return {
        "plain": write_sheet(folder / "plain.xlsx", SOURCE_ROWS),
        "featured": producers.featured_workbook(folder / "featured.xlsx", SOURCE_ROWS,
                                                hidden_row=4),
    }


@pytest.fixture(scope="session")
def libreoffice_saved(sources: dict[str, Path], tmp_path_factory: pytest.TempPathFactory
                      ) -> Iterator[dict[str, Path]]:
    """The sources as LibreOffice Calc saves them (made once per test session)."""
    if producers.SOFFICE is None:
        pytest.skip(producers.NO_SOFFICE)
    folder = tmp_path_factory.mktemp("libre")
    kinds = ("xlsx", "ods", "xls")
    made = producers.libreoffice_formats(list(sources.values()),
                                         {kind: folder / kind for kind in kinds})
    yield {f"{name}.{kind}": path
           for kind in kinds for name, path in zip(sources, made[kind], strict=True)}


@pytest.mark.parametrize("kind", ["xlsx", "ods", "xls"])
@pytest.mark.parametrize("name", ["plain", "featured"])
def test_a_workbook_saved_by_libreoffice_reads_as_its_source(
        sources: dict[str, Path], libreoffice_saved: dict[str, Path], name: str,
        kind: str) -> None:
    """.ods and .xls (Excel 97-2003, as accounting systems export) included."""
    assert as_read(libreoffice_saved[f"{name}.{kind}"]) == as_read(sources[name])


def test_the_libreoffice_workbook_holds_what_it_is_meant_to(
        libreoffice_saved: dict[str, Path]) -> None:
    """LibreOffice kept the validation, formats, filter, hidden column and print settings:
    the test is about those, not a bare sheet. (Without a window, LibreOffice drops view
    settings such as frozen panes; the Excel- and Google-shaped files below carry them.)"""
    import zipfile

    with zipfile.ZipFile(libreoffice_saved["featured.xlsx"]) as archive:
        xml = archive.read("xl/worksheets/sheet1.xml").decode()
        workbook = archive.read("xl/workbook.xml").decode()
    for part in ("<dataValidation ", "<conditionalFormatting", "<autoFilter", 'hidden="true"',
                 "<pageSetup", "pageOrder=", 'operator="'):
        assert part in xml, part
    assert "说明" in workbook


@pytest.mark.parametrize("kind", ["xlsx", "ods", "xls"])
def test_the_featured_sheet_keeps_its_hidden_row_and_validates(
        libreoffice_saved: dict[str, Path], kind: str) -> None:
    sheet = read_sheet(libreoffice_saved[f"featured.{kind}"])
    assert sheet.sheet_name == "Payouts" and sheet.sheet_names == ["Payouts", "说明"]
    assert [r.row for r in sheet.rows if HIDDEN in r.errors] == [5]
    assert sheet.column_values("recipient_name")[2] == "张3"
    checks = validate_sheet(sheet).rows
    assert [c.row for c in checks if c.status == Status.INVALID] == [5]


@pytest.mark.parametrize("write", [producers.excel_style, producers.google_style])
def test_xlsx_as_excel_and_google_sheets_write_them(tmp_path: Path, write: Any) -> None:
    made = write(tmp_path / "made.xlsx", SOURCE_ROWS)
    source = write_sheet(tmp_path / "source.xlsx", SOURCE_ROWS)
    assert as_read(made) == as_read(source)
    assert validate_sheet(read_sheet(made)).all_valid


@pytest.mark.slow
@pytest.mark.skipif(producers.SOFFICE is None, reason=producers.NO_SOFFICE)
def test_results_corrected_in_libreoffice_are_rerun(cli_sandbox: Any, tmp_path: Path) -> None:
    """The README's fix-and-rerun path, with the results workbook saved by LibreOffice."""
    service = cli_sandbox(settle_seconds=0.3)
    sheet = write_sheet(tmp_path / "nov.xlsx", rows(2) + [row(3, amount=100)])  # < 10 CNY
    first = tmp_path / "first.xlsx"
    assert batchpay("run", str(sheet), "--out", str(first), "--wait", "10").exit_code == 1
    assert by_ref(first)["T-00003"]["status"] == "QUOTE_FAILED"
    edit_results(first, "T-00003", amount=250000)
    [corrected] = producers.libreoffice([first], tmp_path / "libre")
    second = tmp_path / "second.xlsx"
    result = batchpay("rerun", str(corrected), "--out", str(second), "--wait", "10")
    assert result.exit_code == 0, result
    paid = sandbox_payouts(service.url)
    assert len(paid) == 3 and paid[-1]["sourceAmount"] == 250000
    assert {r["status"] for r in results(second)} == {"COMPLETED"}


def test_an_xls_cell_far_away_is_refused_unparsed(libreoffice_saved: dict[str, Path],
                                                  tmp_path: Path) -> None:
    """The .xls LibreOffice saved, with one cell record moved to column 12,289 (BIFF8
    numbers rows and columns with 16 bits: a parser would allocate up to 4 billion cells)."""
    from tests.support.refusals import refused

    data = bytearray(libreoffice_saved["plain.xls"].read_bytes())
    at = data.find(b"\xfd\x00\x0a\x00\x05\x00")  # LABELSST of row 6 (from 0)
    assert at > 0
    data[at + 6:at + 8] = (12288).to_bytes(2, "little")
    far = tmp_path / "far.xls"
    far.write_bytes(bytes(data))
    error = refused(far)
    assert "Sheet 'Payouts' of far.xls reaches column 12,289" in error.message, error.message


def test_an_xls_declaring_billions_of_texts_is_refused(libreoffice_saved: dict[str, Path],
                                                       tmp_path: Path) -> None:
    """The .xls LibreOffice saved, its shared strings record claiming 2 billion texts."""
    import struct
    import subprocess
    import sys

    data = bytearray(libreoffice_saved["plain.xls"].read_bytes())
    at = data.find(b"\xfc\x00")
    while at != -1 and not 8 <= struct.unpack_from("<H", data, at + 2)[0] <= 8224:
        at = data.find(b"\xfc\x00", at + 1)
    assert at > 0
    struct.pack_into("<I", data, at + 8, 2_000_000_000)
    bomb = tmp_path / "texts.xls"
    bomb.write_bytes(bytes(data))
    done = subprocess.run([sys.executable, "-m", "batchpay", "validate", "--no-bank-check",
                           str(bomb)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr[-500:]
    assert "declares 2,000,000,000 texts" in done.stderr
