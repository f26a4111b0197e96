"""The one column table: its shape, and the README table generated from it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from batchpay.sheet.columns import (
    COLUMN_NAMES,
    COLUMNS,
    IDENTIFIER_COLUMNS,
    normalize_header,
    readme_table,
)
from batchpay.sheet.validate import PayoutRow

README = Path(__file__).resolve().parents[2] / "README.md"
DESIGN_ORDER = (
    "payout_ref", "recipient_type", "recipient_name", "company_name", "company_id",
    "ic_number", "account_number", "bank_name", "bank_city", "sort_code", "amount",
    "target_amount", "payee_id", "payee_email", "source_currency", "reason", "remark", "item_category", "currency", "country",
    "payment_channel",
)


def test_columns_follow_the_sheet_contract() -> None:
    assert COLUMN_NAMES == DESIGN_ORDER
    assert set(IDENTIFIER_COLUMNS) <= set(COLUMN_NAMES)
    for column in COLUMNS:
        assert column.required in {"yes", "no", "BUSINESS", "yes*", "one"}
        assert column.kind in {"id", "text", "amount", "choice", "currency", "country"}
        assert column.rule and column.help and column.example
        if column.default is not None:
            assert column.default in column.choices


def test_every_payout_row_field_is_a_column_and_api_fields_are_unique() -> None:
    fields = set(PayoutRow.__dataclass_fields__) - {"row"}
    assert fields == set(COLUMN_NAMES)
    api_fields = [c.api_field for c in COLUMNS if c.api_field]
    assert len(api_fields) == len(set(api_fields))


@pytest.mark.parametrize(("header", "name"), [
    ("Payout Ref", "payout_ref"), ("  ACCOUNT_NUMBER ", "account_number"),
    ("Source\u00a0Currency", "source_currency"), ("bank  city", "bank_city"),
])
def test_headers_are_matched_loosely(header: str, name: str) -> None:
    assert normalize_header(header) == name


def test_readme_table_lists_every_column_once() -> None:
    table = readme_table()
    lines = table.strip().splitlines()
    assert len(lines) == 2 + len(COLUMNS)
    for column, line in zip(COLUMNS, lines[2:], strict=True):
        assert line.startswith(f"| `{column.name}` |")
        assert line.count("|") - line.count("\\|") == 6


def test_readme_column_table_matches_the_column_table() -> None:
    if not README.exists():
        pytest.skip("README.md not written yet")
    text = README.read_text(encoding="utf-8")
    found = re.search(r"<!-- columns:start -->\n(.*?)<!-- columns:end -->", text, re.S)
    if found is None:
        pytest.skip("README.md has no <!-- columns:start --> / <!-- columns:end --> markers yet")
    assert found.group(1).strip() == readme_table().strip(), (
        "README column table is out of date: paste batchpay.sheet.columns.readme_table()")
