"""Every call the console makes into the plan and approval library, in one place.

The console's review is `batchpay plan` (a dry run written as NAME.plan.json), its Approve
is `batchpay approve` with the approver's server-held key (or a signature the approver made
with their own key and uploaded), and its Pay of an approved batch is `batchpay run --plan`.
When that library's contract changes, this module is what follows it.

Who may approve is the settings' `approvers_file` when one is set (its lines for the
console's users come from `batchpay users add`), else the console's own list of its
approvers' keys, written here before each check.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from batchpay import sshsig
from batchpay.config import Settings
from batchpay.console.accounts import Accounts
from batchpay.console.batches import Batch, BatchRefused
from batchpay.engine import approval, planning
from batchpay.engine.runner import Reporter, RunOptions
from batchpay.errors import SignatureError
from batchpay.files import replaced_atomically
from batchpay.service import Opener


@dataclass
class Review:
    """What the review shows of a plan: its id, short code, totals, expiry, and the dry run."""

    run_id: str
    plan_id: str
    short_code: str
    refused: str
    notes: list[str]
    currencies: dict[str, dict[str, Any]]
    expires_at: str
    payee_changes: list[dict[str, Any]]


def make_review(settings: Settings, options: RunOptions, reporter: Reporter, connect: Opener,
                batch: Batch, accounts: Accounts) -> Review:
    """A dry run of the batch's sheet, written as the batch's plan; the maker's own key is
    recorded in it, so that the library refuses it as an approval too."""
    files = planning.PlanFiles(batch.plan, batch.plan_workbook)
    made = planning.make_plan(settings, options, reporter, connect, files,
                              maker_key=accounts.fingerprint(batch.maker))
    document = made.document or {}
    return Review(made.dry_run.run_id, made.identifier,
                  made.short_code if made.identifier else "", made.refused,
                  list(made.dry_run.notes), dict(document.get("currencies", {})),
                  str(document.get("expires_at", "")), list(made.dry_run.payee_changes))


def approve(batch: Batch, accounts: Accounts, approver: str) -> str:
    """Sign the batch's plan with the approver's key; returns the key's fingerprint."""
    checked = approval.read_plan(batch.plan)
    key = accounts.signing_key(approver)
    approval.approve(checked, key, approver=approver)
    return sshsig.fingerprint(key.public_key())


def add_signature(batch: Batch, armored: str, accounts: Accounts, approver: str,
                  settings: Settings) -> str:
    """An SSHSIG signature of the plan the approver made with their own key (`ssh-keygen -Y
    sign -n batchpay-plan-v1`, or `batchpay approve`): kept beside the plan once it verifies
    with a key the approvers file lists under the approver's own name (a signature that
    would not release the plan is never kept: it would block the batch's payment)."""
    checked = approval.read_plan(batch.plan)
    try:
        key = sshsig.verify(armored, checked.data, approval.NAMESPACE)
    except SignatureError as exc:
        raise BatchRefused(f"This is not a signature of this batch's plan: {exc}.") from exc
    print_ = sshsig.fingerprint(key)
    if print_ == accounts.fingerprint(batch.maker):
        raise BatchRefused("This is the maker's own key: a batch is approved by someone else.")
    listed = release_settings(settings, accounts).approvers_file
    assert listed is not None
    try:
        principals = [s.principal for s in sshsig.allowed_signers(Path(listed))
                      if s.fingerprint == print_]
    except (OSError, SignatureError) as exc:
        raise BatchRefused(f"The approvers file {listed} cannot be read: {exc}.") from exc
    if approver not in principals:
        raise BatchRefused(f"The key {print_} is not listed for {approver} in the approvers "
                           "file: only a signature by your own listed key approves.")
    path = approval.next_signature_path(batch.plan)
    path.write_text(armored, encoding="utf-8")
    return print_


def release_settings(settings: Settings, accounts: Accounts) -> Settings:
    """The settings a plan is released under: the console's approvers file unless one is set."""
    if settings.approvers_file is not None:
        return settings
    path = accounts.folder / "approvers"
    lines = [accounts.signer_line(u.name) for u in accounts.users() if u.may("approver")]
    with replaced_atomically(path) as partial:
        partial.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return dataclasses.replace(settings, approvers_file=path)


def approved_plan(batch: Batch, settings: Settings) -> Any:
    """The batch's plan with its approvals checked (`run --plan`'s gate), for `RunOptions`."""
    checked = approval.read_plan(batch.plan)
    approval.check_release(checked, settings)
    return checked


def plan_source_currency(plan: Any) -> str | None:
    return plan.document["source_currency"] or None


def plan_summary(batch: Batch) -> list[str]:
    """The approver's reading of the plan, as `batchpay approve` prints it."""
    if not batch.plan.is_file():
        return []
    return approval.summary_lines(approval.read_plan(batch.plan).document, largest=10)


def plan_ceilings(batch: Batch) -> dict[str, Decimal]:
    return approval.read_plan(batch.plan).ceilings()


def signatures(batch: Batch) -> list[Path]:
    return approval.signature_paths(batch.plan) if batch.plan.is_file() else []
