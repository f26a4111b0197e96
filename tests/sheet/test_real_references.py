"""The size guard measures only what says how far a worksheet reaches (`<c r=…>`, `<row r=…>`,
`<dimension ref=…>`), wherever the workbook keeps the worksheet and however legally its XML
is spelled: LibreOffice's pageOrder="downThenOver" is not a cell in column 16 quadrillion, and
a worksheet stored as xl/data/sheet1.xml is guarded like any other."""

from __future__ import annotations

from pathlib import Path

import pytest

from batchpay.sheet.limits import SheetLimits
from batchpay.sheet.read import HIDDEN, read_sheet
from tests.support import hostile_files as crafted
from tests.support.refusals import refused

SMALL = SheetLimits(max_rows=50_000)


def _text(ref: str, text: str) -> str:
    return f'<c r="{ref}" t="inlineStr"><is><t>{text}</t></is></c>'


def _rows(count: int, hidden: set[int] = frozenset()) -> list[str]:  # type: ignore[assignment]
    rows = [crafted.HEADER_ROW]
    for r in range(2, count + 2):
        flag = ' hidden="1"' if r in hidden else ""
        rows.append(f'<row r="{r}"{flag}>{_text(f"A{r}", f"P-{r}")}'
                    f'{_text(f"B{r}", f"6222{r:015d}")}</row>')
    return rows


def test_attributes_that_merely_end_in_r_are_not_references(tmp_path: Path) -> None:
    """What LibreOffice writes around every sheet: read as the two rows it holds."""
    path = crafted.workbook(
        tmp_path / "libre.xlsx", _rows(2),
        after='<dataValidations count="1"><dataValidation type="list" operator="between" '
              'allowBlank="true" sqref="C2:C9"><formula1>"A,B"</formula1></dataValidation>'
              '</dataValidations><pageMargins left="0.7" right="0.7" top="0.75" bottom="0.75" '
              'header="0.3" footer="0.3"/><pageSetup paperSize="9" pageOrder="downThenOver" '
              'firstPageNumber="99999999" useFirstPageNumber="true"/>')
    sheet = read_sheet(path, limits=SMALL)
    assert sheet.column_values("payout_ref") == ["P-2", "P-3"]


def test_a_worksheet_stored_elsewhere_is_found_through_the_relationships(tmp_path: Path) -> None:
    path = crafted.workbook(tmp_path / "moved.xlsx", _rows(4, hidden={3}),
                            part_name="xl/data/sheet1.xml")
    sheet = read_sheet(path)
    assert [r.row for r in sheet.rows if HIDDEN in r.errors] == [3]
    assert len(sheet.rows) == 4


@pytest.mark.parametrize("target", ["data/sheet1.xml", "/xl/data/sheet1.xml"])
def test_a_worksheet_stored_elsewhere_is_measured(tmp_path: Path, target: str) -> None:
    path = crafted.workbook(tmp_path / "bomb.xlsx", [crafted.HEADER_ROW], dimension="A1:J99999",
                            part_name="xl/data/sheet1.xml", target=target)
    error = refused(path, limits=SMALL)
    assert "Sheet 'Payouts' of bomb.xlsx reaches row 99,999" in error.message


@pytest.mark.parametrize("cell", [
    "<c r='A99999'><v>1</v></c>",  # single quotes
    '<c r = "A99999"><v>1</v></c>',  # spaces around =
    '<c\n r="A99999"><v>1</v></c>',  # a line break before the attribute
    '<c r="&#65;99999"><v>1</v></c>',  # a character given by its number
    '<c r="A&#x39;9999"><v>1</v></c>',
])
def test_references_spelled_otherwise_are_measured_too(tmp_path: Path, cell: str) -> None:
    path = crafted.workbook(tmp_path / "odd.xlsx", [crafted.HEADER_ROW, f'<row r="2">{cell}</row>'])
    assert "reaches row 99,999" in refused(path, limits=SMALL).message


def test_a_prefixed_worksheet_is_measured(tmp_path: Path) -> None:
    """<x:worksheet xmlns:x="…main"> with <x:c> cells: the same sheet to a parser."""
    path = crafted.workbook(tmp_path / "prefixed.xlsx", [
        '<x:row r="1"><x:c r="A1" t="inlineStr"><x:is><x:t>payout_ref</x:t></x:is></x:c></x:row>',
        "<x:row>" + "<x:c><x:v>1</x:v></x:c>" * 300 + "</x:row>"], prefix="x")
    assert "reaches column 301" in refused(path).message


def test_a_tag_across_a_chunk_boundary_is_still_measured(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Chunks of 4 KB, and a 600-byte reference (zeros before the row number) placed at
    every offset around the first boundary: no tag is ever seen in halves."""
    from batchpay.sheet import xlsx_guard

    monkeypatch.setattr(xlsx_guard, "CHUNK", 4096)
    far = f'<row r="3"><c r="A{"0" * 600}99999"><v>1</v></c></row>'
    for pad in range(0, 700, 50):
        filler = f'<row r="2">{_text("A2", "x" * (2900 + pad))}</row>'
        path = crafted.workbook(tmp_path / f"cut{pad}.xlsx", [crafted.HEADER_ROW, filler, far])
        assert "reaches row 99,999" in refused(path, limits=SMALL).message, pad


def test_shared_strings_declaring_billions_of_texts_are_refused(tmp_path: Path) -> None:
    """uniqueCount="2000000000" in a 2 KB workbook: the parser would set aside 48 GB first and
    abort the whole process; batchpay refuses it in one line (checked in a child process, so
    that a parser that aborts fails the test instead of the test run)."""
    import re
    import subprocess
    import sys
    import zipfile

    from tests.support.sheets import rows, write_sheet

    source = write_sheet(tmp_path / "ok.xlsx", rows(2))
    bomb = tmp_path / "texts.xlsx"
    with zipfile.ZipFile(source) as src, zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as dst:
        for entry in src.namelist():
            data = src.read(entry)
            if entry == "xl/sharedStrings.xml":
                data = re.sub(rb'uniqueCount="\d+"', b'uniqueCount="2000000000"', data)
            dst.writestr(entry, data)
    done = subprocess.run([sys.executable, "-m", "batchpay", "validate", "--no-bank-check",
                           str(bomb)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr[-500:]
    assert "declares 2000000000 texts" in done.stderr and "Traceback" not in done.stderr
