"""The remittance advice command, `advise`, and the advices a run sends when it ends."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from batchpay.cli.base import cli, debug_option, handle_errors, journal_option, settings_for
from batchpay.errors import AdviceError
from batchpay.statuses import EXIT_OK, EXIT_ROWS

_NO_MAIL_HINT = ("Add a [mail] table to your batchpay.toml (host, port, from, security, user; "
                 "the password in BATCHPAY_MAIL_PASSWORD): see Remittance advice in the README.")


@cli.command()
@click.argument("run_id")
@journal_option
@click.option("--json", "as_json", is_flag=True,
              help="Print one JSON document (the run's advices and their states) on stdout.")
@debug_option
@handle_errors
def advise(run_id: str, journal: Path | None, as_json: bool) -> None:
    """Mail each payee of RUN_ID whose payouts COMPLETED its remittance advice (a PDF in
    Chinese and English), once: advices sent before are never sent again.

    Exit 0: every advice due is sent; 1: some are still waiting (mail server unreachable)
    or were refused; 2: could not run (no [mail] settings, no Chinese font, no such run).
    """
    from batchpay.engine import Journal, advise_run
    from batchpay.mail import SmtpMailer

    settings = settings_for(journal=journal)
    if settings.mail is None:
        raise AdviceError("No mail server is set: remittance advices need [mail] settings.",
                          hint=_NO_MAIL_HINT)
    with Journal.existing(settings.journal) as j:
        outcome = advise_run(j, run_id, settings.mail, SmtpMailer(settings.mail))
        records = j.advices(outcome.run_id)
    for line in outcome.lines():
        click.echo(line, err=as_json)
    if as_json:
        click.echo(json.dumps({"run_id": outcome.run_id, "advices": [
            {"payee": r.payee_name, "recipients": list(r.recipients),
             "payout_refs": list(r.payout_refs), "state": str(r.state), "attempts": r.attempts,
             "last_error": r.last_error, "sent_at": r.sent_at} for r in records]},
            ensure_ascii=False, indent=2))
    sys.exit(EXIT_ROWS if outcome.left or outcome.failed or outcome.unsure else EXIT_OK)
