"""The web console: serve, and its users."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from batchpay.cli.base import cli, debug_option, handle_errors, journal_option, settings_for


@cli.command()
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on; anything but loopback needs --tls-cert/--tls-key "
              "and user accounts.")
@click.option("--port", type=click.IntRange(0, 65535), default=8765, show_default=True,
              help="Port to listen on (0: a free one).")
@click.option("--tls-cert", type=click.Path(dir_okay=False, path_type=Path),
              help="TLS certificate (PEM) for HTTPS.")
@click.option("--tls-key", type=click.Path(dir_okay=False, path_type=Path),
              help="TLS private key (PEM) for HTTPS.")
@click.option("--server-name", help="The name users type to reach the console (checked "
              "against each request's Host header), e.g. payouts.example.com.")
@click.option("--user", help="The one-time login link signs in this console user "
              "(default: the owner, who administers and makes, approves and pays nothing).")
@journal_option
@debug_option
@handle_errors
def serve(host: str, port: int, tls_cert: Path | None, tls_key: Path | None,
          server_name: str | None, user: str | None, journal: str | None) -> None:
    """Serve the web console: upload, check, review, approve, pay, follow, audit.

    Gives a one-time login link: printed for one person on this machine; for a team's
    console (users with passwords, or listening beyond loopback) written to
    console/login-link beside the journal (0600) and never printed, where a log would keep
    it. The console uses the same journal as the commands (its users, keys and batches live
    beside it), so a sheet paid from either is never paid twice.
    """
    from batchpay.console.server import ServeOptions
    from batchpay.console.server import serve as serve_console

    settings = settings_for(journal=journal)
    serve_console(settings, ServeOptions(host, port, tls_cert, tls_key, server_name, user),
                  lambda line: click.echo(line, err=True))


@cli.group()
def users() -> None:
    """The web console's users and their roles (maker, approver, auditor)."""


@users.command("add")
@click.argument("name")
@click.option("--role", "roles", multiple=True, required=True,
              type=click.Choice(["maker", "approver", "auditor"]),
              help="maker (upload, check, review, pay), approver (approve or reject "
              "another's batch), auditor (read only); repeatable.")
@click.option("--password-stdin", is_flag=True,
              help="Read the password from the first line of standard input (else asked "
              "twice on the terminal).")
@click.option("--replace", is_flag=True, help="Give an existing user new roles and a new "
              "password (its console sessions end at once).")
@journal_option
@debug_option
@handle_errors
def users_add(name: str, roles: tuple[str, ...], password_stdin: bool, replace: bool,
              journal: str | None) -> None:
    """Add the console user NAME with a password (Argon2id-hashed) and a signing key.

    Prints the user's approvers-file line: a maker's plans and an approver's approvals
    verify with it.
    """
    from batchpay.console.signing import signer_line
    from batchpay.console.state import open_accounts

    settings = settings_for(journal=journal)
    if password_stdin:
        password = sys.stdin.readline().rstrip("\r\n")
    else:
        password = str(click.prompt("Password", hide_input=True, confirmation_prompt=True,
                                    err=True))
    accounts = open_accounts(settings)
    existed = accounts.get(name) is not None
    user = accounts.add(name, roles, password, replace=replace)
    click.echo(f"User {user.name}: {', '.join(user.roles)}; signing key "
               f"{accounts.fingerprint(user.name)}")
    if existed:
        click.echo(f"{user.name}'s console sessions have ended: they sign in again.", err=True)
    line = signer_line(accounts, user.name)
    if line:
        click.echo("Its approvers-file line (for an approvers_file you keep yourself):")
        click.echo(line)


@users.command("list")
@journal_option
@debug_option
@handle_errors
def users_list(journal: str | None) -> None:
    """List the console's users, their roles and key fingerprints."""
    from batchpay.console.state import open_accounts

    accounts = open_accounts(settings_for(journal=journal))
    found = accounts.users()
    for user in found:
        click.echo(f"{user.name}  {', '.join(user.roles)}  {accounts.fingerprint(user.name)}"
                   + ("" if user.password else "  (login link only)"))
    if not found:
        click.echo("No console users yet: `batchpay users add NAME --role maker`.", err=True)


@users.command("remove")
@click.argument("name")
@journal_option
@debug_option
@handle_errors
def users_remove(name: str, journal: str | None) -> None:
    """Remove the console user NAME: its sessions end at once, its signing key is deleted
    and leaves the console's approvers list."""
    from batchpay.console.state import open_accounts

    accounts = open_accounts(settings_for(journal=journal))
    accounts.remove(name)
    click.echo(f"Removed {name}: its console sessions have ended and its key is gone.")
