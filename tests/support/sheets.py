"""Payout sheets made in the tests: realistic rows with valid ids, written as xlsx with text ids."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any

import xlsxwriter

from batchpay.sheet.china_ids import resident_id_check_digit, uscc_check_char

HEADERS = ["payout_ref", "recipient_type", "recipient_name", "company_name", "company_id",
           "ic_number", "account_number", "bank_name", "bank_city", "amount",
           "source_currency", "reason", "remark"]

BANKS = ["中国工商银行", "中国建设银行", "中国银行", "招商银行", "交通银行"]


def uscc(n: int) -> str:
    first17 = f"91440300MA{n:07d}"
    return first17 + uscc_check_char(first17)


def resident_id(n: int) -> str:
    """A valid resident id of its own for each n below 85,500 (the district code moves on
    every 900 ids, so a sheet of many rows holds no two people with one id)."""
    district = 5 + (n // 900) % 95
    first17 = (f"4403{district:02d}{1980 + n % 20}{1 + n % 9:02d}{10 + n % 18:02d}"
               f"{100 + n % 900:03d}")
    return first17 + resident_id_check_digit(first17)


def row(n: int, **overrides: Any) -> dict[str, Any]:
    business = n % 2 == 0
    values: dict[str, Any] = {
        "payout_ref": f"T-{n:05d}",
        "recipient_type": "BUSINESS" if business else "INDIVIDUAL",
        "recipient_name": f"深圳市测试{n}电子有限公司" if business else f"张{n}",
        "company_name": f"深圳市测试{n}电子有限公司" if business else None,
        "company_id": uscc(n) if business else None,
        "ic_number": None if business else resident_id(n),
        "account_number": f"6222{n:015d}",
        "bank_name": BANKS[n % len(BANKS)],
        "bank_city": "深圳",
        "amount": Decimal(100000 + n * 1000) + Decimal("0.50"),
        "source_currency": "NGN",
        "reason": f"Invoice INV-{n:05d}",
        "remark": None,
    }
    values.update(overrides)
    return values


def write_grid(path: Path, headers: list[str], rows: Iterable[Sequence[Any]], *,
               sheet: str = "Payouts", constant_memory: bool = False) -> Path:
    """A header row, then strings as text cells, numbers as number cells, None as empty."""
    workbook = xlsxwriter.Workbook(str(path), {"constant_memory": constant_memory})
    ws = workbook.add_worksheet(sheet)
    for c, header in enumerate(headers):
        ws.write_string(0, c, header)
    for r, row in enumerate(rows, start=1):
        for c, value in enumerate(row):
            if isinstance(value, str):
                ws.write_string(r, c, value)
            elif value is not None:
                ws.write_number(r, c, float(value))
    workbook.close()
    return path


def write_sheet(path: Path, rows: list[dict[str, Any]], headers: list[str] = HEADERS) -> Path:
    """Ids as text cells, amounts as numbers, as an operator's careful sheet has them."""
    def cell(name: str, value: Any) -> Any:
        if value is None or (name == "amount" and isinstance(value, Decimal | int | float)):
            return value
        return str(value)

    return write_grid(path, headers, ([cell(n, values.get(n)) for n in headers]
                                      for values in rows))


def rows(count: int, start: int = 1, **overrides: Any) -> list[dict[str, Any]]:
    return [row(n, **overrides) for n in range(start, start + count)]
