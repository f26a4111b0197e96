"""The commands that close the books: export (a period for a ledger) and reconcile (the
wallet's movements against the journal)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from batchpay.cli.base import (
    cli,
    debug_option,
    handle_errors,
    journal_option,
    open_journal,
    overwrite_option,
    settings_for,
    shown_path,
    writable_path,
)

FROM_HELP = "First day of the period, in the time_zone setting's days, e.g. 2026-11-01."
TO_HELP = "Last day of the period (included), e.g. 2026-11-30."


@cli.command()
@click.option("--from", "start", required=True, metavar="YYYY-MM-DD", help=FROM_HELP)
@click.option("--to", "end", required=True, metavar="YYYY-MM-DD", help=TO_HELP)
@click.option("--format", "fmt", required=True,
              type=click.Choice(["ofx", "xero", "camt053", "kingdee", "yonyou", "journal"]),
              help="ofx (OFX 2.2), xero (bank statement CSV), camt053 (ISO 20022 "
              "camt.053.001.02), kingdee / yonyou (voucher workbooks), journal "
              "(double-entry CSV).")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), callback=writable_path,
              help="The file to write (default: books-<format>-<from>-<to>.<suffix>; ofx and "
              "xero add -<CUR> per wallet currency when the period moved more than one).")
@journal_option
@overwrite_option
@debug_option
@handle_errors
def export(start: str, end: str, fmt: str, out: Path | None, journal: str | None,
           overwrite: bool) -> None:
    """Export a period's money movements (payout debits, fees, refunds) for a ledger.

    Rendered from the same model as `batchpay statement`: the journal's chain is checked
    first (a journal changed outside batchpay: exit 2).
    """
    from batchpay.days import Period, parse_day
    from batchpay.engine import FORMAT_NAMES, export_books

    settings = settings_for(journal=journal)
    period = Period(parse_day(start, "--from"), parse_day(end, "--to"), settings.time_zone)
    with open_journal(journal) as j:
        done = export_books(j, period, fmt, out, settings.books, overwrite=overwrite)
    click.echo(f"{FORMAT_NAMES[fmt]}, {period.label}: {done.movements} movement(s)"
               + (f" in {len(done.vouchers)} voucher(s)" if done.vouchers else ""), err=True)
    for currency, book in done.closed.wallets.items():
        click.echo(f"  {currency}: {len(book.movements)} movement(s), total {book.total:,}",
                   err=True)
    if not done.outputs:
        click.echo("No money moved in the period: no file written.", err=True)
    for path in done.outputs:
        click.echo(f"Export: {shown_path(path)}")


@cli.command()
@click.option("--from", "start", required=True, metavar="YYYY-MM-DD", help=FROM_HELP)
@click.option("--to", "end", required=True, metavar="YYYY-MM-DD", help=TO_HELP)
@click.option("--statement", "statement_file", type=click.Path(dir_okay=False, exists=True,
                                                               path_type=Path),
              help="A wallet statement CSV (date, type, amount, currency, reference, "
              "payout_id, description) instead of the service's transaction list.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), callback=writable_path,
              help="The reconciliation workbook (default: reconcile-<from>-<to>.xlsx).")
@journal_option
@overwrite_option
@debug_option
@handle_errors
def reconcile(start: str, end: str, statement_file: Path | None, out: Path | None,
              journal: str | None, overwrite: bool) -> None:
    """Match the wallet's movements to the journal's payouts, fees and refunds.

    The wallet's side is the service's transaction list (or --statement FILE). Exit 0:
    everything matched; 1: a movement is in the wallet but not in the journal (money moved
    outside batchpay) or in the journal but not in the wallet; 2: could not run.
    """
    from batchpay.connect import open_service
    from batchpay.days import Period, parse_day
    from batchpay.engine import default_reconcile_path, reconcile_period

    settings = settings_for(journal=journal)
    period = Period(parse_day(start, "--from"), parse_day(end, "--to"), settings.time_zone)
    path = out or default_reconcile_path(period)
    done = reconcile_period(settings, period, path, statement_file,
                            lambda: open_service(settings), overwrite=overwrite)
    for line in done.summary_lines():
        click.echo(line, err=True)
    click.echo(f"Reconciliation: {shown_path(path)}")
    sys.exit(done.exit_code)
