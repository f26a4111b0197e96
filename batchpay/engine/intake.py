"""The input of a run: a payout sheet, or (for `rerun`) the Results sheet of a results
workbook, read back as the payout sheet it came from (batchpay.sheet.results)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from batchpay.config import Settings
from batchpay.sheet.limits import SheetLimits
from batchpay.sheet.read import Sheet, read_sheet
from batchpay.sheet.results_input import read_results_sheet

if TYPE_CHECKING:
    from batchpay.engine.runner import RunOptions
    from batchpay.sheet.validate import Validation


def load_input(options: RunOptions, settings: Settings) -> tuple[Sheet, Validation]:
    from batchpay.sheet.validate import require_payout_rows, validate_sheet

    limits = SheetLimits.of(settings)
    if options.approved is not None:  # an approved plan's rows: no file is read again
        sheet = options.approved.sheet()
        return sheet, validate_sheet(sheet, source_currency=options.source_currency)
    if options.kind == "rerun":
        sheet = read_results_sheet(options.sheet, sheet=options.sheet_name, limits=limits,
                                   include_hidden=options.include_hidden)
    else:
        sheet = read_sheet(options.sheet, sheet=options.sheet_name, limits=limits,
                           decimal_comma=options.decimal_comma,
                           include_hidden=options.include_hidden)
    require_payout_rows(sheet)
    return sheet, validate_sheet(sheet, source_currency=options.source_currency)
