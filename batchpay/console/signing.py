"""Every call the console makes into the plan and approval library, in one place.

The console's review is `batchpay plan` (a dry run written as NAME.plan.json, signed by the
maker: the console user who uploaded the batch, with their server-held key), its Approve is
`batchpay approve` with the approver's server-held key (or a signature the approver made
with their own key and uploaded), and its Pay of an approved batch is `batchpay run --plan`.
When that library's contract changes, this module is what follows it.

Who may make and approve is the settings' `approvers_file` when one is set (its lines for
the console's users are printed by `batchpay users add`), else the console's own list of
its users' keys, written here before each use: a maker's key for making plans, an
approver's for approving them (`namespaces=` on each line), both for a user with both
roles. The library counts approvals by principal and never the maker's principal, nor any
of the plan's actors (who released a repeat, who confirmed a payee it pays); the console adds
its own refusal by user (`work._require_approvable`). The owner signs nothing: its role is
in no namespace, so it is in no approvers list.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

from batchpay import clock, sshsig
from batchpay.console.accounts import OWNER, Accounts
from batchpay.console.batches import Batch, BatchRefused, Review
from batchpay.engine import (
    MAKER_NAMESPACE,
    NAMESPACE,
    CheckedPlan,
    PlanRefused,
    Reporter,
    RunOptions,
    SignatureRefused,
    actors_of,
    add_plan_signature,
    approve_plan,
    check_release,
    console_approvers,
    make_plan,
    maker_of,
    plan_id,
    plan_summary_lines,
    read_plan,
    review_plan,
)
from batchpay.files import replaced_atomically
from batchpay.service import Opener
from batchpay.settings.model import Settings


def make_review(settings: Settings, options: RunOptions, reporter: Reporter, connect: Opener,
                batch: Batch, accounts: Accounts) -> Review:
    """A dry run of the batch's sheet, written as the batch's plan and signed by its maker
    (the console user who uploaded it) with their server-held key. The plan and the dry run
    record that user as the maker: with payee_confirmed_by_other, a payee change they alone
    confirmed stays held."""
    release = release_settings(settings, accounts)
    key = accounts.signing_key(batch.maker)
    try:
        maker = maker_of(release, key)
    except PlanRefused as exc:
        raise PlanRefused(
            f"{batch.maker}, who made this batch, cannot sign its plan: {exc.message}",
            hint=f"List {batch.maker}'s key for making plans in the approvers file "
            f"{release.approvers_file}: `batchpay users add {batch.maker} --role maker "
            "--replace` prints its line.") from exc
    made = make_plan(release, dataclasses.replace(options, maker=batch.maker), reporter,
                     connect, batch.plan_files, maker=dataclasses.replace(maker, user=batch.maker))
    document: Mapping[str, Any] = made.document or {}
    return Review(run_id=made.dry_run.run_id, plan_id=made.identifier,
                  short_code=made.short_code if made.identifier else "", refused=made.refused,
                  notes=list(made.dry_run.notes),
                  currencies=dict(document.get("currencies", {})),
                  expires_at=str(document.get("expires_at", "")),
                  payee_changes=list(made.dry_run.payee_changes),
                  released=dict(made.dry_run.released),
                  at=clock.stamp())


def approve(batch: Batch, accounts: Accounts, approver: str, settings: Settings,
            expected: str) -> str:
    """Sign the batch's plan with the approver's server-held key, as `batchpay approve`
    does: the maker's signature checked first, and the library refuses any key of the
    maker's principal or of the plan's actors. The bytes signed are the plan `expected`
    (the one the approver read), else nothing is. Returns the key's fingerprint."""
    release = release_settings(settings, accounts)
    checked = review_plan(batch.plan_files.plan, release)
    if checked.id != expected:  # replaced between the page's check and this read
        raise BatchRefused("The batch changed since you opened it: review the new plan.")
    return approve_plan(checked, accounts.signing_key(approver), release).fingerprint


def actions_of(batch: Batch) -> dict[str, list[str]]:
    """Who changed what the batch's plan pays, and how (`plan_checks.actors_of`); {} when
    there is no plan this batchpay reads (approving it is refused then anyway)."""
    try:
        return actors_of(read_shown(batch.plan_files.plan).document)
    except PlanRefused:
        return {}


def add_signature(batch: Batch, armored: str, accounts: Accounts, approver: str,
                  settings: Settings) -> str:
    """An SSHSIG signature of the batch's plan uploaded by an approver, kept beside the plan
    once the approval rules take it (controls.approval.add_signature), under the console's
    approvers file; refused on the page otherwise."""
    release = release_settings(settings, accounts)
    try:
        return add_plan_signature(batch.plan_files.plan, armored, approver, release)
    except SignatureRefused as exc:
        raise BatchRefused(exc.message, hint=exc.hint) from exc


# what each role's key signs: a maker's key makes plans, an approver's approves them
ROLE_NAMESPACES = {"maker": MAKER_NAMESPACE, "approver": NAMESPACE}


def signer_line(accounts: Accounts, name: str) -> str:
    """The user's allowed_signers line, limited to what their roles sign: `NAME
    namespaces="..." ssh-ed25519 AAAA...`; "" for a user who signs nothing (an auditor)."""
    user = accounts.get(name)
    if user is None or user.name == OWNER:  # the owner signs nothing, whatever its record says
        return ""
    spaces = [ROLE_NAMESPACES[r] for r in user.roles if r in ROLE_NAMESPACES]
    if not spaces:
        return ""
    public = sshsig.public_line(accounts.signing_key(name).public_key())
    return f'{name} namespaces="{",".join(spaces)}" {public}'


def release_settings(settings: Settings, accounts: Accounts) -> Settings:
    """The settings a plan is made and released under: the console's approvers file (its
    makers' and approvers' keys) unless one is set."""
    if settings.approvers_file is not None:
        return settings
    path = console_approvers(settings.local_folder)  # where `run --plan` finds it too
    lines = [line for user in accounts.users() if (line := signer_line(accounts, user.name))]
    text = "".join(line + "\n" for line in lines)
    if not (path.is_file() and path.read_text(encoding="utf-8") == text):
        with replaced_atomically(path) as partial:
            partial.write_text(text, encoding="utf-8")
    return dataclasses.replace(settings, approvers_file=path)


def approved_plan(batch: Batch, settings: Settings) -> CheckedPlan:
    """The batch's plan with its signatures checked (`run --plan`'s gate), for `RunOptions`."""
    checked = read_plan(batch.plan_files.plan)
    check_release(checked, settings)
    return checked


def plan_summary(batch: Batch, zone_name: str) -> list[str]:
    """The approver's reading of the plan, as `batchpay approve` prints it: the figures
    recomputed from its rows (its maker's signature is checked when it is approved)."""
    if not batch.plan_files.plan.is_file():
        return []
    try:
        return plan_summary_lines(read_shown(batch.plan_files.plan), largest=10,
                                  zone_name=zone_name)
    except PlanRefused as exc:  # made by an earlier batchpay: the page still shows
        return [f"{exc.message} Review the batch again to make a new plan."]


def read_shown(path: Path) -> CheckedPlan:
    """`read_plan` for what a page shows of a plan (its summary, its actors), kept per plan
    id while the console runs: a plan's checks depend on its bytes alone, and checking a
    plan of 2,000 rows twice at every view of its batch took a second or more. Approving
    and paying read the plan anew (`approval.review`, `approved_plan`)."""
    try:
        data = path.read_bytes()
    except OSError:
        return read_plan(path)  # refused as ever
    try:
        return _checked(path, plan_id(data))
    except _Replaced as exc:  # replaced between the two reads: the new one, not kept
        return exc.plan


class _Replaced(Exception):  # noqa: N818 - not an error: an answer not to keep
    def __init__(self, plan: CheckedPlan) -> None:
        self.plan = plan


@lru_cache(maxsize=16)
def _checked(path: Path, expected: str) -> CheckedPlan:
    checked = read_plan(path)
    if checked.id != expected:
        raise _Replaced(checked)  # an exception: lru_cache keeps no answer
    return checked
