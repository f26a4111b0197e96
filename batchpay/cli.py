"""Commands only: parse options, call one library function, map errors to messages and exit codes.

Heavy libraries (pandas, httpx, starlette) are imported inside the commands, so that
``batchpay --help`` stays fast.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from batchpay import __version__
from batchpay.errors import BatchpayError
from batchpay.files import check_output

F = TypeVar("F", bound=Callable[..., Any])

EXIT_OK, EXIT_ROWS, EXIT_FAILED = 0, 1, 2


def fail(message: str, hint: str | None = None, code: int = EXIT_FAILED) -> None:
    from batchpay.config import scrub

    click.secho(f"Error: {scrub(message)}", fg="red", err=True)
    if hint:
        click.echo(scrub(hint), err=True)
    sys.exit(code)


def handle_errors(func: F) -> F:
    """Turn every error into one or two lines and an exit code; --debug shows the traceback."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        debug = kwargs.pop("debug", False) or _debug_requested()
        try:
            return func(*args, **kwargs)
        except (click.exceptions.Exit, click.ClickException, click.Abort, SystemExit):
            raise
        except BatchpayError as exc:
            if debug:
                raise
            fail(exc.message, exc.hint, exc.exit_code)
        except KeyboardInterrupt:
            if debug:
                raise
            fail("Interrupted.", "Nothing is lost: the journal holds every request sent. "
                 "Run the same command again to go on.", EXIT_FAILED)
        except OSError as exc:
            if debug:
                raise
            fail(*_os_error_message(exc))
        except Exception as exc:  # noqa: BLE001 - the last line of defence
            if debug:
                raise
            fail(*_lower_level_message(exc))

    return wrapper  # type: ignore[return-value]


HINT_DISK_FULL = ("Free some space, then run the same command again: the journal keeps every "
                  "request already sent, so nothing is paid twice.")


def _os_error_message(exc: OSError) -> tuple[str, str]:
    import errno

    if exc.errno == errno.ENOSPC:
        return "The disk is full: batchpay could not write its files.", HINT_DISK_FULL
    where = f" ({exc.filename})" if exc.filename else ""
    return f"{exc.strerror or exc}{where}.", "Check the path, free space and permissions."


def _lower_level_message(exc: Exception) -> tuple[str, str]:
    """A library's error that no module turned into a BatchpayError: still one or two lines."""
    library = type(exc).__module__.split(".")[0]
    text = " ".join(str(exc).split()) or type(exc).__name__
    if library == "sqlite3":
        if "full" in text.lower():
            return "The disk is full: the journal could not be written.", HINT_DISK_FULL
        return (f"The journal could not be read or written ({text}).",
                "Check that --journal (or BATCHPAY_JOURNAL) points at a batchpay journal, "
                "and the free space and permissions of its folder.")
    if library in ("httpx", "httpcore", "h11", "anyio"):
        return (f"The connection to the payout service failed ({type(exc).__name__}: {text}).",
                "Run the same command again; if a run was paying, first run `batchpay sync` "
                "to learn what happened to rows in doubt.")
    if library in ("zipfile", "openpyxl", "python_calamine", "defusedxml", "xml"):
        return (f"A workbook could not be read ({text}).",
                "Open it in Excel or LibreOffice, save it as a new .xlsx, and try again.")
    if library == "xlsxwriter":
        return (f"A workbook could not be written ({text}).",
                "Check that the folder exists and that you can write there.")
    return (f"Unexpected {type(exc).__name__}: {text}",
            "This is a bug in batchpay. Run again with --debug and report the traceback.")


def writable_path(ctx: click.Context, param: click.Parameter, value: Path | None) -> Path | None:
    """An output file is checked before anything is sent, not found unwritable afterwards."""
    import os

    if value is None:
        return value
    folder = value.absolute().parent
    if not folder.is_dir():
        raise click.BadParameter(f"the folder {folder} does not exist: create it, or "
                                 "choose another path")
    if not os.access(folder, os.W_OK | os.X_OK) or (value.exists()
                                                    and not os.access(value, os.W_OK)):
        raise click.BadParameter(f"you cannot write {value}: choose a path you can write to")
    return value


def _debug_requested() -> bool:
    ctx = click.get_current_context(silent=True)
    root = ctx.find_root() if ctx else None
    return bool(root and root.obj and root.obj.get("debug"))


def debug_option(func: F) -> F:
    return click.option("--debug", is_flag=True, help="Show the full traceback of an error.")(func)


def settings_for(**options: Any) -> Any:
    from batchpay.config import load_settings

    return load_settings().with_options(**options)


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="batchpay")
@click.option("--debug", is_flag=True, help="Show the full traceback of any error.")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """Pay a spreadsheet of recipients, one payout per row, exactly once.

    With no BATCHPAY_BASE_URL set, every command uses the embedded sandbox: no real
    money moves until you configure a real service.
    """
    ctx.obj = {"debug": debug}


def sandbox_banner() -> None:
    click.secho("SANDBOX: test data, no real money moves.", fg="yellow", err=True)


@cli.command()
@click.option("--country", required=True, help="Country code of the bank list, e.g. NG.")
@click.option("--currency", required=True, help="Currency code of the bank list, e.g. NGN.")
@click.option("--json", "as_json", is_flag=True,
              help="Print the list as JSON (bankName, sortCode, branchCode, country).")
@debug_option
@handle_errors
def banks(country: str, currency: str, as_json: bool) -> None:
    """List the banks the service pays to for a country and currency (with sort codes)."""
    import asyncio
    import json

    from batchpay.provider.client import PayoutClient
    from batchpay.service import open_service

    settings = settings_for()
    country, currency = country.strip().upper(), currency.strip().upper()

    async def fetch(base_url: str, api_key: str | None) -> tuple[list[Any], bool]:
        async with PayoutClient.from_settings(settings, base_url=base_url,
                                              api_key=api_key) as client:
            found = await client.banks(country, currency)
            return found, bool(client.is_sandbox)

    with open_service(settings) as service:
        if service.embedded:  # said first, so that an error below is known to be the sandbox's
            sandbox_banner()
        found, sandbox = asyncio.run(fetch(service.base_url, service.api_key))
    if sandbox and not service.embedded:  # a `batchpay sandbox` at a configured URL
        sandbox_banner()
    if as_json:
        click.echo(json.dumps([bank.to_json() for bank in found], ensure_ascii=False, indent=2))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"Banks for {country} / {currency} ({len(found)})")
    table.add_column("Bank name")
    table.add_column("Sort code")
    for bank in found:
        table.add_row(bank.bank_name, bank.sort_code or "")
    Console(soft_wrap=True, markup=False).print(table)


overwrite_option = click.option(
    "--overwrite", is_flag=True,
    help="Replace the output file if it exists (default: refuse, before anything is sent).")

decimal_comma_option = click.option(
    "--decimal-comma", is_flag=True,
    help="Amounts written as text use a decimal comma and points for thousands "
    "(1.250.000,00; 12,5). Without it, a comma or a point before three digits in a "
    "';'- or tab-separated CSV is refused as ambiguous.")

include_hidden_option = click.option(
    "--include-hidden", is_flag=True,
    help="Pay rows hidden or filtered out in the sheet too (default: such a row is INVALID).")

quiet_option = click.option("--quiet", is_flag=True,
                            help="Print only errors and the paths written (and --json).")

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
@include_hidden_option
@overwrite_option
@quiet_option
@debug_option
@handle_errors
def validate(sheet: Path, report: Path | None, sheet_name: str | None,
             source_currency: str | None, as_json: bool, no_bank_check: bool,
             decimal_comma: bool, include_hidden: bool, overwrite: bool, quiet: bool) -> None:
    """Check every row of SHEET (.xlsx or .csv) without sending anything.

    Bank names are compared with the service's bank list (the embedded sandbox's when no
    service is set): a name it does not list is a warning with the closest names.
    Exit 0: every row is valid; 1: some rows are invalid (see the table or --report);
    2: the file cannot be read.
    """
    from batchpay.console import print_validation
    from batchpay.engine.banknames import check_sheet_bank_names
    from batchpay.engine.payees import HoldRules, check_sheet, reported
    from batchpay.progress import print_payee_changes, stderr_console
    from batchpay.sheet.limits import SheetLimits
    from batchpay.sheet.validate import validate_file, write_validation_report

    if report is not None:
        check_output(report, overwrite=overwrite, inputs=(sheet,))
    settings = settings_for()
    outcome = validate_file(sheet, sheet_name=sheet_name, source_currency=source_currency,
                            limits=SheetLimits.of(settings),
                            decimal_comma=decimal_comma, include_hidden=include_hidden)
    console = stderr_console(quiet)
    if not no_bank_check:  # before the report, which shows the warnings
        for note in check_sheet_bank_names(outcome.validation, settings):
            console.print(note)
    changes = reported(check_sheet(settings.journal, outcome.validation.rows,
                                   HoldRules(settings.hold_new_payees,
                                             settings.payee_change_hold_hours)))
    if report is not None:
        write_validation_report(report, outcome.sheet, outcome.validation)
        outcome.report = report
    print_payee_changes(console, changes)
    print_validation(console, outcome)
    if as_json:
        click.echo(json_document(None, outcome.validation.counts, outcome.json_rows(),
                                 [report] if report else [], changes))
    sys.exit(outcome.exit_code)


JOURNAL_HELP = ("The journal file (default: one per service in your user data folder, the "
                "same from every folder; `batchpay config` shows it; or BATCHPAY_JOURNAL).")


def run_options(func: F) -> F:
    """Options shared by `run` and `rerun`."""
    options = [
        click.option("--out", type=click.Path(dir_okay=False, path_type=Path),
                     callback=writable_path,
                     help="Write the results workbook exactly here "
                     "(default: <sheet>-results-<run id>.xlsx beside the sheet)."),
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
        click.option("--journal", type=click.Path(dir_okay=False, path_type=Path),
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
         journal: Path | None, sheet_name: str | None, source_currency: str | None,
         decimal_comma: bool, include_hidden: bool, overwrite: bool, yes: bool,
         allow_partial: bool,
         allow_repeat: tuple[str, ...], quiet: bool, as_json: bool,
         approved: Any = None) -> None:
    from batchpay.engine.intake import load_input
    from batchpay.engine.runner import RunOptions, run_batch
    from batchpay.progress import (
        RichReporter,
        is_interactive,
        print_counts,
        print_money,
        print_payee_changes,
        print_problems,
    )

    if out is not None:
        check_output(out, overwrite=overwrite, inputs=(sheet,))
    else:  # the results go beside the sheet: that folder must take them, known before paying
        writable_path(click.get_current_context(), None,  # type: ignore[arg-type]
                      sheet.absolute().with_name("results.xlsx"))
    settings = settings_for(journal=journal, concurrency=concurrency, max_rps=max_rps,
                            wait_seconds=wait_seconds)
    if approved is not None:
        from batchpay.engine.approval import check_release

        check_release(approved, settings)
    elif settings.require_approval and not dry_run:
        fail(f"Approval is required (require_approval = true): `batchpay {kind}` pays only an "
             "approved plan.",
             "Make one with `batchpay plan SHEET`, have it approved with `batchpay approve`, "
             "then `batchpay run --plan NAME.plan.json`.", EXIT_FAILED)
    options = RunOptions(
        sheet=sheet, kind=kind, dry_run=dry_run, sheet_name=sheet_name,
        source_currency=source_currency, out=out, skip_invalid=skip_invalid,
        concurrency=settings.concurrency, max_rps=settings.max_rps, wait=settings.wait_seconds,
        yes=yes, interactive=is_interactive(), allow_partial=allow_partial,
        allow_repeat=frozenset(ref.strip() for ref in allow_repeat),
        decimal_comma=decimal_comma, include_hidden=include_hidden, approved=approved)
    reporter = RichReporter(quiet=quiet)
    outcome = run_batch(settings, options, reporter,
                        lambda: load_input(options, settings))
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
    if as_json:
        click.echo(json_document(outcome.run_id, outcome.counts, outcome.rows,
                                 [outcome.results_path], outcome.payee_changes))
    else:
        click.echo(f"Results: {shown_path(outcome.results_path)}")
    sys.exit(outcome.exit_code)


def shown_path(path: Path) -> str:
    """A path as the operator would type it: relative to the current folder when inside it."""
    try:
        return str(path.absolute().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def json_document(run_id: str | None, counts: dict[str, int], rows: list[dict[str, Any]],
                  outputs: list[Path], payee_changes: list[dict[str, Any]] | None = None) -> str:
    """The --json document; `payee_changes` (without full account numbers) for run, rerun
    and validate."""
    import json

    document: dict[str, Any] = {"run_id": run_id, "counts": counts, "rows": rows,
                                "outputs": [str(p) for p in outputs]}
    if payee_changes is not None:
        document["payee_changes"] = [{k: v for k, v in c.items() if k != "details"}
                                     for c in payee_changes]
    return json.dumps(document, ensure_ascii=False, indent=2)


@cli.command()
@click.argument("sheet", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--plan", "plan_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Pay exactly the rows of this approved plan (NAME.plan.json), instead of a "
              "sheet: its signatures, approvers, expiry, service and journal are checked first.")
@run_options
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
        from batchpay.engine.approval import read_plan

        approved = read_plan(plan_path)
        options["source_currency"] = approved.document["source_currency"] or None
        _run("run", plan_path, approved=approved, **options)
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


def journal_option(func: F) -> F:
    return click.option("--journal", type=click.Path(dir_okay=False, path_type=Path),
                        help=JOURNAL_HELP)(func)


def _open_journal(journal: Path | None) -> Any:
    from batchpay.engine.journal import Journal

    settings = settings_for(journal=journal)
    return Journal.existing(settings.journal)


@cli.command()
@journal_option
@click.option("--json", "as_json", is_flag=True, help="Print the runs as JSON on stdout.")
@debug_option
@handle_errors
def runs(journal: Path | None, as_json: bool) -> None:
    """List the runs in the journal (id, time, sheet, counts)."""
    import json

    from batchpay.engine.render import run_counts
    from batchpay.progress import print_table, stderr_console, stdout_console

    with _open_journal(journal) as j:
        records = j.runs()
        counted = {r.id: run_counts(j, r) for r in records}
    if as_json:
        click.echo(json.dumps([{"run_id": r.id, "kind": r.kind, "started_at": r.started_at,
                                "finished_at": r.finished_at, "sheet": r.sheet,
                                "outcome": r.outcome, "exit_code": r.exit_code,
                                "counts": counted[r.id]} for r in records],
                              ensure_ascii=False, indent=2))
        return
    lines = [[r.id, r.kind, r.started_at[:16].replace("T", " "), r.sheet,
              r.outcome or "(unfinished)",
              ", ".join(f"{k} {v}" for k, v in sorted(counted[r.id].items()))]
             for r in records]
    console = stdout_console()
    if console.width < 120:  # a table would fold every cell: one run per paragraph instead
        for run_id, kind, started, sheet, outcome, counts in lines:
            console.print(f"{run_id}  {kind}  {started} UTC\n  {sheet}: {outcome}\n"
                          f"  {counts or 'no rows'}", soft_wrap=False, markup=False)
    else:
        print_table(("run id", "kind", "started (UTC)", "sheet", "outcome", "rows"), lines,
                    keep_whole=("run id", "kind", "started (UTC)"))
    if not records:
        stderr_console().print("No runs yet.")


@cli.group(invoke_without_command=True)
@journal_option
@click.option("--json", "as_json", is_flag=True, help="Print the register as JSON on stdout.")
@debug_option
@click.pass_context
@handle_errors
def payees(ctx: click.Context, journal: Path | None, as_json: bool) -> None:
    """The payee register: every set of bank details each payee was paid on.

    Without a subcommand, lists it (payee, name, masked account, bank, last paid, payouts
    and amount paid per set of details).
    """
    import json
    from decimal import Decimal

    from batchpay.engine.payees import Register, register_lines

    ctx.obj = journal
    if ctx.invoked_subcommand is not None:
        return
    with _open_journal(journal) as j:
        lines = register_lines(Register.load(j))
    if as_json:
        click.echo(json.dumps(lines, ensure_ascii=False, indent=2))
        return
    from batchpay.progress import print_table, stderr_console

    print_table(("payee", "name", "account", "bank", "last paid", "payouts", "paid", "confirmed"),
                ([line["payee"], line["name"], line["account"], line["bank"],
                  f"{line['last_paid']} {line['last_status']}", str(line["payouts"]),
                  ", ".join(f"{Decimal(v):,} {c}" for c, v in line["paid"].items()),
                  "yes" if line["confirmed"] else ""] for line in lines))
    if not lines:
        stderr_console().print("No payees yet: a payee is registered by its first payout.")


@payees.command("show")
@click.argument("payee")
@journal_option
@debug_option
@click.pass_context
@handle_errors
def payees_show(ctx: click.Context, payee: str, journal: Path | None) -> None:
    """Print PAYEE's held bank details in full (for a read-back call) and its history."""
    from decimal import Decimal

    from batchpay.engine.payees import BANK_FIELDS, show

    with _open_journal(journal or ctx.obj) as j:
        found = show(j, payee)
    click.echo(f"Payee {found['payee']}")
    for number, details in enumerate(found["held"], 1):
        click.echo(f"Held details{f' ({number})' if len(found['held']) > 1 else ''} "
                   "- read them back to the payee on a number you already had:")
        for name in BANK_FIELDS:
            click.echo(f"  {name:<15} {details.get(name) or '(empty)'}")
    if not found["held"]:
        click.echo("No held details: nothing waits for a confirmation.")
    for line in found["history"]:
        paid = ", ".join(f"{Decimal(v):,} {c}" for c, v in line["paid"].items()) or "nothing"
        click.echo(f"Paid {line['payouts']} time(s) to {line['name']}, {line['account']}, "
                   f"{line['bank']}: {paid}; last {line['last_paid']} {line['last_status']}")
    for c in found["confirmations"]:
        click.echo(f"Confirmed {str(c.get('at'))[:16]} by {c.get('by')} ({c.get('method')}): "
                   f"account ending {str(c['details']['account_number'])[-4:]}"
                   + (f"; {c['note']}" if c.get("note") else ""))


@payees.command("confirm")
@click.argument("payee")
@click.option("--account-last4", required=True, metavar="NNNN",
              help="The last four digits of the new account, typed from the read-back call.")
@click.option("--method", type=click.Choice(["phone", "email", "in-person"]), default="phone",
              show_default=True, help="How the payee confirmed the details.")
@click.option("--note", default="", help="Who you spoke to, the number you called, a ticket.")
@journal_option
@debug_option
@click.pass_context
@handle_errors
def payees_confirm(ctx: click.Context, payee: str, account_last4: str, method: str, note: str,
                   journal: Path | None) -> None:
    """Trust PAYEE's held bank details: the next run or rerun pays the held row.

    One payee at a time, never in bulk; the last four digits must match the held account.
    The confirmation (you, the time, before and after, method, note) is a chained event of
    the journal.
    """
    from batchpay.engine.payees import confirm, masked

    with _open_journal(journal or ctx.obj) as j:
        data = confirm(j, payee, account_last4.strip(), method=method, note=note)
    click.echo(f"Confirmed payee {data['payee']}: account "
               f"{masked(data['details']['account_number'])} at "
               f"{data['details']['bank_name'] or '(no bank name)'}, by {data['by']} "
               f"({method}). The next run or rerun pays its held row.")


def _keys_folder() -> Path:
    from platformdirs import user_config_dir

    return Path(user_config_dir("batchpay")) / "keys"


def _passphrase(path: Path) -> str | None:
    """BATCHPAY_KEY_PASSPHRASE, else asked for on a terminal when the key is encrypted."""
    import os

    from batchpay import sshsig

    given = os.environ.get("BATCHPAY_KEY_PASSPHRASE")
    if given:
        return given
    try:
        sshsig.load_private(path)
        return None
    except sshsig.SignatureError:
        if not sys.stdin.isatty():
            raise
        return str(click.prompt(f"Passphrase for {path}", hide_input=True, err=True))


def _signing_key(key: Path | None) -> tuple[Any, Path]:
    """The approver's or maker's private key: --key, else the one key batchpay made for this
    user, else ~/.ssh/id_ed25519."""
    from batchpay import sshsig

    if key is None:
        made = sorted(p for p in _keys_folder().glob("*_ed25519") if p.is_file())
        ssh = Path.home() / ".ssh" / "id_ed25519"
        if len(made) == 1:
            key = made[0]
        elif not made and ssh.is_file():
            key = ssh
        else:
            fail("Which key? " + (f"{len(made)} keys in {_keys_folder()}." if made else
                                  "No key yet."),
                 "Give --key PATH, or make one with `batchpay keys new --name NAME`.")
    assert key is not None
    try:
        return sshsig.load_private(key, _passphrase(key)), key
    except (OSError, sshsig.SignatureError) as exc:
        fail(f"Cannot use the key {key}: {exc}.")
        raise AssertionError("unreachable") from exc


@cli.group()
def keys() -> None:
    """Signing keys for approving payment plans (Ed25519, OpenSSH format)."""


@keys.command("new")
@click.option("--name", required=True, help="The approver's name, as the approvers file "
              "will list it (its principal).")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path),
              help="Where to write the private key (default: in your user config folder); "
              "the public key goes beside it as .pub.")
@click.option("--passphrase", is_flag=True, help="Protect the private key with a passphrase "
              "(asked twice).")
@debug_option
@handle_errors
def keys_new(name: str, out: Path | None, passphrase: bool) -> None:
    """Make an Ed25519 key pair and print the approvers-file line for it."""
    import os
    import re

    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from batchpay import sshsig

    slug = re.sub(r"[^A-Za-z0-9]+", "-", name).strip("-").lower() or "key"
    path = out or _keys_folder() / f"{slug}_ed25519"
    public = path.with_name(path.name + ".pub")
    for existing in (path, public):
        if existing.exists():
            fail(f"{existing} already exists; batchpay does not overwrite a key.",
                 "Give another path with --out.")
    secret = None
    if passphrase:
        secret = str(click.prompt("Passphrase", hide_input=True, confirmation_prompt=True,
                                  err=True))
    key = Ed25519PrivateKey.generate()
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(sshsig.private_text(key, secret))
    line = f"{sshsig.public_line(key.public_key())} {name}"
    public.write_text(line + "\n", encoding="utf-8")
    principal = f'"{name}"' if " " in name else name
    click.echo(f"Private key: {path} (mode 600{', passphrase-protected' if secret else ''})")
    click.echo(f"Fingerprint: {sshsig.fingerprint(key.public_key())}")
    click.echo("Add this line to the approvers file (approvers_file):")
    click.echo(f"{principal} {sshsig.public_line(key.public_key())}")


@cli.command()
@click.argument("sheet", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--out", "name", type=click.Path(dir_okay=False, path_type=Path),
              help="NAME: writes NAME.plan.json and NAME.plan.xlsx (default: the sheet's "
              "name, beside it).")
@click.option("--key", type=click.Path(dir_okay=False, path_type=Path),
              help="The maker's own key, recorded so that it can never approve this plan.")
@click.option("--sheet", "sheet_name", help="The sheet to read (default: Payouts, else the "
              "first).")
@click.option("--source-currency", help="Wallet currency for rows that leave source_currency "
              "empty, e.g. NGN.")
@click.option("--skip-invalid", is_flag=True, help="Plan the valid rows even if some rows "
              "are invalid.")
@decimal_comma_option
@include_hidden_option
@journal_option
@overwrite_option
@click.option("--quiet", is_flag=True, help="Print only errors and the plan's paths.")
@click.option("--json", "as_json", is_flag=True, help="Print the plan's id, short code, "
              "totals and paths as JSON on stdout.")
@debug_option
@handle_errors
def plan(sheet: Path, name: Path | None, key: Path | None, sheet_name: str | None,
         source_currency: str | None, skip_invalid: bool, decimal_comma: bool,
         include_hidden: bool, journal: Path | None, overwrite: bool, quiet: bool,
         as_json: bool) -> None:
    """Plan SHEET for approval: a dry run, written as NAME.plan.json and NAME.plan.xlsx.

    The plan holds every row that would be sent with every value it is paid from, the
    totals (NbOfTxs, CtrlSum) per currency and a ceiling on the total debit (the quotes plus
    plan_tolerance). Its id is the SHA-256 of the file; the short code is read out to the
    approver. Nothing is paid.
    """
    import json

    from batchpay.engine.approval import (
        build_plan,
        canonical_bytes,
        plan_id,
        plan_rows_of,
        short_code,
        summary_lines,
    )
    from batchpay.engine.intake import load_input
    from batchpay.engine.journal import Journal
    from batchpay.engine.render import find_run, render_run, result_rows
    from batchpay.engine.runner import RunOptions, run_batch
    from batchpay.progress import RichReporter, is_interactive, print_counts, print_problems

    base = name if name is not None else sheet.with_suffix("")
    base = base.with_name(base.name.removesuffix(".plan.json").removesuffix(".plan"))
    plan_path = base.with_name(base.name + ".plan.json")
    workbook = base.with_name(base.name + ".plan.xlsx")
    for path in (plan_path, workbook):
        check_output(path, overwrite=overwrite, inputs=(sheet,))
    maker_key = ""
    if key is not None:
        from batchpay import sshsig

        maker_key = sshsig.fingerprint(_signing_key(key)[0].public_key())
    settings = settings_for(journal=journal)
    options = RunOptions(sheet=sheet, dry_run=True, sheet_name=sheet_name,
                         source_currency=source_currency, out=workbook, skip_invalid=skip_invalid,
                         concurrency=settings.concurrency, max_rps=settings.max_rps,
                         interactive=is_interactive(), decimal_comma=decimal_comma,
                         include_hidden=include_hidden)
    read: dict[str, Any] = {}

    def load() -> tuple[Any, Any]:
        read["sheet"], validation = load_input(options, settings)
        return read["sheet"], validation

    reporter = RichReporter(quiet=quiet)
    outcome = run_batch(settings, options, reporter, load)
    console = reporter.console
    for note in outcome.notes:
        console.print(note)
    print_counts(console, outcome.counts, title=f"Dry run {outcome.run_id}")
    print_problems(console, ((r["row"], r["status"], r["error"] or "") for r in outcome.rows
                             if r["status"] not in outcome.fine_statuses))
    with Journal(settings.journal) as j:
        rows = plan_rows_of(read["sheet"], result_rows(j, find_run(j, outcome.run_id)))
        head = j.head()
    shortfall = [n for n in outcome.notes if n.startswith("SHORTFALL")]
    if not rows or shortfall:
        fail("No plan was written: " + ("the wallet cannot cover it." if shortfall else
                                        "no row would be sent."),
             f"See the dry run's workbook: {shown_path(workbook)}", EXIT_ROWS)
    from decimal import Decimal

    document = build_plan(settings, read["sheet"], rows, run_id=outcome.run_id,
                          chain_head=head, maker_key=maker_key, hours=settings.plan_hours,
                          tolerance=Decimal(str(settings.plan_tolerance)),
                          source_currency=source_currency,
                          payee_changes=outcome.payee_changes)
    data = canonical_bytes(document)
    from batchpay.files import replaced_atomically

    with replaced_atomically(plan_path) as partial:
        partial.write_bytes(data)
    identifier = plan_id(data)
    with Journal(settings.journal) as j:  # the dry run's workbook, with what to approve
        render_run(j, find_run(j, outcome.run_id), workbook, plan_lines=[
            ("plan", str(plan_path.name)), ("plan id", identifier),
            ("short code", short_code(identifier)),
            *(("", line.strip()) for line in summary_lines(document, largest=20))])
    if as_json:
        click.echo(json.dumps({"plan_id": identifier, "short_code": short_code(identifier),
                               "rows": len(rows), "currencies": document["currencies"],
                               "expires_at": document["expires_at"],
                               "outputs": [str(plan_path), str(workbook)]}, indent=2))
    else:
        click.echo(f"Plan: {shown_path(plan_path)} ({len(rows)} row(s)), for a person: "
                   f"{shown_path(workbook)}")
        click.echo(f"Plan id {identifier}, short code {short_code(identifier)}; expires "
                   f"{document['expires_at']}")
        click.echo(f"Next: an approver runs `batchpay approve {shown_path(plan_path)}`.")
    sys.exit(outcome.exit_code)


@cli.command()
@click.argument("plan_path", metavar="PLAN", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--key", type=click.Path(dir_okay=False, path_type=Path),
              help="Your private key (default: the key `batchpay keys new` made, else "
              "~/.ssh/id_ed25519).")
@click.option("--short-code", help="The plan's short code, as the maker read it out (asked "
              "for when not given).")
@click.option("--yes", is_flag=True, help="Do not ask; needs --short-code (for scripts).")
@click.option("--json", "as_json", is_flag=True, help="Print the approval as JSON on stdout.")
@debug_option
@handle_errors
def approve(plan_path: Path, key: Path | None, short_code: str | None, yes: bool,
            as_json: bool) -> None:
    """Approve PLAN: read its totals, type its short code, sign it (PLAN.sig).

    The signature is OpenSSH's SSHSIG (namespace batchpay-plan-v1) over the plan file's
    bytes: `ssh-keygen -Y verify` checks it too. The maker cannot approve their own plan.
    """
    import json

    from batchpay import sshsig
    from batchpay.engine.approval import approve as sign_plan
    from batchpay.engine.approval import read_plan, summary_lines
    from batchpay.engine.records import operator

    checked = read_plan(plan_path)
    for line in summary_lines(checked.document):
        click.echo(line, err=True)
    if yes and not short_code:
        fail("--yes needs --short-code CODE: the code is what ties your approval to this plan.")
    typed = short_code if short_code else (
        click.prompt("Type the plan's short code to approve it", err=True) if not yes else "")
    if str(typed).strip().upper() != checked.short:
        fail(f"The short code {typed!r} is not this plan's: nothing was signed.",
             "Ask the maker to read the code that `batchpay plan` printed.")
    private, key_path = _signing_key(key)
    signature = sign_plan(checked, private, approver=operator())
    fingerprint = sshsig.fingerprint(private.public_key())
    if as_json:
        click.echo(json.dumps({"plan_id": checked.id, "signature": str(signature),
                               "key": str(key_path), "fingerprint": fingerprint}, indent=2))
    else:
        click.echo(f"Approved plan {checked.short} with key {fingerprint}: "
                   f"{shown_path(signature)}")


@cli.command()
@journal_option
@click.option("--run", "run_id", help="The run to render (default: the latest).")
@click.option("--out", required=True, type=click.Path(dir_okay=False, path_type=Path),
              callback=writable_path, help="Where to write the results workbook.")
@overwrite_option
@debug_option
@handle_errors
def report(journal: Path | None, run_id: str | None, out: Path, overwrite: bool) -> None:
    """Re-render a run's results workbook from the journal."""
    from batchpay.engine.render import find_run, render_run

    check_output(out, overwrite=overwrite)
    with _open_journal(journal) as j:
        run_record = find_run(j, run_id)
        render_run(j, run_record, out)
    click.echo(f"Results: {shown_path(out)}")


@cli.command()
@journal_option
@click.option("--head", help="The chain head printed in a filed workbook's Run sheet: "
              "also detects events removed from the end.")
@debug_option
@handle_errors
def verify(journal: Path | None, head: str | None) -> None:
    """Check the journal's hash chain, and its ledger and payout requests against it."""
    from batchpay.engine.integrity import check as check_journal

    with _open_journal(journal) as j:
        check = check_journal(j, head=head)
    if check.ok:
        click.echo(f"OK: {check.events} events, chain head {check.head}")
        return
    fail(f"The journal's chain is broken: {check.problem}.",
         "The journal was changed outside batchpay. Keep this copy for the auditor and "
         "restore the journal from a backup.", EXIT_ROWS)


@cli.command()
@debug_option
@handle_errors
def config() -> None:
    """Print the settings files searched, the journal, and the effective settings.

    The API key is shown only as a fingerprint. A settings file batchpay cannot use is
    named with its error beside everything else (exit 2; every other command refuses it).
    """
    from batchpay.config import JOURNAL_ORIGINS, inspect_settings

    found = inspect_settings()
    settings = found.settings
    click.echo("Settings files searched (the first found is loaded; the environment wins):",
               err=True)
    for path, state in found.files:
        click.echo(f"  {path}  ({state})", err=True)
    journal, *hint = settings.journal_lines()
    click.echo(f"{journal}  ({JOURNAL_ORIGINS[settings.journal_from]})", err=True)
    for line in hint:
        click.echo(line, err=True)
    if settings.embedded:
        click.echo("Service: the embedded sandbox. To pay through a real service, set "
                   "BATCHPAY_BASE_URL and BATCHPAY_API_KEY.", err=True)
    else:
        click.echo(f"Service: {settings.base_url} (real money unless it answers as a sandbox)",
                   err=True)
    if found.error is not None:
        click.secho(f"Error: {found.error.message}", fg="red", err=True)
        if found.error.hint:
            click.echo(found.error.hint, err=True)
    click.echo("", err=True)
    width = max(len(k) for k, _ in settings.public_items())
    for key, value in settings.public_items():
        click.echo(f"{key.ljust(width)}  {value}")
    if found.error is not None:
        sys.exit(found.error.exit_code)


def _rate_limit_option(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    from batchpay.sandbox.faults import parse_rate_limit

    if value:
        try:
            parse_rate_limit(value)
        except ValueError as exc:
            raise click.BadParameter(str(exc)) from None
    return value


def _webhook_url_option(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value and not value.startswith(("http://", "https://")):
        raise click.BadParameter("give an http:// or https:// URL")
    return value


@cli.command()
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on (keep it on loopback: the sandbox has no TLS).")
@click.option("--port", default=8787, show_default=True, type=click.IntRange(0, 65535),
              help="Port to listen on; 0 picks a free one.")
@click.option("--api-key", default="sandbox-key", show_default=True,
              help="The test key the sandbox accepts in X-API-KEY (not a real key).")
@click.option("--latency-ms", default=0.0, type=click.FloatRange(min=0),
              help="Answer every API request this many milliseconds after it arrived "
                   "(the sandbox's own work included).")
@click.option("--error-rate", default=0.0, type=click.FloatRange(0, 1),
              help="Share of API requests (0-1) that answer 500 without doing anything.")
@click.option("--drop-rate", default=0.0, type=click.FloatRange(0, 1),
              help="Share of payout requests (0-1) committed and then left without a response.")
@click.option("--rate-limit", callback=_rate_limit_option, metavar="N/UNIT[,N/UNIT...]",
              help="Sliding-window limits, e.g. 100/min,1000/hour; beyond them 429 with Retry-After.")
@click.option("--webhook-url", callback=_webhook_url_option,
              help="POST every payout state change to this URL.")
@click.option("--webhook-secret", help="Secret that signs the webhooks (X-Signature, HMAC-SHA512).")
@click.option("--settle-seconds", default=2.0, show_default=True, type=click.FloatRange(min=0),
              help="Seconds from PENDING to a final state (remark \"fail\" ends FAILED, then REFUNDED).")
@click.option("--quote-ttl", default=600.0, show_default=True, type=click.FloatRange(min=0, min_open=True),
              help="Seconds a quote can be used.")
@click.option("--seed", default=0, show_default=True, type=int,
              help="Seed of the rates and of the injected faults, so runs repeat.")
@click.option("--rounding", type=click.Choice(["half-up", "half-even", "down", "up"]),
              default="half-up", show_default=True,
              help="How a quote's target amount is rounded to the fen (the real service does "
                   "not document its rounding).")
@click.option("--rate-drift", default=0.0, type=click.FloatRange(0, 0.1), metavar="F",
              help="Move each currency pair's rate by a random step of up to this fraction "
                   "every 8 quotes, as a market does (0 = fixed rates).")
@click.option("--state", "state_path", type=click.Path(dir_okay=False, path_type=Path),
              help="SQLite file keeping payouts, quotes and wallets across restarts (default: memory).")
@debug_option
@handle_errors
def sandbox(**options: Any) -> None:
    """Run the sandbox: a fake payout service for trying and testing batchpay (no real money)."""
    from batchpay.sandbox.app import SandboxConfig
    from batchpay.sandbox.server import serve

    serve(SandboxConfig(**options))


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
def sync(journal: Path | None, run_id: str | None, out: Path | None, overwrite: bool,
         as_json: bool, quiet: bool) -> None:
    """Refresh a run's rows that are not final (and FAILED ones) from the service.

    Rows in doubt (UNKNOWN) are looked up by their quote: found, they take the payout's
    state; not found in a complete scan once their quote expired, they become NOT_SENT.
    """
    from batchpay.engine.sync import sync_run
    from batchpay.progress import print_counts, stderr_console
    from batchpay.statuses import FINE

    if out is not None:
        check_output(out, overwrite=overwrite)
    settings = settings_for(journal=journal)
    outcome = sync_run(settings, run_id, out)
    console = stderr_console(quiet)
    for line in settings.journal_lines():
        console.print(line, soft_wrap=True)
    console.print(f"Tracked {outcome.tracked} row(s) with {outcome.requests} request(s): "
                  f"{outcome.changed} changed, {outcome.never_received} proven never received"
                  + ("" if outcome.complete else " (scan cut short by the page cap)"))
    print_counts(console, outcome.summary.counts, title=f"Run {outcome.run_id}")
    if as_json:
        click.echo(json_document(outcome.run_id, dict(outcome.summary.counts), outcome.rows,
                                 [outcome.results_path]))
    else:
        click.echo(f"Results: {shown_path(outcome.results_path)}")
    bad = set(outcome.summary.counts) - FINE
    sys.exit(EXIT_ROWS if bad else EXIT_OK)


@cli.command()
@click.option("--host", default=None, help="Address to listen on (default 127.0.0.1).")
@click.option("--port", type=click.IntRange(0, 65535), default=None,
              help="Port to listen on (default 8788).")
@journal_option
@click.option("--insecure-no-signature", is_flag=True,
              help="Accept unsigned webhooks, on loopback only (tests only: anyone who can "
              "reach the port could change your journal).")
@debug_option
@handle_errors
def listen(host: str | None, port: int | None, journal: Path | None,
           insecure_no_signature: bool) -> None:
    """Receive the service's webhooks and record payout states in the journal."""
    from batchpay.progress import stderr_console
    from batchpay.serving import bind, serve_foreground, url_of
    from batchpay.webhooks import create_listener, listener_check

    settings = settings_for(journal=journal)
    console = stderr_console()
    host = host or settings.listen_host
    check = listener_check(settings, host=host, insecure=insecure_no_signature)
    if insecure_no_signature:
        from rich.text import Text

        console.print(Text("INSECURE: signatures are NOT checked. Anyone who can reach this "
                           "port can change payout states in your journal.", style="bold red"))
    app = create_listener(settings.journal, check)
    sock = bind(host, settings.listen_port if port is None else port, "webhook listener")
    console.print(f"Listening for webhooks on {url_of(sock)}/webhook "
                  f"(journal {settings.journal}); Ctrl-C stops.")
    serve_foreground(app, sock)


@cli.command()
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path),
              default=Path("payouts-template.xlsx"), show_default=True,
              callback=writable_path,
              help="Where to write it: .xlsx (dropdowns, Text columns, help sheet) or .csv.")
@debug_option
@handle_errors
def template(out: Path) -> None:
    """Write an empty payout sheet to fill in: the columns, dropdowns and how to fill each."""
    from batchpay.sheet.template import write_template

    click.echo(str(write_template(out)))


def main() -> None:
    cli(prog_name="batchpay")
