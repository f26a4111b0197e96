"""Two-person approval: a run pays only a plan its maker signed and a second, named person
approved, each with a key the approvers file lists.

    batchpay plan SHEET          the maker: a dry run, written as NAME.plan.json (canonical
                                 JSON: every row that would be sent, with every input value),
                                 signed by the maker's key (NAME.plan.json.maker.sig, namespace
                                 batchpay-plan-maker-v1), and NAME.plan.xlsx for a person
    batchpay approve PLAN        a checker: reads the totals recomputed from the rows, types
                                 the short code, signs the file's bytes (NAME.plan.json.sig,
                                 OpenSSH SSHSIG, namespace batchpay-plan-v1)
    batchpay run --plan PLAN     pays exactly the plan's rows, rebuilt from the plan (the sheet
                                 is never read again), once the figures, the maker's signature,
                                 the approvals, expiry, service and journal all check out; the
                                 total debit per currency, over every run of the plan, never
                                 passes the plan's ceiling

Who is who is the approvers file's business (OpenSSH allowed_signers): a key stands for the
principals its lines name. An approval counts only from a principal other than the maker's
and other than any of the plan's actors (whoever released a repeat in it or confirmed a
payee one of its rows is paid on: each changed what it pays, so each is a maker of it), and
two approvals are two different principals, whichever keys they used. `approve` refuses to
sign for them and `run --plan` refuses their signatures, whatever front made the plan.

The plan file itself (its form, its id, where its signatures lie) is
batchpay.controls.plan_file.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

from batchpay import clock, sshsig
from batchpay.controls.plan_checks import (
    PlanRefused,
    actors_of,
    check_times,
    currency_figures,
    unstated_findings,
)
from batchpay.controls.plan_file import (
    MAKER_NAMESPACE,
    NAMESPACE,
    Approval,
    CheckedPlan,
    Maker,
    maker_signature_path,
    next_signature_path,
    read_plan,
    signature_paths,
)
from batchpay.journal.store import journal_holds_event
from batchpay.money import shown_amount
from batchpay.settings.model import Settings
from batchpay.statuses import Status

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey



# --------------------------------------------------------------------------- who is who


def console_approvers(local_folder: Path) -> Path:
    """The web console's own approvers file (its users' keys, written by the console in the
    journal's folder on this host, `Settings.local_folder`, in `console/`): the approvers
    file of a journal that sets none."""
    return Path(local_folder).absolute() / "console" / "approvers"


def approvers_path(settings: Settings) -> Path | None:
    """The approvers file: the setting, else the console's own where the console keeps one
    (a plan the console made and approved is paid by `batchpay run --plan` as it is)."""
    if settings.approvers_file is not None:
        return Path(settings.approvers_file)
    found = console_approvers(settings.local_folder)
    return found if found.is_file() else None


def signers_of(settings: Settings) -> list[sshsig.Signer]:
    path = approvers_path(settings)
    if path is None:
        raise PlanRefused("No approvers file is set: set approvers_file to the allowed_signers "
                          "file that lists who may make and approve plans.")
    try:
        return sshsig.allowed_signers(path)
    except OSError as exc:
        raise PlanRefused(f"Cannot read the approvers file {path}: "
                          f"{exc.strerror or exc}.") from exc
    except sshsig.SignatureError as exc:
        raise PlanRefused(f"The approvers file is not usable: {exc}.") from exc


def _listed(signers: list[sshsig.Signer], key: Any, namespace: str, now: datetime,
            whose: str) -> list[str]:
    """The principals `key` may sign as in `namespace` now; PlanRefused naming why not."""
    names, refusals = sshsig.principals_of(signers, key, namespace, now)
    if not names:
        why = "; ".join(refusals) if refusals else "the approvers file does not list it"
        raise PlanRefused(f"{whose} key {sshsig.fingerprint(key)} cannot sign in {namespace}: "
                          f"{why}.")
    return names


def maker_of(settings: Settings, key: Ed25519PrivateKey,
             now: datetime | None = None) -> Maker:
    """`batchpay plan`: the maker's key must be one the approvers file lists for making plans."""
    names = _listed(signers_of(settings), key.public_key(), MAKER_NAMESPACE,
                    now or clock.now(), "Your")
    return Maker(key, sshsig.fingerprint(key.public_key()), names)


def _verified(path: Path, data: bytes, namespace: str) -> Any:
    try:
        return sshsig.verify(path.read_text(encoding="utf-8", errors="replace"), data,
                             namespace)
    except OSError as exc:
        raise PlanRefused(f"Cannot read {path.name}: {exc.strerror or exc}.") from exc
    except sshsig.SignatureError as exc:
        raise PlanRefused(f"{path.name} is not a valid signature of this plan: {exc}.") \
            from exc


def _check_maker(plan: CheckedPlan, signers: list[sshsig.Signer], now: datetime) -> None:
    """The plan's maker signature: by the key the plan names, listed for making plans."""
    path = maker_signature_path(plan.path)
    if not path.is_file():
        raise PlanRefused(f"The plan has no maker's signature ({path.name}): a plan is signed "
                          "by the key of the person who made it; make it again with "
                          "`batchpay plan`.")
    key = _verified(path, plan.data, MAKER_NAMESPACE)
    if sshsig.fingerprint(key) != plan.document["maker"]["key"]:
        raise PlanRefused(f"{path.name} is signed by {sshsig.fingerprint(key)}, not by the "
                          f"maker's key the plan names ({plan.document['maker']['key']}).")
    plan.maker = _listed(signers, key, MAKER_NAMESPACE, now, "The maker's")


def _approvals(plan: CheckedPlan, signers: list[sshsig.Signer], now: datetime
               ) -> tuple[list[Approval], list[str]]:
    """The approvals that count (one per principal, none by the maker's principals), and
    what was left out and why."""
    maker_key = plan.document["maker"]["key"]
    counted: list[Approval] = []
    left_out: list[str] = []
    for path in signature_paths(plan.path):
        key = _verified(path, plan.data, NAMESPACE)
        print_ = sshsig.fingerprint(key)
        names = _listed(signers, key, NAMESPACE, now, f"{path.name}: the")
        shared = set(names) & set(plan.maker)
        if print_ == maker_key or shared:
            raise PlanRefused(f"{path.name} is the maker's own signature "
                              f"({', '.join(sorted(shared) or names)}): a plan is approved "
                              "by someone else.")
        acted = acted_on(plan, names)
        if acted:
            raise PlanRefused(f"{path.name} is signed by {acted}: whoever changed what a plan "
                              "pays is one of its makers, and a plan is approved by someone "
                              "who neither made nor changed it.")
        same = next((a for a in counted if set(a.principals) & set(names)), None)
        if same is not None:
            left_out.append(f"{path.name} ({', '.join(names)}, {print_}) counts once with "
                            f"{same.path.name}: the same principal")
            continue
        counted.append(Approval(names, print_, path))
    return counted, left_out


def acted_on(plan: CheckedPlan, principals: list[str]) -> str:
    """How any of `principals` changed what the plan pays, said for a person ("mia, who
    released R-B"); "" when none did."""
    actors = actors_of(plan.document)
    return "; ".join(f"{name}, who {', '.join(actors[name])}" for name in principals
                     if name in actors)


def require_release(plan: CheckedPlan | None, settings: Settings, *, kind: str,
                    dry_run: bool) -> None:
    """The gate every run passes before reading its input: with `require_approval`, only an
    approved plan is paid (a dry run pays nothing and passes); a plan, always checked."""
    if plan is not None:
        check_release(plan, settings)
    elif settings.require_approval and not dry_run:
        raise PlanRefused(f"Approval is required (require_approval = true): `batchpay {kind}` "
                          "pays only an approved plan.",
                          hint=f"Make one with `batchpay plan {'RESULTS.xlsx' if kind == 'rerun' else 'SHEET'}`"
                          ", have it approved with `batchpay approve`, then `batchpay run "
                          "--plan NAME.plan.json`.")


def check_release(plan: CheckedPlan, settings: Settings, *, now: datetime | None = None) -> None:
    """Everything `run --plan` requires before a single request: PlanRefused otherwise."""
    document = plan.document
    now = now or clock.now()
    check_times(document, settings.plan_hours, now, settings.time_zone)
    service = document["service"]
    if service["base_url"] != (settings.base_url or "embedded") or (
            service["key_fingerprint"] != settings.key_fingerprint):
        raise PlanRefused(f"The plan was made for the service {service['base_url']} (key "
                          f"{service['key_fingerprint']}), not this one.")
    if document["journal"]["path"] != settings.journal_name:
        raise PlanRefused(f"The plan was made against the journal {document['journal']['path']}"
                          f", not {settings.journal_name}.")
    if not journal_holds_event(settings.journal, document["journal"]["chain_head"]):
        raise PlanRefused("The journal is not the one the plan was made against: the plan's "
                          "chain head is none of its events (another, older or new journal).",
                          hint="Run the plan with the journal it was made with, or make and "
                          "approve a new plan.")
    signers = signers_of(settings)
    _check_maker(plan, signers, now)
    plan.approvals, left_out = _approvals(plan, signers, now)
    needed = settings.approvals_required
    if len(plan.approvals) < needed:
        raise PlanRefused(f"The plan has {len(plan.approvals)} approval(s) by principals other "
                          f"than its maker; {needed} are required"
                          + (f" ({'; '.join(left_out)})" if left_out else "") + ".",
                          hint=f"An approver runs `batchpay approve {plan.path.name}`.")
    _check_payees(plan, settings, settings.journal)


def _check_payees(plan: CheckedPlan, settings: Settings, journal_path: Path | str) -> bool:
    """The payee register's findings for the rows still to pay, recomputed: PlanRefused when
    the plan does not state one of them. False when the journal is not there to ask."""
    from batchpay.journal.store import Journal

    if not settings.journal_exists():
        return False
    with Journal(journal_path) as journal:
        missing = unstated_findings(plan.document, plan.validation, journal,
                                    settings.hold_new_payees, settings.payee_change_hold_hours)
    if missing:
        raise PlanRefused("The payee register finds what the plan does not state: "
                          + "; ".join(missing[:5]) + (" ..." if len(missing) > 5 else "")
                          + ". Make and approve a new plan.")
    return True


# --------------------------------------------------------------------------- approving


def review(path: Path, settings: Settings, now: datetime | None = None) -> CheckedPlan:
    """`batchpay approve`, before the short code is typed: the plan's figures recomputed, its
    maker's signature checked, its payee findings recomputed where the journal is here."""
    plan = read_plan(path)
    now = now or clock.now()
    check_times(plan.document, settings.plan_hours, now, settings.time_zone)
    _check_maker(plan, signers_of(settings), now)
    journal = plan.document["journal"]["path"]
    if not (journal == settings.journal_name and _check_payees(
            plan, settings, settings.journal)):
        plan.notes.append(f"The payee findings are the maker's: the plan's journal ({journal}) "
                          "is not here to recompute them (`run --plan` does).")
    return plan


@dataclass
class Approved:
    """What `approve` did: the signature written, or the one that was already there."""

    path: Path
    fingerprint: str
    principals: list[str]
    already: bool = False


def approve(plan: CheckedPlan, key: Ed25519PrivateKey, settings: Settings,
            now: datetime | None = None) -> Approved:
    """Sign the plan's bytes, once per principal; refuses the maker's principals."""
    now = now or clock.now()
    signers = signers_of(settings)
    public = key.public_key()
    print_ = sshsig.fingerprint(public)
    names = _listed(signers, public, NAMESPACE, now, "Your")
    if print_ == plan.document["maker"]["key"] or set(names) & set(plan.maker):
        raise PlanRefused(f"The plan was made by {', '.join(plan.maker)}: the maker cannot "
                          "approve it, with this key or another.")
    acted = acted_on(plan, names)
    if acted:
        raise PlanRefused(f"This key stands for {acted}: whoever changed what a plan pays is one of "
                          "its makers and cannot approve it, with this key or another.")
    for path in signature_paths(plan.path):
        with_key = _verified(path, plan.data, NAMESPACE)
        theirs, _ = sshsig.principals_of(signers, with_key, NAMESPACE, now)
        if sshsig.fingerprint(with_key) == print_ or set(theirs) & set(names):
            return Approved(path, sshsig.fingerprint(with_key), theirs, already=True)
    path = next_signature_path(plan.path)
    path.write_text(sshsig.sign(key, plan.data, NAMESPACE), encoding="utf-8")
    return Approved(path, print_, names)


class SignatureRefused(PlanRefused):
    """An uploaded signature that would not release the plan: never kept beside it."""


def add_signature(plan_path: Path, armored: str, approver: str, settings: Settings) -> str:
    """An SSHSIG signature of the plan an approver made with their own key elsewhere
    (`ssh-keygen -Y sign -n batchpay-plan-v1`, or `batchpay approve`), kept beside the plan
    once it verifies with a key the approvers file lists for approving under the approver's
    own name. A signature that would not release the plan is refused, never kept: it would
    block the plan's payment. Returns the key's fingerprint."""
    checked = review(plan_path, settings)
    try:
        key = sshsig.verify(armored, checked.data, NAMESPACE)
    except sshsig.SignatureError as exc:
        raise SignatureRefused(f"This is not a signature of this batch's plan: {exc}.") from exc
    print_ = sshsig.fingerprint(key)
    names, refusals = sshsig.principals_of(signers_of(settings), key, NAMESPACE,
                                           clock.now())
    if print_ == checked.document["maker"]["key"] or set(names) & set(checked.maker):
        raise SignatureRefused("This is the maker's own key: a batch is approved by someone "
                               "else.")
    if approver not in names:
        why = f" ({'; '.join(refusals)})" if refusals else ""
        raise SignatureRefused(f"The key {print_} is not listed for {approver} in the "
                               f"approvers file {settings.approvers_file} for approving "
                               f"plans{why}: only a signature by your own listed key approves.")
    next_signature_path(plan_path).write_text(armored, encoding="utf-8")
    return print_


def summary_lines(plan: CheckedPlan, largest: int = 5, zone_name: str = clock.FALLBACK_ZONE
                  ) -> list[str]:
    """What an approver reads before signing: totals and the largest rows, all recomputed
    from the rows (`read_plan` refused any stated figure that differs); its times in
    `zone_name` (the `time_zone` setting)."""
    document = plan.document
    maker = document["maker"]
    lines = [f"Plan of {document['sheet']['name']} (SHA-256 {document['sheet']['sha256'][:16]}…)"
             f" by {', '.join(plan.maker or maker['principals'])} (key {maker['key']}, "
             f"{maker['user']}@{maker['host']}), made "
             f"{clock.show(document['created_at'], zone_name, seconds=True)}, expires "
             f"{clock.show(document['expires_at'], zone_name, seconds=True)}; service {document['service']['base_url']}; dry run "
             f"{document['dry_run']}"]
    figures = currency_figures(document["rows"], Decimal(document["tolerance"]))
    tolerance = format((Decimal(document["tolerance"]) * 100).normalize(), "f")
    for currency, total in figures.items():
        lines.append(f"  {currency}: {total['NbOfTxs']} row(s), amounts "
                     f"{shown_amount(Decimal(total['CtrlSum']), currency)}, quoted debit "
                     f"{shown_amount(Decimal(total['quoted_debit']), currency)}, ceiling "
                     f"{shown_amount(Decimal(total['ceiling']), currency)} (+{tolerance} %)")
    controls = document.get("controls")
    if controls:
        lines.append(f"  holds: a repeat of a payment made within {controls['repeat_window_days']}"
                     f" day(s) (0: not checked); the service's payout list read back "
                     f"{controls['service_check_days']} day(s) (0: not read); new payees "
                     f"held: {'yes' if controls['hold_new_payees'] else 'no'}")
    changes = document.get("payee_changes", [])
    if changes:
        lines.append(f"  payees new, changed or held ({len(changes)}):")
    maker_user = document["maker"]["user"]
    for c in changes[:largest * 4]:
        changed = "; ".join(f"{n} {b} → {a}" for n, b, a in c.get("fields") or [])
        by = c.get("confirmed_by") or ""
        alone = " (by the maker alone)" if by.startswith(f"confirmed by {maker_user} ") else ""
        lines.append(f"    row {c['row']} {c['payee']}: {c['reason']}"
                     + (f", {changed}" if changed else "") + (f", {by}{alone}" if by else "")
                     + (" - HELD, not in this plan" if c["decision"] == Status.HELD else ""))
    held = document.get("held", [])
    if held:
        lines.append(f"  rows held out of this plan ({len(held)}):")
    for h in held[:largest * 4]:
        lines.append(f"    row {h['row']}: {h['why']}")
    for ref, earlier in document.get("released_repeats", {}).items():
        lines.append(f"  released by the maker: {ref} repeats {', '.join(earlier)} "
                     "(same account and amount) and is paid anyway")
    actors = actors_of(document)
    lines.append("  changed what it pays (none of them may approve it): " + "; ".join(
        f"{name} {', '.join(did)}" for name, did in actors.items()))
    rows = sorted(document["rows"], key=lambda r: Decimal(r["total_debit"]), reverse=True)
    if rows:
        lines.append("  largest rows:")
    for r in rows[:largest]:
        v = r["values"]
        lines.append(f"    row {r['row']} {r['payout_ref']}: {v.get('recipient_name', '')}, "
                     f"account {v.get('account_number', '')}, {v.get('bank_name', '')}: "
                     f"debit {shown_amount(Decimal(r['total_debit']), r['source_currency'])}")
    lines += [f"  {note}" for note in plan.notes]
    return lines
