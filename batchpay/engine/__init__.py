"""The engine's face: what the fronts (cli/, console/) may call, and nothing else.

The fronts translate (options, forms, messages, exit codes); everything they do to money,
plans, payees and the journal goes through these names: paying a batch (`run_batch`,
`sync_run`, the sheet check `check_sheet_file`), plans and their approval (`make_plan`,
`review_plan`, `approve_plan`), the month as the console reads it (`review_run`,
`run_rows`, `journal_history`, `payee_list`...), and the books. tests/test_layers.py holds
the fronts to this list; tests/engine/test_face.py holds the list to the modules.

Each name is imported on first use (PEP 562 `__getattr__`), so that a command loads only
the modules it needs: `batchpay --help` does not load the PDF or the PostgreSQL code.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from batchpay.controls.approval import (
        SignatureRefused,
        check_release,
        console_approvers,
        maker_of,
    )
    from batchpay.controls.approval import (
        add_signature as add_plan_signature,
    )
    from batchpay.controls.approval import (
        approve as approve_plan,
    )
    from batchpay.controls.approval import (
        review as review_plan,
    )
    from batchpay.controls.approval import (
        summary_lines as plan_summary_lines,
    )
    from batchpay.controls.held_payees import Payees
    from batchpay.controls.masking import mask_ids, masked_id
    from batchpay.controls.payee_keys import BANK_FIELDS, fold
    from batchpay.controls.payee_records import PayeeConfirmation
    from batchpay.controls.payee_register import Register, RegisterLine, money_text, register_lines
    from batchpay.controls.payees import KNOWN, NEW, PayeeChange
    from batchpay.controls.payees import confirm as confirm_payee
    from batchpay.controls.payees import show as show_payee
    from batchpay.controls.plan_checks import PlanRefused, actors_of
    from batchpay.controls.plan_file import (
        MAKER_NAMESPACE,
        NAMESPACE,
        CheckedPlan,
        plan_id,
        read_plan,
        same_code,
    )
    from batchpay.engine.advice import advise_after_run, advise_run
    from batchpay.engine.banknames import list_banks
    from batchpay.engine.exports import FORMAT_NAMES, FORMATS, default_export_path, export_books
    from batchpay.engine.gate import input_ref
    from batchpay.engine.make_plan import PlanFiles, make_plan
    from batchpay.engine.month import (
        JournalHistory,
        ReviewRun,
        export_period,
        finished_rows,
        held_rows,
        journal_history,
        journal_in_use,
        journal_reachable,
        ledger_entries,
        money_by_run,
        payee_list,
        period_statement,
        record_payee_confirmation,
        review_run,
        run_advices,
        run_inputs,
        run_known,
        run_results,
        run_row_states,
        run_rows,
        runs_of_input,
        unpaid_sheet,
    )
    from batchpay.engine.notices import Delivery, NoticeFailed, NoticeKind, notice_records
    from batchpay.engine.notices import deliver as deliver_notices
    from batchpay.engine.notices import queue_at as queue_notice_at
    from batchpay.engine.paying import Reporter
    from batchpay.engine.reconcile import default_reconcile_path, reconcile_period
    from batchpay.engine.reconcile_lines import Reconciliation
    from batchpay.engine.render import (
        RunLine,
        find_run,
        render_run,
        result_rows,
        row_states,
        run_list,
    )
    from batchpay.engine.runner import (
        RunOptions,
        RunOutcome,
        default_results_path,
        load_input,
        run_batch,
    )
    from batchpay.engine.sheet_check import check_sheet_file
    from batchpay.engine.statement import (
        CurrencyTotal,
        Statement,
        build_statement,
        default_statement_path,
        totals_by_run,
    )
    from batchpay.engine.statement_book import write_statement
    from batchpay.engine.sync import sync_run
    from batchpay.journal.chain_keys import host_key as host_chain_key
    from batchpay.journal.chain_keys import key_id as chain_key_id
    from batchpay.journal.chain_keys import key_path as chain_key_path
    from batchpay.journal.integrity import check as check_journal
    from batchpay.journal.moving import backup_journal, copy_journal
    from batchpay.journal.outbox import AdviceRecord
    from batchpay.journal.store import Journal
    from batchpay.sheet.outcomes import json_document, summarize
    from batchpay.sheet.rates import rates_of
    from batchpay.sheet.read_options import DEFAULT_READ, ReadOptions
    from batchpay.sheet.template import write_template

# name -> (module, name there); a module's name relative to batchpay.engine
_FACE: dict[str, tuple[str, str]] = {
    "ReadOptions": ("..sheet.read_options", "ReadOptions"),
    "DEFAULT_READ": ("..sheet.read_options", "DEFAULT_READ"),
    "mask_ids": ("..controls.masking", "mask_ids"),
    "masked_id": ("..controls.masking", "masked_id"),
    "fold": ("..controls.payee_keys", "fold"),
    "KNOWN": ("..controls.payees", "KNOWN"),
    "NEW": ("..controls.payees", "NEW"),
    "rates_of": ("..sheet.rates", "rates_of"),
    "NoticeKind": (".notices", "NoticeKind"),
    "Delivery": (".notices", "Delivery"),
    "NoticeFailed": (".notices", "NoticeFailed"),
    "deliver_notices": (".notices", "deliver"),
    "queue_notice_at": (".notices", "queue_at"),
    "notice_records": (".notices", "notice_records"),
    "run_inputs": (".month", "run_inputs"),
    # paying a batch
    "run_batch": (".runner", "run_batch"),
    "RunOptions": (".runner", "RunOptions"),
    "RunOutcome": (".runner", "RunOutcome"),
    "load_input": (".runner", "load_input"),
    "default_results_path": (".runner", "default_results_path"),
    "Reporter": (".paying", "Reporter"),
    "input_ref": (".gate", "input_ref"),
    "sync_run": (".sync", "sync_run"),
    "check_sheet_file": (".sheet_check", "check_sheet_file"),
    "list_banks": (".banknames", "list_banks"),
    "advise_after_run": (".advice", "advise_after_run"),
    "advise_run": (".advice", "advise_run"),
    # plans and approval
    "make_plan": (".make_plan", "make_plan"),
    "PlanFiles": (".make_plan", "PlanFiles"),
    "approve_plan": ("..controls.approval", "approve"),
    "review_plan": ("..controls.approval", "review"),
    "plan_summary_lines": ("..controls.approval", "summary_lines"),
    "maker_of": ("..controls.approval", "maker_of"),
    "check_release": ("..controls.approval", "check_release"),
    "console_approvers": ("..controls.approval", "console_approvers"),
    "add_plan_signature": ("..controls.approval", "add_signature"),
    "SignatureRefused": ("..controls.approval", "SignatureRefused"),
    "PlanRefused": ("..controls.plan_checks", "PlanRefused"),
    "actors_of": ("..controls.plan_checks", "actors_of"),
    "CheckedPlan": ("..controls.plan_file", "CheckedPlan"),
    "read_plan": ("..controls.plan_file", "read_plan"),
    "plan_id": ("..controls.plan_file", "plan_id"),
    "same_code": ("..controls.plan_file", "same_code"),
    "NAMESPACE": ("..controls.plan_file", "NAMESPACE"),
    "MAKER_NAMESPACE": ("..controls.plan_file", "MAKER_NAMESPACE"),
    # payees
    "BANK_FIELDS": ("..controls.payee_keys", "BANK_FIELDS"),
    "PayeeChange": ("..controls.payees", "PayeeChange"),
    "PayeeConfirmation": ("..controls.payee_records", "PayeeConfirmation"),
    "Payees": ("..controls.held_payees", "Payees"),
    "Register": ("..controls.payee_register", "Register"),
    "RegisterLine": ("..controls.payee_register", "RegisterLine"),
    "register_lines": ("..controls.payee_register", "register_lines"),
    "money_text": ("..controls.payee_register", "money_text"),
    "confirm_payee": ("..controls.payees", "confirm"),
    "show_payee": ("..controls.payees", "show"),
    # a run's results, the runs
    "RunLine": (".render", "RunLine"),
    "find_run": (".render", "find_run"),
    "render_run": (".render", "render_run"),
    "result_rows": (".render", "result_rows"),
    "row_states": (".render", "row_states"),
    "run_list": (".render", "run_list"),
    "json_document": ("..sheet.outcomes", "json_document"),
    "summarize": ("..sheet.outcomes", "summarize"),
    "write_template": ("..sheet.template", "write_template"),
    # the books
    "Statement": (".statement", "Statement"),
    "CurrencyTotal": (".statement", "CurrencyTotal"),
    "build_statement": (".statement", "build_statement"),
    "default_statement_path": (".statement", "default_statement_path"),
    "totals_by_run": (".statement", "totals_by_run"),
    "write_statement": (".statement_book", "write_statement"),
    "FORMATS": (".exports", "FORMATS"),
    "FORMAT_NAMES": (".exports", "FORMAT_NAMES"),
    "default_export_path": (".exports", "default_export_path"),
    "export_books": (".exports", "export_books"),
    "Reconciliation": (".reconcile_lines", "Reconciliation"),
    "default_reconcile_path": (".reconcile", "default_reconcile_path"),
    "reconcile_period": (".reconcile", "reconcile_period"),
    # the month, read for the console (each opens the journal for one question)
    "ReviewRun": (".month", "ReviewRun"),
    "review_run": (".month", "review_run"),
    "JournalHistory": (".month", "JournalHistory"),
    "journal_history": (".month", "journal_history"),
    "payee_list": (".month", "payee_list"),
    "record_payee_confirmation": (".month", "record_payee_confirmation"),
    "journal_reachable": (".month", "journal_reachable"),
    "journal_in_use": (".month", "journal_in_use"),
    "runs_of_input": (".month", "runs_of_input"),
    "run_known": (".month", "run_known"),
    "run_rows": (".month", "run_rows"),
    "run_row_states": (".month", "run_row_states"),
    "finished_rows": (".month", "finished_rows"),
    "held_rows": (".month", "held_rows"),
    "run_results": (".month", "run_results"),
    "run_advices": (".month", "run_advices"),
    "ledger_entries": (".month", "ledger_entries"),
    "period_statement": (".month", "period_statement"),
    "money_by_run": (".month", "money_by_run"),
    "export_period": (".month", "export_period"),
    "unpaid_sheet": (".month", "unpaid_sheet"),
    # the journal as the commands hand it to the engine
    "Journal": ("..journal.store", "Journal"),
    "AdviceRecord": ("..journal.outbox", "AdviceRecord"),
    "check_journal": ("..journal.integrity", "check"),
    "backup_journal": ("..journal.moving", "backup_journal"),
    "copy_journal": ("..journal.moving", "copy_journal"),
    # the chain key this host holds (the console seals its signing keys with it)
    "host_chain_key": ("..journal.chain_keys", "host_key"),
    "chain_key_id": ("..journal.chain_keys", "key_id"),
    "chain_key_path": ("..journal.chain_keys", "key_path"),
}

__all__ = [  # sorted; the same names as _FACE's (tests/engine/test_face.py)
    "AdviceRecord",
    "BANK_FIELDS",
    "CheckedPlan",
    "CurrencyTotal",
    "DEFAULT_READ",
    "Delivery",
    "FORMATS",
    "FORMAT_NAMES",
    "Journal",
    "JournalHistory",
    "KNOWN",
    "MAKER_NAMESPACE",
    "NAMESPACE",
    "NEW",
    "NoticeFailed",
    "NoticeKind",
    "PayeeChange",
    "PayeeConfirmation",
    "Payees",
    "PlanFiles",
    "PlanRefused",
    "ReadOptions",
    "Reconciliation",
    "Register",
    "RegisterLine",
    "Reporter",
    "ReviewRun",
    "RunLine",
    "RunOptions",
    "RunOutcome",
    "SignatureRefused",
    "Statement",
    "actors_of",
    "add_plan_signature",
    "advise_after_run",
    "advise_run",
    "approve_plan",
    "backup_journal",
    "build_statement",
    "chain_key_id",
    "chain_key_path",
    "check_journal",
    "check_release",
    "check_sheet_file",
    "confirm_payee",
    "console_approvers",
    "copy_journal",
    "default_export_path",
    "default_reconcile_path",
    "default_results_path",
    "default_statement_path",
    "deliver_notices",
    "export_books",
    "export_period",
    "find_run",
    "finished_rows",
    "fold",
    "held_rows",
    "host_chain_key",
    "input_ref",
    "journal_history",
    "journal_in_use",
    "journal_reachable",
    "json_document",
    "ledger_entries",
    "list_banks",
    "load_input",
    "make_plan",
    "maker_of",
    "mask_ids",
    "masked_id",
    "money_by_run",
    "money_text",
    "notice_records",
    "payee_list",
    "period_statement",
    "plan_id",
    "plan_summary_lines",
    "queue_notice_at",
    "rates_of",
    "read_plan",
    "reconcile_period",
    "record_payee_confirmation",
    "register_lines",
    "render_run",
    "result_rows",
    "review_plan",
    "review_run",
    "row_states",
    "run_advices",
    "run_batch",
    "run_inputs",
    "run_known",
    "run_list",
    "run_results",
    "run_row_states",
    "run_rows",
    "runs_of_input",
    "same_code",
    "show_payee",
    "summarize",
    "sync_run",
    "totals_by_run",
    "unpaid_sheet",
    "write_statement",
    "write_template",
]


# A name that is also a module of the engine is bound now: the first import of the module
# would otherwise set the package's attribute to the module, hiding the function.
from .make_plan import make_plan  # noqa: E402


def __getattr__(name: str) -> Any:
    try:
        module, attr = _FACE[name]
    except KeyError:
        raise AttributeError(f"batchpay.engine has no {name!r}: the fronts call only "
                             "what its face exports") from None
    value = getattr(importlib.import_module(module, __name__), attr)
    globals()[name] = value  # the next use is a plain lookup
    return value


def __dir__() -> list[str]:
    return __all__
