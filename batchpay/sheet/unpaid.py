"""The rows of a run that were not paid, as a new sheet in the input's own columns: what an
operator fixes and uploads again.

Only rows that were never sent belong in it (INVALID, NOT_SENT, QUOTE_FAILED, REJECTED,
HELD): a row on its way, or in doubt (UNKNOWN), is never offered for paying again.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from pathlib import Path

from batchpay.files import replaced_atomically
from batchpay.sheet.outcomes import ResultRow
from batchpay.sheet.xlsx import WORKBOOK_OPTIONS, write_number, write_text
from batchpay.statuses import SENT


def unpaid_rows(rows: Sequence[ResultRow]) -> list[ResultRow]:
    """The rows no request was sent for (nor may have been)."""
    return [r for r in rows if r.status not in SENT]


def write_unpaid(path: Path, columns: Sequence[str], rows: Sequence[ResultRow]) -> None:
    """`rows` as a sheet "Payouts" with the input's `columns`, numbers as numbers, written
    whole or not at all."""
    import xlsxwriter

    with replaced_atomically(path) as partial:
        book = xlsxwriter.Workbook(str(partial), WORKBOOK_OPTIONS)
        sheet = book.add_worksheet("Payouts")
        for col, name in enumerate(columns):
            write_text(sheet, 0, col, name)
        for at, row in enumerate(rows, start=1):
            for col, value in enumerate(row.inputs):
                if isinstance(value, Decimal | int | float) and not isinstance(value, bool):
                    write_number(sheet, at, col, value)
                elif value is not None:
                    write_text(sheet, at, col, str(value))
        book.close()
