"""The rules are run as they are before pandera: a sheet they all hold for is reported clean
without pandera, so they must never hold where pandera would report a failure."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from pandera.errors import SchemaErrors

from batchpay.sheet.columns import COLUMN_NAMES
from batchpay.sheet.normalize import frame_of, normalized_columns
from batchpay.sheet.schema import every_rule_holds, failures, schema_for
from tests.support.sheets import rows

MISTAKES: list[tuple[int, dict[str, Any]]] = [
    (2, {"account_number": "6222-12AB"}),
    (2, {"company_id": "91440300MA0000002X"}),
    (1, {"ic_number": "440305198001011234"}),
    (1, {"ic_number": "440305198013011230"}),
    (2, {"amount": "-5"}),
    (2, {"amount": "1e5"}),
    (2, {"amount": Decimal("1.234")}),
    (2, {"amount": "1234567890123456"}),
    (2, {"amount": None}),
    (2, {"target_amount": "5"}),
    (2, {"source_currency": "XXX"}),
    (2, {"source_currency": None}),
    (2, {"recipient_type": "PERSON"}),
    (2, {"payout_ref": "bad ref"}),
    (3, {"payout_ref": "t-00002"}),
    (2, {"recipient_name": "x" * 200}),
    (2, {"recipient_name": None}),
    (2, {"company_name": None}),
    (2, {"bank_name": "中国\x00银行"}),
    (2, {"country": "CHN"}),
    (2, {"sort_code": "12a"}),
    (2, {"currency": "cnyx"}),
    (2, {"payment_channel": "CASH"}),
]


def columns_of(sheet_rows: list[dict[str, Any]]) -> dict[str, list[str | None]]:
    columns = list(COLUMN_NAMES)
    values = [[r.get(name) for name in columns] for r in sheet_rows]
    return normalized_columns(columns, values, [[] for _ in sheet_rows])


def test_a_clean_sheet_holds_every_rule_and_pandera_agrees() -> None:
    data = columns_of(rows(6))
    assert every_rule_holds(data)
    frame = frame_of(data)
    schema_for(frame)[0].validate(frame, lazy=True)  # raises if pandera disagreed
    assert failures(frame) == []


@pytest.mark.parametrize(("row", "change"), MISTAKES)
def test_a_mistake_is_never_waved_through(row: int, change: dict[str, Any]) -> None:
    sheet_rows = rows(4)
    sheet_rows[row - 1].update(change)
    data = columns_of(sheet_rows)
    frame = frame_of(data)
    with pytest.raises(SchemaErrors):
        schema_for(frame)[0].validate(frame, lazy=True)
    assert not every_rule_holds(data)
    assert any(f.position == row - 1 for f in failures(frame))


TRICKY = ["", " ", "0", "00.00", ".5", "5.", "1.50", "1.234", "1e5", "-5", "1,250.00",
          "１２３４５６７８", "١٢٣٤٥٦٧٨", "12345678\n", "6222 0212", "12345678901234567890123456789012",
          "1234567890123456", "0.000000000000001", "0000000000000001.50", "CNY", "cny", "XXX", "JPY", "CN", "CHN",
          "BUSINESS", "business", "INDIVIDUAL", "x" * 140, "x" * 141, "中国银行", "中国\x00银行",
          "a\x85b", "INV-1", "inv-1", "a/b.c_d-e", "bad ref", "r" * 65, "91440300MA5F0AKM3X",
          "914403007261824992", "11010519491231002X", "110105194912310021", "440305198013011230",
          "110105194912310029"]


@pytest.mark.parametrize("name", COLUMN_NAMES)
def test_each_rule_holds_on_plain_lists_exactly_where_its_pandas_check_holds(name: str) -> None:
    """`every_rule_holds` judges the plain lists with each rule's `holds`: it must agree
    with the rule's pandas check (what pandera runs) on every value, alone and in pairs."""
    import pandas as pd

    from batchpay.sheet.columns import COLUMNS_BY_NAME
    from batchpay.sheet.schema import column_rules

    cases = [[v] for v in TRICKY] + [["INV-1", "inv-1"], ["CNY", "CNY"], [None, "x"],
                                     ["1.50", None, "2"]]
    for rule in column_rules(COLUMNS_BY_NAME[name]):
        assert rule.holds is not None
        for values in cases:
            series = pd.Series(values, dtype="str")
            result = rule.check(series)
            pandas_holds = bool(result if isinstance(result, bool)
                                else (result.fillna(False).astype(bool) | series.isna()).all())
            texts = [v for v in values if v is not None]
            assert rule.holds(texts) == pandas_holds, (
                rule.code, values)


ROW_CASES: list[dict[str, Any]] = [
    {"amount": None, "target_amount": None}, {"amount": "5", "target_amount": "5"},
    {"target_amount": "5", "amount": None}, {"amount": "1.234"}, {"amount": "1.230"},
    {"amount": "1.5", "source_currency": "JPY"}, {"amount": "1.5", "source_currency": "XXX"},
    {"amount": "1.5", "source_currency": None}, {"amount": "1e5"},
    {"amount": None, "target_amount": "1.234"}, {"amount": None, "target_amount": "1.23"},
    {"amount": None, "target_amount": "1.2", "currency": "JPY"},
    {"recipient_type": "BUSINESS", "company_name": None},
    {"recipient_type": "BUSINESS", "company_id": None},
    {"recipient_type": "INDIVIDUAL", "company_id": None, "company_name": None},
    {"recipient_type": None, "company_id": None},
]


@pytest.mark.parametrize("change", ROW_CASES)
def test_row_rules_hold_on_plain_lists_exactly_where_pandas_says_so(change: dict[str, Any]
                                                                    ) -> None:
    from batchpay.sheet.schema import row_rules, row_rules_hold

    sheet_rows = rows(3)
    sheet_rows[1].update(change)
    data = columns_of(sheet_rows)
    frame = frame_of(data)
    pandas_holds = all(bool(rule.check(frame).all()) for rule in row_rules(frame))
    assert row_rules_hold(data) == pandas_holds


def _loaded_after_validating(path: Any) -> list[str]:
    """The counts and the heavy modules loaded by validating `path` in a fresh process."""
    import subprocess
    import sys

    code = ("import sys; from pathlib import Path; "
            "from batchpay.sheet.validate import validate_file; "
            f"outcome = validate_file(Path({str(path)!r})); "
            "print(outcome.validation.counts, [m for m in ('pandas', 'pandera') "
            "if m in sys.modules])")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, timeout=120, cwd=path.parent)
    return done.stdout.strip().split(" [", 1)


def test_a_sheet_ready_to_pay_is_validated_without_pandas(tmp_path: Any) -> None:
    """Loading pandas and pandera costs more than checking 100,000 rows: a clean sheet is
    judged on plain lists; a sheet with a mistake still gets pandera's full report."""
    from tests.support.sheets import write_sheet

    counts, loaded = _loaded_after_validating(write_sheet(tmp_path / "clean.xlsx", rows(5)))
    assert "VALID" in counts and "INVALID" not in counts
    assert loaded == "]"
    bad = rows(5)
    bad[2]["account_number"] = "6222-12AB"
    counts, loaded = _loaded_after_validating(write_sheet(tmp_path / "bad.xlsx", bad))
    assert "INVALID" in counts
    assert loaded == "'pandas', 'pandera']"
