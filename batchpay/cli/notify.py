"""The notifications' commands: `notify send` delivers what is queued, `notify list` shows
the outbox (what waits, what was sent, what failed and why)."""

from __future__ import annotations

import json
import sys

import click

from batchpay.cli.base import cli, debug_option, handle_errors, journal_option, settings_for
from batchpay.statuses import EXIT_OK, EXIT_ROWS


@cli.group()
def notify() -> None:
    """Notifications of the `notify` setting: a batch waits for approval, it was approved or
    rejected, a payment ended, a payee is held. Queued in the journal, delivered with
    retries by `batchpay serve` or by `batchpay notify send`."""


@notify.command("send")
@journal_option
@click.option("--now", is_flag=True,
              help="Also try the notifications that wait for their next try (after a receiver "
              "that was down), not only those due.")
@debug_option
@handle_errors
def notify_send(journal: str | None, now: bool) -> None:
    """Deliver the queued notifications that are due, each once.

    Exit 0: all delivered; 1: some wait for a later try or failed for good.
    """
    from batchpay.notify import deliver_now

    settings = settings_for(journal=journal)
    done = deliver_now(settings.journal, settings.notify, everything=now)
    for line in done.lines():
        click.echo(line)
    sys.exit(EXIT_ROWS if done.retrying or done.failed else EXIT_OK)


@notify.command("list")
@journal_option
@click.option("--json", "as_json", is_flag=True, help="Print the outbox as JSON on stdout.")
@debug_option
@handle_errors
def notify_list(journal: str | None, as_json: bool) -> None:
    """Show the notifications' outbox: each event, its receiver (without passwords), its
    state (queued, sending, sent, failed), tries and last error."""
    from batchpay.engine import notice_records

    settings = settings_for(journal=journal)
    records = notice_records(settings.journal)
    if as_json:
        click.echo(json.dumps([
            {"event": r.event, "receiver": r.shown, "title": r.title, "state": str(r.state),
             "attempts": r.attempts, "last_error": r.last_error, "created_at": r.created_at,
             "due_at": r.due_at, "sent_at": r.sent_at} for r in records],
            ensure_ascii=False, indent=2))
        return
    if not records:
        click.echo("No notifications queued or sent.")
    for r in records:
        extra = f"  last error: {r.last_error}" if r.last_error else ""
        click.echo(f"{r.state:8} {r.attempts} tries  {r.title}  → {r.shown}{extra}")
