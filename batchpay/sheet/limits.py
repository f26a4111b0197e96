"""How big a sheet batchpay reads: bytes, rows, columns and cells, checked before parsing.

A spreadsheet parser allocates the rectangle a sheet spans (rows × columns), not the cells
it holds: one cell at XFD1048576 in a 5 KB file asks for 17 billion. The guard reads each
worksheet's declared dimension and the cell references themselves and refuses a sheet over
these bounds with one line, before any parser allocates (settings `max_file_mb`,
`max_rows`, `max_columns`, `max_cells`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from batchpay.errors import InputError

_SPLIT = "Split the payouts into smaller sheets"


@dataclass(frozen=True)
class SheetLimits:
    max_bytes: int = 50 * 2**20
    max_rows: int = 1_000_000
    max_columns: int = 200
    max_cells: int = 10_000_000  # the rectangle the sheet spans, and the cells it holds

    @classmethod
    def of(cls, settings: Any) -> SheetLimits:
        return cls(max_bytes=int(settings.max_file_mb * 2**20), max_rows=settings.max_rows,
                   max_columns=settings.max_columns, max_cells=settings.max_cells)

    def check(self, where: str, *, rows: int, columns: int, cells: int = 0) -> None:
        """Refuse a sheet spanning `rows` × `columns`, or holding `cells` cells, over a bound."""
        if rows > self.max_rows:
            raise InputError(f"{where} reaches row {rows:,}; batchpay reads at most "
                             f"{self.max_rows:,} rows.",
                             hint=f"{_SPLIT}, or raise the max_rows setting.")
        if columns > self.max_columns:
            raise InputError(f"{where} reaches column {columns:,}; batchpay reads at most "
                             f"{self.max_columns:,} columns.",
                             hint="Delete the cells far to the right of the table, or raise "
                                  "the max_columns setting.")
        span = rows * columns
        if max(span, cells) > self.max_cells:
            what = f"{cells:,} cells" if cells > span else f"up to {rows:,} rows × {columns:,} columns"
            raise InputError(f"{where} spans {what}; batchpay reads at most "
                             f"{self.max_cells:,} cells.",
                             hint=f"{_SPLIT}, or raise the max_cells setting.")


DEFAULT_LIMITS = SheetLimits()
