"""`batchpay template`: the workbook and CSV an operator starts from, and the committed copies."""

from __future__ import annotations

import codecs
from pathlib import Path
from typing import Any

import openpyxl
import pytest
from click.testing import CliRunner
from openpyxl.utils import get_column_letter

from batchpay.cli import cli
from batchpay.sheet.columns import COLUMN_NAMES, COLUMNS
from batchpay.sheet.read import read_sheet

TEMPLATES = Path(__file__).resolve().parents[2] / "templates"


def run_template(*args: str) -> Any:
    return CliRunner().invoke(cli, ["template", *args])


def workbook_content(path: Path) -> dict[str, Any]:
    """What a person sees: sheets, cell values, column formats, dropdowns, frozen panes."""
    book = openpyxl.load_workbook(path)
    content: dict[str, Any] = {"sheets": book.sheetnames}
    for sheet in book:
        content[sheet.title] = {
            "cells": [[c.value for c in row] for row in sheet.iter_rows()],
            "freeze": sheet.freeze_panes,
            "formats": sorted((d.min, d.max, d.number_format, d.width)
                              for d in sheet.column_dimensions.values()),
            "validations": sorted(
                (str(v.sqref), v.type, v.formula1, v.errorStyle, v.promptTitle, v.prompt)
                for v in sheet.data_validations.dataValidation),
        }
    return content


def test_xlsx_template_has_columns_text_ids_dropdowns_and_help(tmp_path: Path) -> None:
    out = tmp_path / "t.xlsx"
    result = run_template("--out", str(out))
    assert result.exit_code == 0, result.output
    assert result.output.strip() == str(out)
    book = openpyxl.load_workbook(out)
    assert book.sheetnames == ["Payouts", "How to fill"]
    data = book["Payouts"]
    assert [c.value for c in data[1]] == list(COLUMN_NAMES)
    assert data.max_row == 1 and data.freeze_panes == "A2"
    # openpyxl folds neighbouring columns of one format into one dimension (E:F)
    dimensions = list(data.column_dimensions.values())
    for index, column in enumerate(COLUMNS, start=1):
        found = [d.number_format for d in dimensions if d.min <= index <= d.max]
        assert found == ["@" if column.kind == "id" else "General"], column.name
    lists = {str(v.sqref): v for v in data.data_validations.dataValidation if v.type == "list"}
    with_choices = [(i, c) for i, c in enumerate(COLUMNS, start=1) if c.choices]
    assert {c.name for _, c in with_choices} >= {"recipient_type", "source_currency", "currency",
                                                 "country", "payment_channel"}
    for index, column in with_choices:
        letter = get_column_letter(index)
        rule = lists[f"{letter}2:{letter}10001"]
        assert rule.formula1 == '"' + ",".join(column.choices) + '"'
    assert lists["B2:B10001"].errorStyle in (None, "stop")  # recipient_type: nothing else
    currency = get_column_letter(COLUMN_NAMES.index("source_currency") + 1)
    assert lists[f"{currency}2:{currency}10001"].errorStyle == "warning"  # another ISO code
    guide = [[c.value for c in row] for row in book["How to fill"].iter_rows()]
    assert guide[0][:5] == ["column", "required", "rule", "how to fill", "example"]
    assert [row[0] for row in guide[1:]] == list(COLUMN_NAMES)
    for row, column in zip(guide[1:], COLUMNS, strict=True):
        assert row[1] == column.required_label and row[3] == column.help
        assert row[4] == column.example and "`" not in row[2]


def test_template_is_read_as_a_payout_sheet_with_no_rows(tmp_path: Path) -> None:
    for name in ("t.xlsx", "t.csv"):
        assert run_template("--out", str(tmp_path / name)).exit_code == 0
        sheet = read_sheet(tmp_path / name)
        assert sheet.columns == list(COLUMN_NAMES) and sheet.rows == []


def test_csv_template_is_utf8_with_bom_and_header_only(tmp_path: Path) -> None:
    out = tmp_path / "t.csv"
    assert run_template("--out", str(out)).exit_code == 0
    data = out.read_bytes()
    assert data.startswith(codecs.BOM_UTF8)
    assert data[3:].decode("utf-8") == ",".join(COLUMN_NAMES) + "\r\n"


def test_default_name_other_suffix_and_no_overwrite(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert run_template().output.strip() == "payouts-template.xlsx"
    assert (tmp_path / "payouts-template.xlsx").is_file()
    filled = (tmp_path / "payouts-template.xlsx").read_bytes()
    again = run_template()
    assert again.exit_code == 2 and "already exists" in again.output
    assert (tmp_path / "payouts-template.xlsx").read_bytes() == filled
    wrong = run_template("--out", "payouts.ods")
    assert wrong.exit_code == 2 and ".xlsx or .csv" in wrong.output


def test_committed_templates_are_what_the_command_writes(tmp_path: Path) -> None:
    for name in ("payouts-template.xlsx", "payouts-template.csv"):
        fresh = tmp_path / name
        assert run_template("--out", str(fresh)).exit_code == 0
        committed = TEMPLATES / name
        if name.endswith(".csv"):
            assert committed.read_text(encoding="utf-8-sig") == fresh.read_text(encoding="utf-8-sig")
        else:
            assert workbook_content(committed) == workbook_content(fresh)
