"""Commands around the service: banks, the embedded sandbox, the webhook listener, the
template and the settings."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from batchpay.cli.base import (
    cli,
    debug_option,
    handle_errors,
    journal_option,
    sandbox_banner,
    settings_for,
    writable_path,
)


@cli.command()
@click.option("--country", required=True, help="Country code of the bank list, e.g. NG.")
@click.option("--currency", required=True, help="Currency code of the bank list, e.g. NGN.")
@click.option("--json", "as_json", is_flag=True,
              help="Print the list as JSON (bankName, sortCode, branchCode, country).")
@debug_option
@handle_errors
def banks(country: str, currency: str, as_json: bool) -> None:
    """List the banks the service pays to for a country and currency (with sort codes)."""
    import json

    from batchpay.connect import open_service
    from batchpay.engine import list_banks

    settings = settings_for()
    found = list_banks(settings, country, currency, lambda: open_service(settings),
                       on_sandbox=sandbox_banner)
    if as_json:
        click.echo(json.dumps([bank.to_json() for bank in found.banks], ensure_ascii=False,
                              indent=2))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"Banks for {found.country} / {found.currency} ({len(found.banks)})")
    table.add_column("Bank name")
    table.add_column("Sort code")
    for bank in found.banks:
        table.add_row(bank.bank_name, bank.sort_code or "")
    Console(soft_wrap=True, markup=False).print(table)


@cli.command()
@debug_option
@handle_errors
def config() -> None:
    """Print the settings files searched, the journal, and the effective settings.

    The API key is shown only as a fingerprint. A settings file batchpay cannot use is
    named with its error beside everything else (exit 2; every other command refuses it).
    """
    from batchpay.settings.load import inspect_settings
    from batchpay.settings.model import JOURNAL_ORIGINS

    found = inspect_settings()
    settings = found.settings
    click.echo("Settings files, merged in this order (the current folder's may only tighten a "
               "control; the environment wins):", err=True)
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
@click.option("--client-windows", is_flag=True,
              help="Ask clients to keep the provider's rate windows (their rate_limit "
                   "setting) as against a real service (X-Batchpay-Sandbox-Windows: on).")
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
@click.option("--no-payout-list", "payout_list", flag_value=False, default=True,
              help="Answer the payout list (GET /v1/transaction) with 404, as a service "
                   "without it would; payouts are still read one by one.")
@debug_option
@handle_errors
def sandbox(**options: Any) -> None:
    """Run the sandbox: a fake payout service for trying and testing batchpay (no real money)."""
    from batchpay.sandbox.config import SandboxConfig
    from batchpay.sandbox.server import serve

    serve(SandboxConfig(**options))


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
def listen(host: str | None, port: int | None, journal: str | None,
           insecure_no_signature: bool) -> None:
    """Receive the service's webhooks and record payout states in the journal."""
    from batchpay.connect import open_service
    from batchpay.display import stderr_console
    from batchpay.serving import serve_foreground
    from batchpay.settings.model import shown_journal
    from batchpay.webhooks import listener_check, open_listener

    settings = settings_for(journal=journal)
    # refused before the service is opened (for the embedded sandbox, that starts it)
    listener_check(settings, host=host or settings.listen_host, insecure=insecure_no_signature)
    with open_service(settings) as service:  # failures are confirmed with it
        listening = open_listener(settings, service, host=host, port=port,
                                  insecure=insecure_no_signature)
        console = stderr_console()
        if listening.insecure:
            from rich.text import Text

            console.print(Text("INSECURE: signatures are NOT checked. Anyone who can reach "
                               "this port can change payout states in your journal.",
                               style="bold red"))
        console.print(f"Listening for webhooks on {listening.url} "
                      f"(journal {shown_journal(listening.journal)}); Ctrl-C stops.")
        serve_foreground(listening.app, listening.socket)


@cli.command()
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path),
              default=Path("payouts-template.xlsx"), show_default=True,
              callback=writable_path,
              help="Where to write it: .xlsx (dropdowns, Text columns, help sheet) or .csv.")
@debug_option
@handle_errors
def template(out: Path) -> None:
    """Write an empty payout sheet to fill in: the columns, dropdowns and how to fill each."""
    from batchpay.engine import write_template

    click.echo(str(write_template(out)))


@cli.group("journal")
def journal_group() -> None:
    """Move the journal to PostgreSQL, or keep a backup of it."""


@journal_group.command("copy")
@click.option("--to", "to", required=True, metavar="URL|PATH",
              help="The new, empty journal: postgresql://USER@HOST/DB (or a new file).")
@journal_option
@debug_option
@handle_errors
def journal_copy(to: str, journal: str | None) -> None:
    """Copy the journal into a new one (a PostgreSQL database), chain checked before and after."""
    from batchpay.engine import Journal, copy_journal
    from batchpay.settings.model import DatabaseURL, journal_location, shown_journal

    settings = settings_for(journal=journal)
    target = journal_location(to)
    with Journal.existing(settings.journal) as source:
        moved = copy_journal(source, target)
    click.echo(f"Copied {moved.events} events to {shown_journal(target)} in "
               f"{moved.seconds:.1f} s; chain head {moved.head} (the same as the source's).")
    if isinstance(target, DatabaseURL) and not isinstance(settings.journal, DatabaseURL):
        from batchpay.console.moving import copy_console

        console = copy_console(settings.local_folder, target)
        if console.users or console.batches:
            click.echo(f"Copied the console: {console.users} users and their keys, "
                       f"{console.batches} batches.")
    click.echo(f"Use it from now on: journal = \"{shown_journal(target)}\" in your settings "
               "file (or BATCHPAY_JOURNAL), on every host, each with the chain key.",
               err=True)


@journal_group.command("backup")
@click.argument("out", type=click.Path(dir_okay=False, path_type=Path))
@journal_option
@debug_option
@handle_errors
def journal_backup(out: Path, journal: str | None) -> None:
    """Write a consistent copy of the journal to OUT (a new file): SQLite's backup, or
    pg_dump's custom format for a PostgreSQL journal."""
    from batchpay.engine import Journal, backup_journal

    settings = settings_for(journal=journal)
    with Journal.existing(settings.journal) as source:
        moved = backup_journal(source, out)
    click.echo(f"Backup: {moved.where} ({moved.events} events, chain head {moved.head}, "
               f"{moved.seconds:.1f} s)")
