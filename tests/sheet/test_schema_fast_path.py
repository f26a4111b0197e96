"""The rules are run as they are before pandera: a sheet they all hold for is reported clean
without pandera, so they must never hold where pandera would report a failure."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from pandera.errors import SchemaErrors

from batchpay.sheet.columns import COLUMN_NAMES
from batchpay.sheet.schema import every_rule_holds, failures, normalized_frame, schema_for
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


def frame_of(sheet_rows: list[dict[str, Any]]) -> Any:
    columns = list(COLUMN_NAMES)
    values = [[r.get(name) for name in columns] for r in sheet_rows]
    return normalized_frame(columns, values, [[] for _ in sheet_rows])


def test_a_clean_sheet_holds_every_rule_and_pandera_agrees() -> None:
    frame = frame_of(rows(6))
    assert every_rule_holds(frame)
    schema_for(frame)[0].validate(frame, lazy=True)  # raises if pandera disagreed
    assert failures(frame) == []


@pytest.mark.parametrize(("row", "change"), MISTAKES)
def test_a_mistake_is_never_waved_through(row: int, change: dict[str, Any]) -> None:
    sheet_rows = rows(4)
    sheet_rows[row - 1].update(change)
    frame = frame_of(sheet_rows)
    with pytest.raises(SchemaErrors):
        schema_for(frame)[0].validate(frame, lazy=True)
    assert not every_rule_holds(frame)
    assert any(f.position == row - 1 for f in failures(frame))
