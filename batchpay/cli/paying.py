"""The commands that check and pay a sheet and account for it: validate, run, rerun, runs,
sync, report, verify."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from batchpay import clock
from batchpay.cli.base import (
    JOURNAL_HELP,
    F,
    cli,
    debug_option,
    decimal_comma_option,
    encoding_option,
    fail,
    handle_errors,
    include_hidden_option,
    journal_option,
    open_journal,
    overwrite_option,
    quiet_option,
    settings_for,
    shown_path,
    writable_path,
)
from batchpay.files import check_name_fits, check_output
from batchpay.statuses import EXIT_FAILED, EXIT_ROWS

if TYPE_CHECKING:
    from batchpay.engine import CheckedPlan


@cli.command()
@click.argument("sheet", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--report", type=click.Path(dir_okay=False, path_type=Path),
              callback=writable_path,
              help="Write every row with its status and messages to this .xlsx workbook.")
@click.option("--sheet", "sheet_name", help="The sheet to read (default: Payouts, else the first).")
@click.option("--source-currency", help="Wallet currency for rows that leave source_currency "
              "empty, e.g. NGN.")
@click.option("--json", "as_json", is_flag=True,
              help="Print one JSON document (counts, rows, outputs) on stdout.")
@click.option("--no-bank-check", is_flag=True,
              help="Do not compare bank_name with the service's bank list (works offline).")
@decimal_comma_option
@encoding_option
@include_hidden_option
@overwrite_option
@quiet_option
@debug_option
@handle_errors
def validate(sheet: Path, report: Path | None, sheet_name: str | None,
             source_currency: str | None, as_json: bool, no_bank_check: bool,
             decimal_comma: bool, encoding: str | None, include_hidden: bool, overwrite: bool,
             quiet: bool) -> None:
    """Check every row of SHEET (.xlsx, .xls, .ods or .csv) without sending anything.

    Bank names are compared with the service's bank list (the embedded sandbox's when no
    service is set): a name it does not list is a warning with the closest names.
    Exit 0: every row is valid; 1: some rows are invalid (see the table or --report);
    2: the file cannot be read.
    """
    from batchpay.connect import open_service
    from batchpay.display import print_payee_changes, print_validation, stderr_console
    from batchpay.engine import check_sheet_file

    settings = settings_for()
    checked = check_sheet_file(
        sheet, settings, None if no_bank_check else (lambda: open_service(settings)),
        report=report, overwrite=overwrite, sheet_name=sheet_name,
        source_currency=source_currency, decimal_comma=decimal_comma,
        include_hidden=include_hidden, encoding=encoding)
    console = stderr_console(quiet)
    for note in checked.bank_notes:
        console.print(note)
    print_payee_changes(console, checked.payee_changes)
    print_validation(console, checked.outcome)
    if as_json:
        from batchpay.engine import json_document  # the face loads the engine: on use

        click.echo(json_document(None, checked.outcome.validation.counts, checked.outcome.json_rows(),
                                 [checked.report] if checked.report else [],
                                 checked.payee_changes))
    sys.exit(checked.exit_code)


def run_options(func: F) -> F:
    """Options shared by `run` and `rerun`."""
    options = [
        click.option("--out", type=click.Path(dir_okay=False, path_type=Path),
                     callback=writable_path,
                     help="Write the results workbook exactly here "
                     "(default: <sheet>-results-<run id>.xlsx beside the sheet; a dry run's: "
                     "<sheet>-dry-run-<run id>.xlsx)."),
        click.option("--dry-run", is_flag=True,
                     help="Validate and quote every row, compare with the wallet; pay nothing."),
        click.option("--skip-invalid", is_flag=True,
                     help="Pay the valid rows even if some rows are invalid."),
        click.option("--concurrency", type=click.IntRange(1, 32), default=None,
                     help="Rows in flight at once (default 4)."),
        click.option("--max-rps", type=click.FloatRange(0), default=None,
                     help="Pace all requests evenly at this many per second (0 = no pacing)."),
        click.option("--wait", "wait_seconds", type=click.FloatRange(0), default=None,
                     help="Seconds to follow statuses after sending (default 60)."),
        click.option("--journal", type=str, metavar="PATH|URL",
                     help=JOURNAL_HELP),
        click.option("--sheet", "sheet_name", help="The sheet to read (default: Payouts, "
                     "else the first)."),
        click.option("--source-currency", help="Wallet currency for rows that leave "
                     "source_currency empty, e.g. NGN."),
        decimal_comma_option,
        include_hidden_option,
        overwrite_option,
        click.option("--yes", is_flag=True, help="Confirm real payouts in advance (no prompt)."),
        click.option("--allow-partial", is_flag=True,
                     help="Start even when a wallet cannot cover every row (real service): "
                     "the rows that do not fit end REJECTED."),
        click.option("--allow-repeat", "allow_repeat", multiple=True, metavar="PAYOUT_REF",
                     help="Pay this row although it repeats a recent payment to the same "
                     "account and amount under another payout_ref (HELD otherwise); repeatable."),
        click.option("--quiet", is_flag=True, help="Print only errors and the results path."),
        click.option("--json", "as_json", is_flag=True,
                     help="Print one JSON document (counts, rows, outputs) on stdout."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def _run(kind: str, sheet: Path, out: Path | None, dry_run: bool, skip_invalid: bool,
         concurrency: int | None, max_rps: float | None, wait_seconds: float | None,
         journal: str | None, sheet_name: str | None, source_currency: str | None,
         decimal_comma: bool, include_hidden: bool, overwrite: bool, yes: bool,
         allow_partial: bool,
         allow_repeat: tuple[str, ...], quiet: bool, as_json: bool,
         approved: CheckedPlan | None = None, encoding: str | None = None) -> None:
    from batchpay.connect import open_service
    from batchpay.display import (
        RichReporter,
        is_interactive,
        print_counts,
        print_money,
        print_payee_changes,
        print_problems,
    )
    from batchpay.engine import RunOptions, load_input, run_batch

    if out is not None:
        check_output(out, overwrite=overwrite, inputs=(sheet,))
    else:  # the results go beside the sheet: that folder must take them, known before paying
        from batchpay.clock import new_run_id
        from batchpay.engine import default_results_path

        writable_path(click.get_current_context(), None,  # type: ignore[arg-type]
                      sheet.absolute().with_name("results.xlsx"))
        check_name_fits(default_results_path(sheet.absolute(), new_run_id()))  # as long as it'll be
    settings = settings_for(journal=journal, concurrency=concurrency, max_rps=max_rps,
                            wait_seconds=wait_seconds)
    options = RunOptions(
        sheet=sheet, kind=kind, dry_run=dry_run, sheet_name=sheet_name,
        source_currency=source_currency, out=out, skip_invalid=skip_invalid,
        concurrency=settings.concurrency, max_rps=settings.max_rps, wait=settings.wait_seconds,
        yes=yes, interactive=is_interactive(), allow_partial=allow_partial,
        allow_repeat=frozenset(ref.strip() for ref in allow_repeat),
        decimal_comma=decimal_comma, include_hidden=include_hidden, approved=approved,
        encoding=encoding)
    reporter = RichReporter(quiet=quiet)
    outcome = run_batch(settings, options, reporter, lambda: load_input(options, settings),
                        lambda: open_service(settings, listen=True))
    if approved is not None:
        reporter.console.print(f"Paid from plan {approved.id[:16]}… ({approved.short}), "
                               "approved by " + ", ".join(a.principal for a in approved.approvals))
    console = reporter.console
    for note in outcome.notes:
        console.print(note)
    print_counts(console, outcome.counts, title=f"Run {outcome.run_id}")
    print_money(console, outcome.summary, dry_run=outcome.dry_run)
    print_payee_changes(console, outcome.payee_changes)
    print_problems(console, ((r["row"], r["status"], r["error"] or "") for r in outcome.rows
                             if r["status"] not in outcome.fine_statuses))
    if not outcome.dry_run:  # the payees' advices: lines to read, never the run's exit code
        from batchpay.engine import advise_after_run
        from batchpay.mail import SmtpMailer

        for line in advise_after_run(settings, outcome.run_id, SmtpMailer):
            console.print(line, soft_wrap=True)
    if as_json:
        from batchpay.engine import json_document  # the face loads the engine: on use

        click.echo(json_document(outcome.run_id, outcome.counts, outcome.rows,
                                 [outcome.results_path], outcome.payee_changes))
    else:
        click.echo(f"Results: {shown_path(outcome.results_path)}")
    sys.exit(outcome.exit_code)


@cli.command()
@click.argument("sheet", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--plan", "plan_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Pay exactly the rows of this approved plan (NAME.plan.json), instead of a "
              "sheet: its signatures, approvers, expiry, service and journal are checked first.")
@run_options
@encoding_option
@debug_option
@handle_errors
def run(sheet: Path | None, plan_path: Path | None, **options: Any) -> None:
    """Pay every valid row of SHEET exactly once and write the results workbook.

    Rows already paid (in this journal) are shown, not paid again. Exit 0: every valid
    row COMPLETED, PENDING or PROCESSING; 1: some rows need attention; 2: could not run.
    """
    if (sheet is None) == (plan_path is None):
        fail("Give a SHEET, or --plan NAME.plan.json (an approved plan), not both.",
             "`batchpay run --help` shows both.", EXIT_FAILED)
    if plan_path is not None:
        from batchpay.engine import read_plan

        if options["allow_repeat"]:
            fail("--allow-repeat does not go with --plan: a release is the maker's decision, "
                 "and belongs in the plan the approver signs.",
                 "Make the plan with `batchpay plan SHEET --allow-repeat PAYOUT_REF` and have "
                 "it approved.", EXIT_FAILED)

        approved = read_plan(plan_path)
        terms = approved.run_terms()
        options["source_currency"] = terms["source_currency"]
        options["allow_repeat"] = tuple(terms["allow_repeat"])
        _run(terms["kind"], plan_path, approved=approved, **options)
    elif sheet is not None:
        _run("run", sheet, **options)


@cli.command()
@click.argument("results", type=click.Path(dir_okay=False, path_type=Path))
@run_options
@debug_option
@handle_errors
def rerun(results: Path, **options: Any) -> None:
    """Send again the rows of a RESULTS workbook that were not paid or failed.

    Fix the cells in the Results sheet first; rows already paid are never paid twice.
    """
    _run("rerun", results, **options)


@cli.command()
@journal_option
@click.option("--json", "as_json", is_flag=True, help="Print the runs as JSON on stdout.")
@debug_option
@handle_errors
def runs(journal: str | None, as_json: bool) -> None:
    """List the runs in the journal (id, time, sheet, payouts it sent, rows per status now)."""
    import json

    from batchpay.display import print_table, stderr_console, stdout_console
    from batchpay.engine import run_list

    with open_journal(journal) as j:
        records = run_list(j)
    if as_json:
        click.echo(json.dumps(records, ensure_ascii=False, indent=2))
        return
    zone_name = settings_for().time_zone
    lines = [[r["run_id"], r["kind"], clock.show(r["started_at"], zone_name), r["sheet"],
              r["outcome"] or "(unfinished)", str(r["sent"]),
              ", ".join(f"{k} {v}" for k, v in sorted(r["counts"].items()))]
             for r in records]
    console = stdout_console()
    if console.width < 120:  # a table would fold every cell: one run per paragraph instead
        for run_id, kind, started, sheet, outcome, sent, counts in lines:
            console.print(f"{run_id}  {kind}  {started}\n  {sheet}: {outcome}, sent {sent}"
                          f"\n  {counts or 'no rows'}", soft_wrap=False, markup=False)
    else:
        print_table(("run id", "kind", "started", "sheet", "outcome", "sent",
                     "rows now"), lines, keep_whole=("run id", "kind", "started"))
    if not records:
        stderr_console().print("No runs yet.")


@cli.command()
@journal_option
@click.option("--run", "run_id", help="The run to render (default: the latest).")
@click.option("--out", required=True, type=click.Path(dir_okay=False, path_type=Path),
              callback=writable_path, help="Where to write the results workbook.")
@overwrite_option
@debug_option
@handle_errors
def report(journal: str | None, run_id: str | None, out: Path, overwrite: bool) -> None:
    """Re-render a run's results workbook from the journal."""
    from batchpay.engine import find_run, render_run

    check_output(out, overwrite=overwrite)
    with open_journal(journal) as j:
        run_record = find_run(j, run_id)
        render_run(j, run_record, out)
    click.echo(f"Results: {shown_path(out)}")


@cli.command()
@journal_option
@click.option("--head", help="The chain head printed in a filed workbook's Run sheet: "
              "also detects events removed from the end.")
@debug_option
@handle_errors
def verify(journal: str | None, head: str | None) -> None:
    """Check the journal's hash chain, and its ledger and payout requests against it."""
    from batchpay.engine import check_journal

    with open_journal(journal) as j:
        check = check_journal(j, head=head)
    if check.ok:
        click.echo(f"OK: {check.events} events, chain head {check.head}")
        return
    fail(f"The journal's chain is broken: {check.problem}.",
         "The journal was changed outside batchpay. Keep this copy for the auditor and "
         "restore the journal from a backup.", EXIT_ROWS)


@cli.command()
@journal_option
@click.option("--run", "run_id", help="The run to refresh (default: the latest).")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path),
              callback=writable_path,
              help="Where to write the updated results (default: a new "
              "<sheet>-synced-<run id>.xlsx beside the run's results workbook).")
@overwrite_option
@click.option("--json", "as_json", is_flag=True,
              help="Print one JSON document (counts, rows, outputs) on stdout.")
@quiet_option
@debug_option
@handle_errors
def sync(journal: str | None, run_id: str | None, out: Path | None, overwrite: bool,
         as_json: bool, quiet: bool) -> None:
    """Refresh a run's rows that are not final (and FAILED ones) from the service.

    Rows in doubt (UNKNOWN) are looked up by their quote: found, they take the payout's
    state; not found in a complete scan once their quote expired, they become NOT_SENT.
    """
    from batchpay.connect import open_service
    from batchpay.display import print_counts, stderr_console
    from batchpay.engine import sync_run

    if out is not None:
        check_output(out, overwrite=overwrite)
    settings = settings_for(journal=journal)
    outcome = sync_run(settings, run_id, out, lambda: open_service(settings))
    console = stderr_console(quiet)
    for line in settings.banner_lines():
        console.print(line, soft_wrap=True)
    console.print(f"Tracked {outcome.tracked} row(s) with {outcome.requests} request(s): "
                  f"{outcome.changed} changed, {outcome.never_received} proven never received"
                  + ("" if outcome.complete else
                     " (the service has no payout list: payouts read one by one by id; rows "
                     "in doubt stay UNKNOWN)" if outcome.list_absent else
                     " (scan cut short by the page cap)"))
    print_counts(console, outcome.summary.counts, title=f"Run {outcome.run_id}")
    if as_json:
        from batchpay.engine import json_document  # the face loads the engine: on use

        click.echo(json_document(outcome.run_id, dict(outcome.summary.counts), outcome.rows,
                                 [outcome.results_path]))
    else:
        click.echo(f"Results: {shown_path(outcome.results_path)}")
    sys.exit(outcome.exit_code)


@cli.command()
@click.option("--from", "start", required=True, metavar="YYYY-MM-DD",
              help="First day of the period (in the time_zone setting's days), e.g. "
              "2026-11-01.")
@click.option("--to", "end", required=True, metavar="YYYY-MM-DD",
              help="Last day of the period (included), e.g. 2026-11-30.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), callback=writable_path,
              help="Where to write the statement workbook (default: "
              "statement-<from>-<to>.xlsx in the current folder).")
@journal_option
@overwrite_option
@debug_option
@handle_errors
def statement(start: str, end: str, out: Path | None, journal: str | None,
              overwrite: bool) -> None:
    """A period's payouts from the journal: one line per payout_ref, refunds, and per
    currency the totals that reconcile with the wallet, with the journal's chain head."""
    from batchpay.days import parse_day
    from batchpay.display import print_statement
    from batchpay.engine import build_statement, default_statement_path, write_statement

    first, last = parse_day(start, "--from"), parse_day(end, "--to")
    path = out or default_statement_path(first, last)
    check_output(path, overwrite=overwrite)
    zone = settings_for(journal=journal).time_zone
    with open_journal(journal) as j:
        made = build_statement(j, first, last, zone)
    write_statement(made, path)
    print_statement(made)
    click.echo(f"Statement: {shown_path(path)}")
