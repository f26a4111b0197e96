"""The controls around paying: the payee register (payees), signing keys, and the plan a
second person approves (plan, approve)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from batchpay import clock
from batchpay.cli.base import (
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
    settings_for,
    shown_path,
)
from batchpay.files import check_output
from batchpay.statuses import EXIT_ROWS

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey


@cli.group(invoke_without_command=True)
@journal_option
@click.option("--json", "as_json", is_flag=True, help="Print the register as JSON on stdout.")
@debug_option
@click.pass_context
@handle_errors
def payees(ctx: click.Context, journal: str | None, as_json: bool) -> None:
    """The payee register: every set of bank details each payee was paid on.

    Without a subcommand, lists it (payee, name, masked account, bank, last paid, payouts
    and amount paid per set of details).
    """
    import json
    from decimal import Decimal

    from batchpay.engine import Register, register_lines

    ctx.obj = journal
    if ctx.invoked_subcommand is not None:
        return
    with open_journal(journal) as j:
        lines = register_lines(Register.load(j), settings_for().time_zone)
    if as_json:
        click.echo(json.dumps(lines, ensure_ascii=False, indent=2))
        return
    from batchpay.display import print_table, stderr_console
    from batchpay.money import shown_amount

    print_table(("payee", "name", "account", "bank", "last paid", "payouts", "paid",
                 "delivered", "confirmed"),
                ([line["payee"], line["name"], line["account"], line["bank"],
                  f"{line['last_paid']} {line['last_status']}", str(line["payouts"]),
                  ", ".join(shown_amount(Decimal(v), c) for c, v in line["paid"].items()),
                  ", ".join(shown_amount(Decimal(v), c) for c, v in line["delivered"].items()),
                  "yes" if line["confirmed"] else ""] for line in lines))
    if not lines:
        stderr_console().print("No payees yet: a payee is registered by its first payout.")


@payees.command("show")
@click.argument("payee")
@journal_option
@debug_option
@click.pass_context
@handle_errors
def payees_show(ctx: click.Context, payee: str, journal: str | None) -> None:
    """Print PAYEE's held bank details in full (for a read-back call) and its history."""

    from batchpay.engine import BANK_FIELDS, money_text
    from batchpay.engine import show_payee as show

    with open_journal(journal or ctx.obj) as j:
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
        paid = money_text(line) or "nothing"
        click.echo(f"Paid {line['payouts']} time(s) to {line['name']}, {line['account']}, "
                   f"{line['bank']}: {paid}; last {line['last_paid']} {line['last_status']}")
    zone_name = settings_for().time_zone
    for c in found["confirmations"]:
        click.echo(f"Confirmed {clock.show(str(c.get('at')), zone_name)} by {c.get('by')} "
                   f"({c.get('method')}): "
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
                   journal: str | None) -> None:
    """Trust PAYEE's held bank details: the next run or rerun pays the held row.

    One payee at a time, never in bulk; the last four digits must match the held account.
    The confirmation (you, the time, before and after, method, note) is a chained event of
    the journal.
    """
    from batchpay.engine import confirm_payee as confirm
    from batchpay.money import masked

    with open_journal(journal or ctx.obj) as j:
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


def _signing_key(key: Path | None) -> tuple[Ed25519PrivateKey, Path]:
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
    """Signing keys for making and approving payment plans (Ed25519, OpenSSH format)."""


@keys.command("new")
@click.option("--name", required=True, help="The person's name (maker or approver), as "
              "the approvers file will list it (its principal).")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path),
              help="Where to write the private key (default: in your user config folder); "
              "the public key goes beside it as .pub.")
@click.option("--passphrase", is_flag=True, help="Protect the private key with a passphrase "
              "(asked twice).")
@debug_option
@handle_errors
def keys_new(name: str, out: Path | None, passphrase: bool) -> None:
    """Make an Ed25519 key pair and print the approvers-file line for it (a maker's key and
    an approver's are listed alike; `namespaces=` on the line limits a key to one role)."""
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
              help="The maker's key, which signs the plan (default: the key `batchpay keys "
              "new` made, else ~/.ssh/id_ed25519); the approvers file must list it.")
@click.option("--sheet", "sheet_name", help="The sheet to read (default: Payouts, else the "
              "first).")
@click.option("--source-currency", help="Wallet currency for rows that leave source_currency "
              "empty, e.g. NGN.")
@click.option("--skip-invalid", is_flag=True, help="Plan the valid rows even if some rows "
              "are invalid.")
@click.option("--allow-repeat", "allow_repeat", multiple=True, metavar="PAYOUT_REF",
              help="Plan this row although it repeats a recent payment to the same account "
              "and amount (HELD otherwise); the plan lists the release for the approver; "
              "repeatable.")
@decimal_comma_option
@encoding_option
@include_hidden_option
@journal_option
@overwrite_option
@click.option("--quiet", is_flag=True, help="Print only errors and the plan's paths.")
@click.option("--json", "as_json", is_flag=True, help="Print the plan's id, short code, "
              "totals and paths as JSON on stdout.")
@debug_option
@handle_errors
def plan(sheet: Path, name: Path | None, key: Path | None, sheet_name: str | None,
         source_currency: str | None, skip_invalid: bool, allow_repeat: tuple[str, ...],
         decimal_comma: bool, encoding: str | None,
         include_hidden: bool, journal: str | None, overwrite: bool, quiet: bool,
         as_json: bool) -> None:
    """Plan SHEET for approval: a dry run, written as NAME.plan.json, signed by your key
    (NAME.plan.json.maker.sig), and NAME.plan.xlsx.

    SHEET may be a results workbook: it is planned as `rerun` reads it (rows not paid yet,
    and FAILED or REFUNDED rows, with the cells you corrected).

    The plan holds every row that would be sent with every value it is paid from, the
    totals (NbOfTxs, CtrlSum) per currency and a ceiling on the total debit (the quotes plus
    plan_tolerance). Its id is the SHA-256 of the file; the short code (20 characters) is
    read out to the approver. Your key must be in the approvers file. Nothing is paid.
    """
    import json

    from batchpay.connect import open_service
    from batchpay.display import RichReporter, is_interactive, print_counts, print_problems
    from batchpay.engine import PlanFiles, RunOptions, make_plan, maker_of

    files = PlanFiles.named(sheet, name)
    for path in (files.plan, files.maker_signature, files.workbook):
        check_output(path, overwrite=overwrite, inputs=(sheet,))
    settings = settings_for(journal=journal)
    maker = maker_of(settings, _signing_key(key)[0])
    options = RunOptions(sheet=sheet, dry_run=True, sheet_name=sheet_name,
                         source_currency=source_currency, out=files.workbook,
                         skip_invalid=skip_invalid, concurrency=settings.concurrency,
                         max_rps=settings.max_rps, interactive=is_interactive(),
                         decimal_comma=decimal_comma, include_hidden=include_hidden,
                         allow_repeat=frozenset(ref.strip() for ref in allow_repeat),
                         encoding=encoding)
    reporter = RichReporter(quiet=quiet)
    made = make_plan(settings, options, reporter, lambda: open_service(settings, listen=True),
                     files, maker=maker)
    outcome, console = made.dry_run, reporter.console
    for note in outcome.notes:
        console.print(note)
    print_counts(console, outcome.counts, title=f"Dry run {outcome.run_id}")
    print_problems(console, ((r["row"], r["status"], r["error"] or "") for r in outcome.rows
                             if r["status"] not in outcome.fine_statuses))
    if made.refused:
        fail(f"No plan was written: {made.refused}",
             f"See the dry run's workbook: {shown_path(files.workbook)}", EXIT_ROWS)
    if as_json:
        click.echo(json.dumps(made.as_json(), indent=2))
    else:
        assert made.document is not None
        click.echo(f"Plan: {shown_path(files.plan)} ({made.rows} row(s)), signed by "
                   f"{', '.join(maker.principals)} ({maker.fingerprint}); for a person: "
                   f"{shown_path(files.workbook)}")
        for currency, shown in made.rates.items():
            if shown:
                click.echo(f"Rate {currency}: {'; '.join(shown)} (as quoted for this plan)")
        click.echo(f"Plan id {made.identifier}, short code {made.short_code}; expires "
                   f"{clock.show(made.document['expires_at'], settings.time_zone, seconds=True)}")
        click.echo(f"Next: an approver runs `batchpay approve {shown_path(files.plan)}`.")
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

    The totals, largest rows and payee findings shown are recomputed from the plan's rows
    (a plan whose stated figures differ is refused). The signature is OpenSSH's SSHSIG
    (namespace batchpay-plan-v1) over the plan file's bytes: `ssh-keygen -Y verify` checks
    it too. The maker cannot approve their own plan, with any key of theirs; approving a
    plan you already approved says so and signs nothing new.
    """
    import json

    from batchpay.engine import approve_plan as sign_plan
    from batchpay.engine import plan_summary_lines as summary_lines
    from batchpay.engine import review_plan as review
    from batchpay.engine import same_code

    settings = settings_for()
    checked = review(plan_path, settings)
    for line in summary_lines(checked, zone_name=settings.time_zone):
        click.echo(line, err=True)
    if yes and not short_code:
        fail("--yes needs --short-code CODE: the code is what ties your approval to this plan.")
    typed = short_code if short_code else (
        click.prompt("Type the plan's short code to approve it", err=True) if not yes else "")
    if not same_code(str(typed), checked.id):
        fail(f"The short code {typed!r} is not this plan's: nothing was signed.",
             "Ask the maker to read the code that `batchpay plan` printed (20 characters; "
             "hyphens and case do not matter).")
    private, key_path = _signing_key(key)
    done = sign_plan(checked, private, settings)
    if as_json:
        click.echo(json.dumps({"plan_id": checked.id, "signature": str(done.path),
                               "key": str(key_path), "fingerprint": done.fingerprint,
                               "principals": done.principals, "already": done.already},
                              indent=2))
    elif done.already:
        click.echo(f"Already approved: {', '.join(done.principals)} ({done.fingerprint}) "
                   f"approved plan {checked.short} in {shown_path(done.path)}; nothing new "
                   "was signed.")
    else:
        click.echo(f"Approved plan {checked.short} as {', '.join(done.principals)} with key "
                   f"{done.fingerprint}: {shown_path(done.path)}")
