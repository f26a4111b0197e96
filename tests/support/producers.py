"""Workbooks as the programs operators use write them, for the reader's tests.

- `libreoffice`: real LibreOffice Calc (`soffice --headless --convert-to`) saves a workbook as
  .xlsx, .ods or .xls, exactly as an operator's "Save As" does.
- `excel_style` and `google_style`: .xlsx files written part by part the way Excel (shared
  strings, Text-formatted cells, r:id attributes, x14ac extensions, printer settings) and
  Google Sheets (inline strings, alphabetical attributes) write them; neither program runs
  here, so their shape is reproduced by hand.
"""

from __future__ import annotations

import shutil
import subprocess
import zipfile
from collections.abc import Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

import xlsxwriter

from batchpay.sheet.xlsx_extent import column_letters
from tests.support.sheets import HEADERS

MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
RELS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
PACKAGE_RELS = "http://schemas.openxmlformats.org/package/2006/relationships"
OFFICE = "application/vnd.openxmlformats-officedocument.spreadsheetml"
SOFFICE = shutil.which("soffice")
NO_SOFFICE = "LibreOffice (soffice) is not installed: the workbooks it saves cannot be made"


def libreoffice(sources: Sequence[Path], folder: Path, to: str = "xlsx") -> list[Path]:
    """Each source as LibreOffice Calc saves it in format `to` (xlsx, ods, xls), in `folder`."""
    return libreoffice_formats(sources, {to: folder})[to]


def libreoffice_formats(sources: Sequence[Path], folders: dict[str, Path]
                        ) -> dict[str, list[Path]]:
    """`libreoffice` for several formats, `folders` naming each format's folder: LibreOffice
    saves in one format per start, and a start takes seconds, so one per format is started
    and all run side by side (each with a profile of its own, as they must)."""
    assert SOFFICE, NO_SOFFICE
    filters = {"xlsx": "xlsx:Calc MS Excel 2007 XML", "ods": "ods", "xls": "xls:MS Excel 97"}
    started: dict[str, subprocess.Popen[str]] = {}
    try:
        for to, folder in folders.items():
            folder.mkdir(parents=True, exist_ok=True)
            started[to] = subprocess.Popen(
                [SOFFICE, f"-env:UserInstallation=file://{folder}/profile", "--headless",
                 "--convert-to", filters[to], "--outdir", str(folder), *map(str, sources)],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        saved = {}
        for to, done in started.items():
            stdout, stderr = done.communicate(timeout=180)
            made = [folders[to] / f"{source.stem}.{to}" for source in sources]
            missing = [path.name for path in made if not path.exists()]
            assert done.returncode == 0 and not missing, (stdout, stderr, missing)
            saved[to] = made
        return saved
    finally:
        for running in started.values():
            if running.poll() is None:
                running.kill()
                running.wait()


def featured_workbook(path: Path, rows: list[dict[str, Any]], hidden_row: int | None = None
                      ) -> Path:
    """A payout sheet dressed as operators dress them: a list validation, conditional
    formats, an autofilter, a hidden column, print settings, frozen panes (which LibreOffice without a
    window drops), Chinese text and
    a second (instructions) sheet. `hidden_row`: a data row (1 = first) hidden by hand."""
    headers = [*HEADERS, "内部备注"]  # an internal notes column, hidden
    book = xlsxwriter.Workbook(str(path))
    sheet = book.add_worksheet("Payouts")
    money = book.add_format({"num_format": "#,##0.00"})
    text = book.add_format({"num_format": "@"})
    for c, header in enumerate(headers):
        sheet.write_string(0, c, header)
    for r, values in enumerate(rows, start=1):
        for c, header in enumerate(headers):
            value = values.get(header, "仅供内部" if header == "内部备注" else None)
            if isinstance(value, Decimal | int | float):
                sheet.write_number(r, c, float(value), money)
            elif value is not None:
                sheet.write_string(r, c, str(value), text)
        if hidden_row == r:
            sheet.set_row(r, None, None, {"hidden": True})
    last = len(rows)
    kind = headers.index("recipient_type")
    sheet.data_validation(1, kind, 500, kind, {"validate": "list",
                                               "source": ["BUSINESS", "INDIVIDUAL"]})
    amount = headers.index("amount")
    sheet.conditional_format(1, amount, last, amount, {
        "type": "cell", "criteria": ">", "value": 200000,
        "format": book.add_format({"bg_color": "#FFC7CE"})})
    sheet.conditional_format(1, 0, last, 0, {"type": "duplicate",
                                             "format": book.add_format({"bold": True})})
    sheet.autofilter(0, 0, last, len(headers) - 1)
    sheet.set_column(len(headers) - 1, len(headers) - 1, None, None, {"hidden": True})
    sheet.set_column(0, len(headers) - 2, 18)
    sheet.freeze_panes(1, 1)
    sheet.set_landscape()
    sheet.set_paper(9)
    sheet.fit_to_pages(1, 0)
    sheet.repeat_rows(0)
    sheet.print_area(0, 0, last, len(headers) - 2)
    sheet.set_header("&C十一月付款")
    sheet.set_footer("&P / &N")
    notes = book.add_worksheet("说明")
    notes.write_string(0, 0, "每行一笔付款；账号请设为文本格式。")
    book.close()
    return path


def _cell_values(rows: list[dict[str, Any]]) -> list[list[Any]]:
    return [[values.get(h) for h in HEADERS] for values in rows]


def _number(value: Any) -> str:
    return format(Decimal(str(value)).normalize(), "f")


def _zip(path: Path, parts: dict[str, str | bytes]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in parts.items():
            archive.writestr(name, data)
    return path


def _content_types(extra: str = "") -> str:
    return (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\r\n'
        '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
        '<Default Extension="bin" ContentType="application/vnd.openxmlformats-officedocument.'
        'spreadsheetml.printerSettings"/><Default Extension="rels" ContentType="application/'
        'vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType='
        '"application/xml"/>'
        f'<Override PartName="/xl/workbook.xml" ContentType="{OFFICE}.sheet.main+xml"/>'
        f'<Override PartName="/xl/worksheets/sheet1.xml" ContentType="{OFFICE}.worksheet+xml"/>'
        f'<Override PartName="/xl/styles.xml" ContentType="{OFFICE}.styles+xml"/>'
        f'{extra}</Types>')


def _root_rels() -> str:
    return (f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\r\n<Relationships '
            f'xmlns="{PACKAGE_RELS}"><Relationship Id="rId1" Type="{RELS}/officeDocument" '
            'Target="xl/workbook.xml"/></Relationships>')


def excel_style(path: Path, rows: list[dict[str, Any]]) -> Path:
    """As Excel for Windows saves a sheet whose id columns are formatted as Text: every text
    in xl/sharedStrings.xml (one rich run among them), cells styled with numFmtId 49 ("@"),
    amounts with #,##0.00, r:id attributes on <sheet> and <pageSetup>, x14ac and xr
    extensions, a frozen header row and an autofilter."""
    grid = [list(HEADERS), *_cell_values(rows)]
    strings: dict[str, int] = {}
    cells_xml = []
    for r, line in enumerate(grid, start=1):
        cells = []
        for c, value in enumerate(line):
            ref = f"{column_letters(c)}{r}"
            if value is None:
                continue
            if isinstance(value, Decimal | int | float):
                cells.append(f'<c r="{ref}" s="2"><v>{_number(value)}</v></c>')
            else:
                index = strings.setdefault(str(value), len(strings))
                cells.append(f'<c r="{ref}" s="1" t="s"><v>{index}</v></c>')
        cells_xml.append(f'<row r="{r}" spans="1:{len(HEADERS)}" x14ac:dyDescent="0.25">'
                         + "".join(cells) + "</row>")
    end = f"{column_letters(len(HEADERS) - 1)}{len(grid)}"
    items = []
    for text in strings:
        if text == "Invoice INV-00001":  # bold "Invoice", then the number: a rich text
            items.append('<si><r><rPr><b/><sz val="11"/><color theme="1"/><rFont val="Calibri"/>'
                         '<family val="2"/><scheme val="minor"/></rPr><t xml:space="preserve">'
                         'Invoice </t></r><r><rPr><sz val="11"/><color theme="1"/><rFont '
                         'val="Calibri"/><family val="2"/><scheme val="minor"/></rPr><t>'
                         'INV-00001</t></r></si>')
        else:
            items.append(f"<si><t>{escape(text)}</t></si>")
    ns = (f'xmlns="{MAIN}" xmlns:r="{RELS}" xmlns:mc="http://schemas.openxmlformats.org/'
          'markup-compatibility/2006" mc:Ignorable="x14ac xr xr2 xr3" xmlns:x14ac="http://'
          'schemas.microsoft.com/office/spreadsheetml/2009/9/ac" xmlns:xr="http://schemas.'
          'microsoft.com/office/spreadsheetml/2014/revision" xmlns:xr2="http://schemas.microsoft'
          '.com/office/spreadsheetml/2015/revision2" xmlns:xr3="http://schemas.microsoft.com/'
          'office/spreadsheetml/2016/revision3"')
    sheet = (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\r\n'
        f'<worksheet {ns} xr:uid="{{00000000-0001-0000-0000-000000000000}}">'
        f'<sheetPr filterMode="false"><pageSetUpPr fitToPage="1"/></sheetPr>'
        f'<dimension ref="A1:{end}"/><sheetViews><sheetView tabSelected="1" zoomScale="90" '
        'zoomScaleNormal="90" workbookViewId="0"><pane ySplit="1" topLeftCell="A2" '
        'activePane="bottomLeft" state="frozen"/><selection pane="bottomLeft" activeCell="C5" '
        'sqref="C5"/></sheetView></sheetViews><sheetFormatPr defaultRowHeight="15" '
        'x14ac:dyDescent="0.25"/><cols><col min="1" max="6" width="20.7109375" style="1" '
        'customWidth="1"/><col min="7" max="7" width="24.7109375" style="1" customWidth="1"/>'
        '</cols><sheetData>' + "".join(cells_xml) + '</sheetData>'
        f'<autoFilter ref="A1:{end}" xr:uid="{{6E1F7F3A-1C2B-4D5E-8F90-A1B2C3D4E5F6}}"/>'
        '<dataValidations count="1"><dataValidation type="list" allowBlank="1" showInputMessage'
        '="1" showErrorMessage="1" sqref="B2:B500" xr:uid="{8A1B2C3D-0000-4000-8000-000000000001}">'
        '<formula1>"BUSINESS,INDIVIDUAL"</formula1></dataValidation></dataValidations>'
        '<pageMargins left="0.7" right="0.7" top="0.75" bottom="0.75" header="0.3" footer="0.3"/>'
        '<pageSetup paperSize="9" orientation="landscape" horizontalDpi="300" verticalDpi="300" '
        'r:id="rId1"/></worksheet>')
    workbook = (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\r\n'
        f'<workbook xmlns="{MAIN}" xmlns:r="{RELS}" xmlns:mc="http://schemas.openxmlformats.org/'
        'markup-compatibility/2006" mc:Ignorable="x15 xr xr6 xr10 xr2"><fileVersion appName='
        '"xl" lastEdited="7" lowestEdited="7" rupBuild="27328"/><workbookPr defaultThemeVersion'
        '="166925"/><bookViews><workbookView xWindow="-120" yWindow="-120" windowWidth="29040" '
        'windowHeight="15840"/></bookViews><sheets><sheet name="Payouts" sheetId="1" r:id="rId1"/>'
        '</sheets><definedNames><definedName name="_xlnm._FilterDatabase" localSheetId="0" '
        f'hidden="1">Payouts!$A$1:${column_letters(len(HEADERS) - 1)}${len(grid)}</definedName>'
        '</definedNames><calcPr calcId="191029"/></workbook>')
    styles = (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\r\n'
        f'<styleSheet xmlns="{MAIN}" xmlns:mc="http://schemas.openxmlformats.org/markup-'
        'compatibility/2006" mc:Ignorable="x14ac"><numFmts count="1"><numFmt numFmtId="164" '
        'formatCode="#,##0.00"/></numFmts><fonts count="1"><font><sz val="11"/><name val="'
        'Calibri"/><family val="2"/></font></fonts><fills count="2"><fill><patternFill '
        'patternType="none"/></fill><fill><patternFill patternType="gray125"/></fill></fills>'
        '<borders count="1"><border><left/><right/><top/><bottom/><diagonal/></border></borders>'
        '<cellStyleXfs count="1"><xf numFmtId="0" fontId="0" fillId="0" borderId="0"/>'
        '</cellStyleXfs><cellXfs count="3"><xf numFmtId="0" fontId="0" fillId="0" borderId="0" '
        'xfId="0"/><xf numFmtId="49" fontId="0" fillId="0" borderId="0" xfId="0" '
        'applyNumberFormat="1"/><xf numFmtId="164" fontId="0" fillId="0" borderId="0" xfId="0" '
        'applyNumberFormat="1"/></cellXfs><cellStyles count="1"><cellStyle name="Normal" '
        'xfId="0" builtinId="0"/></cellStyles></styleSheet>')
    return _zip(path, {
        "[Content_Types].xml": _content_types(
            f'<Override PartName="/xl/sharedStrings.xml" ContentType="{OFFICE}.sharedStrings+xml"/>'),
        "_rels/.rels": _root_rels(),
        "xl/workbook.xml": workbook,
        "xl/_rels/workbook.xml.rels": (
            '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\r\n'
            f'<Relationships xmlns="{PACKAGE_RELS}"><Relationship Id="rId3" Type="{RELS}/styles" '
            f'Target="styles.xml"/><Relationship Id="rId4" Type="{RELS}/sharedStrings" Target='
            f'"sharedStrings.xml"/><Relationship Id="rId1" Type="{RELS}/worksheet" Target='
            '"worksheets/sheet1.xml"/></Relationships>'),
        "xl/worksheets/sheet1.xml": sheet,
        "xl/worksheets/_rels/sheet1.xml.rels": (
            '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\r\n'
            f'<Relationships xmlns="{PACKAGE_RELS}"><Relationship Id="rId1" Type="{RELS}/'
            'printerSettings" Target="../printerSettings/printerSettings1.bin"/></Relationships>'),
        "xl/printerSettings/printerSettings1.bin": bytes(range(256)) * 4,
        "xl/styles.xml": styles,
        "xl/sharedStrings.xml": (
            '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\r\n'
            f'<sst xmlns="{MAIN}" count="{len(strings)}" uniqueCount="{len(strings)}">'
            + "".join(items) + "</sst>"),
    })


def google_style(path: Path, rows: list[dict[str, Any]]) -> Path:
    """As Google Sheets exports a sheet (File > Download > .xlsx): every text an inline
    string, attributes in alphabetical order, column widths, a drawing relationship."""
    grid = [list(HEADERS), *_cell_values(rows)]
    lines = []
    for r, line in enumerate(grid, start=1):
        cells = []
        for c, value in enumerate(line):
            ref = f"{column_letters(c)}{r}"
            if value is None:
                cells.append(f'<c r="{ref}" s="1"/>')
            elif isinstance(value, Decimal | int | float):
                cells.append(f'<c r="{ref}" s="2"><v>{_number(value)}</v></c>')
            else:
                cells.append(f'<c r="{ref}" s="1" t="inlineStr"><is><t>{escape(str(value))}'
                             '</t></is></c>')
        lines.append(f'<row r="{r}">' + "".join(cells) + "</row>")
    sheet = (
        '<?xml version="1.0" ?>\n'
        f'<worksheet xmlns="{MAIN}" xmlns:r="{RELS}" xmlns:mx="http://schemas.microsoft.com/'
        'office/mac/excel/2008/main" xmlns:mc="http://schemas.openxmlformats.org/markup-'
        'compatibility/2006" xmlns:mv="urn:schemas-microsoft-com:mac:vml" xmlns:x14="http://'
        'schemas.microsoft.com/office/spreadsheetml/2009/9/main" xmlns:x14ac="http://schemas.'
        'microsoft.com/office/spreadsheetml/2009/9/ac" xmlns:xm="http://schemas.microsoft.com/'
        'office/excel/2006/main"><sheetPr><outlinePr summaryBelow="0" summaryRight="0"/>'
        '</sheetPr><sheetViews><sheetView workbookViewId="0"><pane state="frozen" topLeftCell='
        '"A2" ySplit="1.0" activePane="bottomLeft"/><selection activeCell="B2" sqref="B2" pane='
        '"bottomLeft"/></sheetView></sheetViews><sheetFormatPr customHeight="1" defaultColWidth'
        '="12.63" defaultRowHeight="15.75"/><cols><col customWidth="1" min="1" max="13" width='
        '"18.88"/></cols><sheetData>' + "".join(lines) + '</sheetData><drawing r:id="rId1"/>'
        '</worksheet>')
    return _zip(path, {
        "[Content_Types].xml": _content_types(
            '<Override PartName="/xl/drawings/drawing1.xml" ContentType="application/vnd.'
            'openxmlformats-officedocument.drawing+xml"/>'),
        "_rels/.rels": _root_rels(),
        "xl/workbook.xml": (
            '<?xml version="1.0" ?>\n'
            f'<workbook xmlns="{MAIN}" xmlns:r="{RELS}"><workbookPr/><sheets><sheet state="visible"'
            ' name="Payouts" sheetId="1" r:id="rId3"/></sheets><definedNames/><calcPr/></workbook>'),
        "xl/_rels/workbook.xml.rels": (
            f'<?xml version="1.0" ?>\n<Relationships xmlns="{PACKAGE_RELS}"><Relationship '
            f'Id="rId1" Type="{RELS}/theme" Target="theme/theme1.xml"/><Relationship Id="rId2" '
            f'Type="{RELS}/styles" Target="styles.xml"/><Relationship Id="rId3" Type="{RELS}/'
            'worksheet" Target="worksheets/sheet1.xml"/></Relationships>'),
        "xl/theme/theme1.xml": '<?xml version="1.0" ?>\n<a:theme xmlns:a="http://schemas.'
                               'openxmlformats.org/drawingml/2006/main" name="Sheets"/>',
        "xl/worksheets/sheet1.xml": sheet,
        "xl/worksheets/_rels/sheet1.xml.rels": (
            f'<?xml version="1.0" ?>\n<Relationships xmlns="{PACKAGE_RELS}"><Relationship '
            f'Id="rId1" Type="{RELS}/drawing" Target="../drawings/drawing1.xml"/>'
            '</Relationships>'),
        "xl/drawings/drawing1.xml": (
            '<?xml version="1.0" ?>\n<xdr:wsDr xmlns:xdr="http://schemas.openxmlformats.org/'
            'drawingml/2006/spreadsheetDrawing" xmlns:a="http://schemas.openxmlformats.org/'
            'drawingml/2006/main" xmlns:c="http://schemas.openxmlformats.org/drawingml/2006/'
            'chart"/>'),
        "xl/styles.xml": (
            '<?xml version="1.0" ?>\n'
            f'<styleSheet xmlns="{MAIN}"><numFmts count="1"><numFmt numFmtId="164" formatCode='
            '"#,##0.00"/></numFmts><fonts count="1"><font><sz val="10.0"/><color rgb="FF000000"/>'
            '<name val="Arial"/><scheme val="minor"/></font></fonts><fills count="2"><fill>'
            '<patternFill patternType="none"/></fill><fill><patternFill patternType="lightGray"/>'
            '</fill></fills><borders count="1"><border/></borders><cellStyleXfs count="1"><xf '
            'borderId="0" fillId="0" fontId="0" numFmtId="0" applyAlignment="1" applyFont="1"/>'
            '</cellStyleXfs><cellXfs count="3"><xf borderId="0" fillId="0" fontId="0" numFmtId="0"'
            ' xfId="0"/><xf borderId="0" fillId="0" fontId="0" numFmtId="49" xfId="0" '
            'applyNumberFormat="1"/><xf borderId="0" fillId="0" fontId="0" numFmtId="164" '
            'xfId="0" applyNumberFormat="1"/></cellXfs><cellStyles count="1"><cellStyle '
            'xfId="0" name="Normal" builtinId="0"/></cellStyles><dxfs count="0"/></styleSheet>'),
    })
