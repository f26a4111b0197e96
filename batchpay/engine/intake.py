"""The input of a run: a payout sheet, or (for `rerun`) the Results sheet of a results workbook.

A results workbook is read with the same safe reader as any sheet; its result columns
are dropped (an input column renamed `<name>_input` gets its name back) and every row
keeps the row number of the original sheet, from the `row` column, so that messages
still point at the operator's own sheet.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from batchpay.config import Settings
from batchpay.errors import InputError
from batchpay.sheet.read import Sheet, SheetRow, read_sheet
from batchpay.sheet.results import RESULT_COLUMNS


def load_input(options: Any, settings: Settings) -> tuple[Sheet, Any]:
    from batchpay.sheet.schema import validate_sheet

    max_bytes = int(settings.max_file_mb * 2**20)
    if options.kind == "rerun" or (options.kind == "dry-run" and _is_results(options)):
        sheet = results_as_sheet(read_sheet(options.sheet, sheet=options.sheet_name or "Results",
                                            max_bytes=max_bytes))
    else:
        sheet = read_sheet(options.sheet, sheet=options.sheet_name, max_bytes=max_bytes)
    return sheet, validate_sheet(sheet, source_currency=options.source_currency)


def _is_results(options: Any) -> bool:
    return "-results-" in options.sheet.stem


def results_as_sheet(sheet: Sheet) -> Sheet:
    """The input part of a Results sheet, with the original row numbers."""
    if "row" not in sheet.columns or "status" not in sheet.columns:
        raise InputError(
            f"{sheet.path.name} has no `row` and `status` columns: it is not a batchpay "
            "results workbook.",
            hint="Give rerun the results workbook a run wrote (…-results-<run id>.xlsx).",
        )
    row_index = sheet.columns.index("row")
    keep = [i for i, name in enumerate(sheet.columns) if name not in RESULT_COLUMNS]
    columns = [_input_name(sheet.columns[i]) for i in keep]
    headers = [_input_name(sheet.headers[i]) for i in keep]
    rows = []
    for r in sheet.rows:
        original = r.values[row_index]
        try:
            number = int(original)
        except (TypeError, ValueError):
            raise InputError(
                f"Row {r.row} of {sheet.path.name} has no row number in its `row` column.",
                hint="Do not edit the `row` column: it ties each line to your original sheet.",
            ) from None
        errors = {_input_name(k): v for k, v in r.errors.items() if k not in RESULT_COLUMNS}
        rows.append(SheetRow(number, [r.values[i] for i in keep], errors))
    return replace(sheet, columns=columns, headers=headers, rows=rows)


def _input_name(name: str) -> str:
    return name[: -len("_input")] if name.endswith("_input") and \
        name[: -len("_input")] in RESULT_COLUMNS else name
