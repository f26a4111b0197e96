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
from datetime import UTC, datetime
from typing import Any

from batchpay import sshsig
from batchpay.config import Settings
from batchpay.console.accounts import OWNER, Accounts
from batchpay.console.batches import Batch, BatchRefused, Review
from batchpay.controls import approval, plan_checks, plan_file
from batchpay.engine.make_plan import make_plan
from batchpay.engine.paying import Reporter
from batchpay.engine.runner import RunOptions
from batchpay.files import replaced_atomically
from batchpay.service import Opener


def make_review(settings: Settings, options: RunOptions, reporter: Reporter, connect: Opener,
                batch: Batch, accounts: Accounts) -> Review:
    """A dry run of the batch's sheet, written as the batch's plan and signed by its maker
    (the console user who uploaded it) with their server-held key. The plan and the dry run
    record that user as the maker: with payee_confirmed_by_other, a payee change they alone
    confirmed stays held."""
    release = release_settings(settings, accounts)
    key = accounts.signing_key(batch.maker)
    try:
        maker = approval.maker_of(release, key)
    except plan_checks.PlanRefused as exc:
        raise plan_checks.PlanRefused(
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
                  short=[w.note for w in made.dry_run.wallet_check if w.short],
                  currencies=dict(document.get("currencies", {})),
                  expires_at=str(document.get("expires_at", "")),
                  payee_changes=list(made.dry_run.payee_changes),
                  released=dict(made.dry_run.released),
                  at=datetime.now(UTC).isoformat(timespec="seconds"))


def approve(batch: Batch, accounts: Accounts, approver: str, settings: Settings,
            expected: str) -> str:
    """Sign the batch's plan with the approver's server-held key, as `batchpay approve`
    does: the maker's signature checked first, and the library refuses any key of the
    maker's principal or of the plan's actors. The bytes signed are the plan `expected`
    (the one the approver read), else nothing is. Returns the key's fingerprint."""
    release = release_settings(settings, accounts)
    checked = approval.review(batch.plan_files.plan, release)
    if checked.id != expected:  # replaced between the page's check and this read
        raise BatchRefused("The batch changed since you opened it: review the new plan.")
    return approval.approve(checked, accounts.signing_key(approver), release).fingerprint


def actions_of(batch: Batch) -> dict[str, list[str]]:
    """Who changed what the batch's plan pays, and how (`plan_checks.actors_of`); {} when
    there is no plan this batchpay reads (approving it is refused then anyway)."""
    try:
        return plan_checks.actors_of(plan_file.read_plan(batch.plan_files.plan).document)
    except plan_checks.PlanRefused:
        return {}


def add_signature(batch: Batch, armored: str, accounts: Accounts, approver: str,
                  settings: Settings) -> str:
    """An SSHSIG signature of the plan the approver made with their own key (`ssh-keygen -Y
    sign -n batchpay-plan-v1`, or `batchpay approve`): kept beside the plan once it verifies
    with a key the approvers file lists for approving under the approver's own name (a
    signature that would not release the plan is never kept: it would block the batch's
    payment)."""
    release = release_settings(settings, accounts)
    checked = approval.review(batch.plan_files.plan, release)
    try:
        key = sshsig.verify(armored, checked.data, plan_file.NAMESPACE)
    except sshsig.SignatureError as exc:
        raise BatchRefused(f"This is not a signature of this batch's plan: {exc}.") from exc
    print_ = sshsig.fingerprint(key)
    names, refusals = sshsig.principals_of(approval.signers_of(release), key,
                                           plan_file.NAMESPACE, datetime.now(UTC))
    if print_ == checked.document["maker"]["key"] or set(names) & set(checked.maker):
        raise BatchRefused("This is the maker's own key: a batch is approved by someone else.")
    if approver not in names:
        why = f" ({'; '.join(refusals)})" if refusals else ""
        raise BatchRefused(f"The key {print_} is not listed for {approver} in the approvers "
                           f"file {release.approvers_file} for approving plans{why}: only a "
                           "signature by your own listed key approves.")
    path = plan_file.next_signature_path(batch.plan_files.plan)
    path.write_text(armored, encoding="utf-8")
    return print_


# what each role's key signs: a maker's key makes plans, an approver's approves them
ROLE_NAMESPACES = {"maker": plan_file.MAKER_NAMESPACE, "approver": plan_file.NAMESPACE}


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
    path = approval.console_approvers(settings.local_folder)  # where `run --plan` finds it too
    lines = [line for user in accounts.users() if (line := signer_line(accounts, user.name))]
    text = "".join(line + "\n" for line in lines)
    if not (path.is_file() and path.read_text(encoding="utf-8") == text):
        with replaced_atomically(path) as partial:
            partial.write_text(text, encoding="utf-8")
    return dataclasses.replace(settings, approvers_file=path)


def approved_plan(batch: Batch, settings: Settings) -> plan_file.CheckedPlan:
    """The batch's plan with its signatures checked (`run --plan`'s gate), for `RunOptions`."""
    checked = plan_file.read_plan(batch.plan_files.plan)
    approval.check_release(checked, settings)
    return checked


def plan_summary(batch: Batch) -> list[str]:
    """The approver's reading of the plan, as `batchpay approve` prints it: the figures
    recomputed from its rows (its maker's signature is checked when it is approved)."""
    if not batch.plan_files.plan.is_file():
        return []
    try:
        return approval.summary_lines(plan_file.read_plan(batch.plan_files.plan), largest=10)
    except plan_checks.PlanRefused as exc:  # made by an earlier batchpay: the page still shows
        return [f"{exc.message} Review the batch again to make a new plan."]
