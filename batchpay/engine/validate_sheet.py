"""`batchpay validate`: a sheet checked as a run would check it, without sending anything.

    read + validate ─► bank names (the service's directory, cached per day)
        ─► payees (the journal's register) ─► the report workbook (with --report)

The bank-name check comes before the report, which shows its warnings; a service that
cannot be used is a note, never an error, so that a sheet can be checked offline.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from batchpay.controls.payees import HoldRules, PayeeChange, check_sheet, reported
from batchpay.engine.banknames import check_sheet_bank_names
from batchpay.files import check_output
from batchpay.service import Opener
from batchpay.settings.model import Settings
from batchpay.sheet.limits import SheetLimits
from batchpay.sheet.validate import ValidateOutcome, validate_file, write_validation_report


@dataclass
class SheetCheck:
    """What `validate` found: the rows, the notes of the bank-name check, the payee changes
    (as the Payee changes sheet lists them), the report written."""

    outcome: ValidateOutcome
    bank_notes: list[str] = field(default_factory=list)
    payee_changes: list[PayeeChange] = field(default_factory=list)

    @property
    def report(self) -> Path | None:
        return self.outcome.report

    @property
    def exit_code(self) -> int:
        """0 when every row is VALID, else 1 (`statuses.exit_code`)."""
        return self.outcome.exit_code


def check_sheet_file(path: Path, settings: Settings, connect: Opener | None, *,
                     report: Path | None = None, overwrite: bool = False,
                     sheet_name: str | None = None, source_currency: str | None = None,
                     decimal_comma: bool = False, include_hidden: bool = False,
                     encoding: str | None = None) -> SheetCheck:
    """Read and validate the sheet at `path`, compare its bank names with the directory of
    the service `connect` opens (None: not compared, works offline), find its payee changes
    in the journal's register, and write the report workbook when `report` is given (checked
    as writable before anything is read)."""
    if report is not None:
        check_output(report, overwrite=overwrite, inputs=(path,))
    outcome = validate_file(path, sheet_name=sheet_name, source_currency=source_currency,
                            limits=SheetLimits.of(settings), decimal_comma=decimal_comma,
                            include_hidden=include_hidden, encoding=encoding)
    notes = ([] if connect is None
             else check_sheet_bank_names(outcome.validation, settings, connect))
    findings = check_sheet(settings.journal, outcome.validation.rows,
                           HoldRules(settings.hold_new_payees, settings.payee_change_hold_hours))
    changes = reported(findings)
    if report is not None:
        # a row the terminal shows HELD is HELD in the report too, with its Payee changes
        write_validation_report(report, outcome.sheet, outcome.validation,
                                held={f.row: f.message for f in findings if f.held},
                                payee_changes=changes)
        outcome.report = report
    return SheetCheck(outcome, notes, changes)
