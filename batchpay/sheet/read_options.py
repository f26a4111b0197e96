"""How a payout sheet is read: the six options `validate`, `run`, `rerun` and `plan` take
(--sheet, --source-currency, --decimal-comma, --include-hidden, --encoding, and the size
limits of the settings), as one value handed from the command to the reader, instead of six
loose parameters through every layer between them."""

from __future__ import annotations

from dataclasses import dataclass

from batchpay.sheet.limits import DEFAULT_LIMITS, SheetLimits


@dataclass(frozen=True)
class ReadOptions:
    sheet_name: str | None = None  # the workbook's sheet (None: the only, or first, one)
    source_currency: str | None = None  # fills empty source_currency cells
    limits: SheetLimits = DEFAULT_LIMITS  # bytes, rows, columns, cells: checked before parsing
    decimal_comma: bool = False  # amounts as text are written 1.250.000,00
    include_hidden: bool = False  # rows hidden or filtered out in the sheet are read too
    encoding: str | None = None  # a CSV file's text encoding (None: found from its bytes)


DEFAULT_READ = ReadOptions()
