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
principals its lines name. An approval counts only from a principal other than the maker's,
and two approvals are two different principals, whichever keys they used.

The plan id is the SHA-256 of the plan file's bytes; the file must be canonical JSON, so the
id and the signed bytes are one thing.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import platform
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

from batchpay import sshsig
from batchpay.config import Settings
from batchpay.engine.journal import journal_holds_event
from batchpay.engine.plan_checks import (
    PLAN_VERSION,
    PlanRefused,
    check_figures,
    check_shape,
    check_times,
    currency_figures,
    unstated_findings,
)
from batchpay.engine.records import operator
from batchpay.engine.repeats import control_settings
from batchpay.sheet.read import Sheet, SheetRow
from batchpay.statuses import Status

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from batchpay.engine.journal import Journal
    from batchpay.sheet.outcomes import ResultRow
    from batchpay.sheet.validate import Validation

__all__ = ["NAMESPACE", "MAKER_NAMESPACE", "PLAN_VERSION", "PlanRefused"]

NAMESPACE = "batchpay-plan-v1"  # an approver's signature
MAKER_NAMESPACE = "batchpay-plan-maker-v1"  # the maker's: never taken for an approval

# the short code: Crockford's base32 (no I, L, O or U), 20 characters = 100 bits of the plan
# id, read out in groups of four. A second plan with the same code takes about 2^100 tries,
# or 2^50 for a maker making pairs of plans: out of reach either way.
ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
CODE_LENGTH = 20
LOOK_ALIKES = str.maketrans({"O": "0", "I": "1", "L": "1"})


def canonical_bytes(document: dict[str, Any]) -> bytes:
    return (json.dumps(document, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
            + "\n").encode()


def plan_id(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def short_code(identifier: str) -> str:
    """100 bits of the plan id for reading out on a phone: `7KQ2-M9XD-4G1B-PW0E-RTA5`."""
    number = int(identifier[:26], 16) >> 4  # 104 bits, the first 100 kept
    text = "".join(ALPHABET[(number >> (5 * i)) & 31] for i in reversed(range(CODE_LENGTH)))
    return "-".join(text[i:i + 4] for i in range(0, CODE_LENGTH, 4))


def same_code(typed: str, identifier: str) -> bool:
    """Whether `typed` is the plan's short code: case, spaces and hyphens do not matter, and
    O, I and L are read as 0, 1 and 1 (Crockford's base32 has no O, I or L)."""
    cleaned = re.sub(r"[\s-]", "", typed).upper().translate(LOOK_ALIKES)
    return cleaned == short_code(identifier).replace("-", "")


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, float):
        return repr(value) if not value.is_integer() else str(int(value))
    if isinstance(value, Decimal):
        return format(value, "f")
    return str(value)


@dataclass
class PlanRow:
    row: int
    payout_ref: str
    values: dict[str, str]  # every input value of the row, as text (amounts exact)
    source_currency: str
    amount: str  # the source amount quoted (an invoice row's as calibrated)
    total_debit: str  # the dry run's quote: amount + fee


@dataclass(frozen=True)
class Maker:
    """The maker's key, as the approvers file names it."""

    key: Ed25519PrivateKey
    fingerprint: str
    principals: list[str]
    # who makes the plan, as the plan's maker.user records it (payee_confirmed_by_other
    # compares it with who confirmed a payee): the OS user, or a console's signed-in user
    user: str = ""


def build_plan(settings: Settings, sheet: Sheet, rows: Iterable[PlanRow], *, run_id: str,
               chain_head: str, maker: Maker, hours: float, tolerance: Decimal,
               source_currency: str | None,
               payee_changes: Iterable[dict[str, Any]] = (), results_workbook: bool = False,
               held: Iterable[ResultRow] = (),
               released: dict[str, list[str]] | None = None) -> dict[str, Any]:
    """The plan document (made canonical by `canonical_bytes`). `results_workbook`: the
    input is one, paid as `rerun` would (a FAILED row goes again); `held`: the rows the
    checks held out of the plan; `released`: the repeats the maker released (payout_ref →
    the earlier payout_refs)."""
    now = datetime.now(UTC).replace(microsecond=0)
    planned = [{"row": r.row, "payout_ref": r.payout_ref, "source_currency": r.source_currency,
                "values": r.values, "amount": r.amount, "total_debit": r.total_debit}
               for r in rows]
    refs = {r["payout_ref"] for r in planned}
    return {
        "version": PLAN_VERSION, "created_at": now.isoformat().replace("+00:00", "Z"),
        "expires_at": (now + timedelta(seconds=max(1, math.ceil(hours * 3600)))
                       ).isoformat().replace("+00:00", "Z"),
        "maker": {"user": maker.user or operator(), "host": platform.node(), "key": maker.fingerprint,
                  "principals": maker.principals},
        "service": {"base_url": settings.base_url or "embedded",
                    "key_fingerprint": settings.key_fingerprint},
        "journal": {"path": str(Path(settings.journal).absolute()), "chain_head": chain_head},
        "dry_run": run_id, "tolerance": format(tolerance, "f"),
        "source_currency": source_currency or "",
        "sheet": {"name": sheet.path.name, "sha256": sheet.sha256, "columns": sheet.columns},
        "rows": planned,
        "currencies": currency_figures(planned, tolerance),
        # what the payee register found (new, changed and held payees; accounts masked)
        "payee_changes": [{k: v for k, v in c.items() if k != "details"}
                          for c in payee_changes],
        # what the maker decided, for the approver: the settings of the checks that hold
        # rows, the rows held out and why, the repeats released
        "controls": control_settings(settings),
        "input": "results workbook" if results_workbook else "sheet",
        "held": [{"row": r.row, "why": r.error} for r in held],
        "released_repeats": {ref: earlier for ref, earlier in sorted((released or {}).items())
                             if ref in refs},
    }


def plan_rows_of(sheet: Sheet, journal_rows: Iterable[ResultRow]) -> list[PlanRow]:
    """The dry run's rows that would be sent (quoted, not sent), with their input values."""
    by_row = {r.row: r for r in sheet.rows}
    found = []
    for rr in journal_rows:
        if rr.status != Status.NOT_SENT or rr.total_debit is None:
            continue
        values = {c: t for c, v in zip(sheet.columns, by_row[rr.row].values, strict=True)
                  if (t := _text(v)) is not None}
        found.append(PlanRow(rr.row, values.get("payout_ref", ""), values, rr.source_currency,
                             format(rr.amount, "f"), format(rr.total_debit, "f")))
    return found


# --------------------------------------------------------------------------- reading


def plan_sheet(document: dict[str, Any], path: Path | None, sha256: str = "") -> Sheet:
    """The rows to pay, rebuilt from a plan: the sheet is never read again."""
    columns = list(document["sheet"]["columns"])
    rows = [SheetRow(r["row"], [_value(c, r["values"].get(c)) for c in columns])
            for r in document["rows"]]
    return Sheet(path=path or Path(document["sheet"]["name"]), sheet_name="plan",
                 columns=columns, headers=columns, rows=rows, sha256=sha256)


@dataclass
class Approval:
    principals: list[str]
    fingerprint: str
    path: Path

    @property
    def principal(self) -> str:
        return ", ".join(self.principals)


@dataclass
class CheckedPlan:
    """A plan whose shape and figures hold (`read_plan`); `check_release` adds who made and
    who approved it."""

    path: Path
    data: bytes
    document: dict[str, Any]
    id: str
    validation: Validation
    maker: list[str] = field(default_factory=list)  # the maker's principals, once checked
    approvals: list[Approval] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def short(self) -> str:
        return short_code(self.id)

    def run_terms(self) -> dict[str, Any]:
        """What `run --plan` takes from the plan besides its rows: a results workbook's plan
        is paid as `rerun` reads it (a FAILED or REFUNDED row goes again), in the plan's
        source currency, with the repeats its maker released (the approver signed them)."""
        document = self.document
        return {"kind": "rerun" if document.get("input") == "results workbook" else "run",
                "source_currency": document["source_currency"] or None,
                "allow_repeat": frozenset(document.get("released_repeats", {}))}

    def ceilings(self, journal: Journal | None = None) -> dict[str, Decimal]:
        """What each currency's ceiling leaves: the plan's ceiling less what earlier runs of
        this same plan debited (a plan's ceiling is spent once, not once per run)."""
        spent = journal.plan_debits(self.id) if journal is not None else {}
        return {c: Decimal(t["ceiling"]) - spent.get(c, Decimal(0))
                for c, t in self.document["currencies"].items()}

    def sheet(self) -> Sheet:
        return plan_sheet(self.document, self.path, self.id)

    def run_info(self) -> dict[str, Any]:
        maker = self.document["maker"]
        return {"plan_id": self.id,
                "plan_maker": f"{', '.join(self.maker or maker['principals'])} "
                              f"({maker['key']}), {maker['user']}@{maker['host']}",
                "plan_approvers": ", ".join(f"{a.principal} ({a.fingerprint})"
                                            for a in self.approvals)}


def _value(column: str, text: str | None) -> Any:
    if text is None:
        return None
    if column in ("amount", "target_amount"):
        return Decimal(text)
    return text


def read_plan(path: Path) -> CheckedPlan:
    """A plan file, whose bytes must be its canonical JSON (else its id would not be them),
    whose every field is of its form and whose stated figures are its rows'."""
    try:
        data = path.read_bytes()
        document = json.loads(data)
    except OSError as exc:
        raise PlanRefused(f"Cannot read the plan {path}: {exc.strerror or exc}.") from exc
    except ValueError as exc:
        raise PlanRefused(f"{path} is not a plan: {exc}.") from exc
    if not isinstance(document, dict) or document.get("version") != PLAN_VERSION:
        raise PlanRefused(f"{path} is not a batchpay plan of version {PLAN_VERSION}.",
                          hint="A plan made by an earlier batchpay is made again with "
                          "`batchpay plan SHEET`.")
    if canonical_bytes(document) != data:
        raise PlanRefused(f"{path} was changed after it was made (it is no longer the plan's "
                          "canonical JSON): make and approve a new plan.")
    check_shape(document)
    return CheckedPlan(path, data, document, plan_id(data), check_figures(document))


def maker_signature_path(plan: Path) -> Path:
    return plan.with_name(plan.name + ".maker.sig")


def signature_paths(plan: Path) -> list[Path]:
    """PLAN.sig, PLAN.2.sig, ...: found by name, never by a pattern (a plan's own name may
    hold [ * ? or any other character)."""
    try:
        names = os.listdir(plan.parent)
    except OSError:
        return []
    prefix = plan.name + "."
    found = [plan.with_name(n) for n in names
             if n.startswith(prefix) and re.fullmatch(r"(?:[2-9]|[1-9]\d+)\.sig|sig",
                                                      n[len(prefix):])]
    return sorted(p for p in found if p.is_file())


def next_signature_path(plan: Path) -> Path:
    first = plan.with_name(plan.name + ".sig")
    if not first.exists():
        return first
    n = 2
    while plan.with_name(f"{plan.name}.{n}.sig").exists():
        n += 1
    return plan.with_name(f"{plan.name}.{n}.sig")


def sign_as_maker(plan: Path, data: bytes, maker: Maker) -> Path:
    path = maker_signature_path(plan)
    path.write_text(sshsig.sign(maker.key, data, MAKER_NAMESPACE), encoding="utf-8")
    return path


# --------------------------------------------------------------------------- who is who


def signers_of(settings: Settings) -> list[sshsig.Signer]:
    if settings.approvers_file is None:
        raise PlanRefused("No approvers file is set: set approvers_file to the allowed_signers "
                          "file that lists who may make and approve plans.")
    try:
        return sshsig.allowed_signers(Path(settings.approvers_file))
    except OSError as exc:
        raise PlanRefused(f"Cannot read the approvers file {settings.approvers_file}: "
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
                    now or datetime.now(UTC), "Your")
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
        same = next((a for a in counted if set(a.principals) & set(names)), None)
        if same is not None:
            left_out.append(f"{path.name} ({', '.join(names)}, {print_}) counts once with "
                            f"{same.path.name}: the same principal")
            continue
        counted.append(Approval(names, print_, path))
    return counted, left_out


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
    now = now or datetime.now(UTC)
    check_times(document, settings.plan_hours, now)
    service = document["service"]
    if service["base_url"] != (settings.base_url or "embedded") or (
            service["key_fingerprint"] != settings.key_fingerprint):
        raise PlanRefused(f"The plan was made for the service {service['base_url']} (key "
                          f"{service['key_fingerprint']}), not this one.")
    if document["journal"]["path"] != str(Path(settings.journal).absolute()):
        raise PlanRefused(f"The plan was made against the journal {document['journal']['path']}"
                          f", not {Path(settings.journal).absolute()}.")
    if not journal_holds_event(Path(settings.journal), document["journal"]["chain_head"]):
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
    _check_payees(plan, settings, Path(settings.journal))


def _check_payees(plan: CheckedPlan, settings: Settings, journal_path: Path) -> bool:
    """The payee register's findings for the rows still to pay, recomputed: PlanRefused when
    the plan does not state one of them. False when the journal is not there to ask."""
    from batchpay.engine.journal import Journal

    if not journal_path.is_file():
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
    now = now or datetime.now(UTC)
    check_times(plan.document, settings.plan_hours, now)
    _check_maker(plan, signers_of(settings), now)
    journal = Path(plan.document["journal"]["path"])
    if not (journal == Path(settings.journal).absolute() and _check_payees(
            plan, settings, journal)):
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
    now = now or datetime.now(UTC)
    signers = signers_of(settings)
    public = key.public_key()
    print_ = sshsig.fingerprint(public)
    names = _listed(signers, public, NAMESPACE, now, "Your")
    if print_ == plan.document["maker"]["key"] or set(names) & set(plan.maker):
        raise PlanRefused(f"The plan was made by {', '.join(plan.maker)}: the maker cannot "
                          "approve it, with this key or another.")
    for path in signature_paths(plan.path):
        with_key = _verified(path, plan.data, NAMESPACE)
        theirs, _ = sshsig.principals_of(signers, with_key, NAMESPACE, now)
        if sshsig.fingerprint(with_key) == print_ or set(theirs) & set(names):
            return Approved(path, sshsig.fingerprint(with_key), theirs, already=True)
    path = next_signature_path(plan.path)
    path.write_text(sshsig.sign(key, plan.data, NAMESPACE), encoding="utf-8")
    return Approved(path, print_, names)


def summary_lines(plan: CheckedPlan, largest: int = 5) -> list[str]:
    """What an approver reads before signing: totals and the largest rows, all recomputed
    from the rows (`read_plan` refused any stated figure that differs)."""
    document = plan.document
    maker = document["maker"]
    lines = [f"Plan of {document['sheet']['name']} (SHA-256 {document['sheet']['sha256'][:16]}…)"
             f" by {', '.join(plan.maker or maker['principals'])} (key {maker['key']}, "
             f"{maker['user']}@{maker['host']}), made {document['created_at']}, expires "
             f"{document['expires_at']}; service {document['service']['base_url']}; dry run "
             f"{document['dry_run']}"]
    figures = currency_figures(document["rows"], Decimal(document["tolerance"]))
    tolerance = format((Decimal(document["tolerance"]) * 100).normalize(), "f")
    for currency, total in figures.items():
        lines.append(f"  {currency}: {total['NbOfTxs']} row(s), amounts "
                     f"{Decimal(total['CtrlSum']):,}, quoted debit "
                     f"{Decimal(total['quoted_debit']):,}, ceiling "
                     f"{Decimal(total['ceiling']):,} (+{tolerance} %)")
    controls = document.get("controls")
    if controls:
        lines.append(f"  holds: a repeat of a payment made within {controls['repeat_window_days']}"
                     f" day(s) (0: not checked); the service's payout list read back "
                     f"{controls['service_check_days']} day(s) (0: not read); new payees "
                     f"held: {'yes' if controls['hold_new_payees'] else 'no'}")
    changes = document.get("payee_changes", [])
    if changes:
        lines.append(f"  payees new, changed or held ({len(changes)}):")
    maker = document["maker"]["user"]
    for c in changes[:largest * 4]:
        changed = "; ".join(f"{n} {b} → {a}" for n, b, a in c.get("fields") or [])
        by = c.get("confirmed_by") or ""
        alone = " (by the maker alone)" if by.startswith(f"confirmed by {maker} ") else ""
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
    rows = sorted(document["rows"], key=lambda r: Decimal(r["total_debit"]), reverse=True)
    if rows:
        lines.append("  largest rows:")
    for r in rows[:largest]:
        v = r["values"]
        lines.append(f"    row {r['row']} {r['payout_ref']}: {v.get('recipient_name', '')}, "
                     f"account {v.get('account_number', '')}, {v.get('bank_name', '')}: "
                     f"debit {Decimal(r['total_debit']):,} {r['source_currency']}")
    lines += [f"  {note}" for note in plan.notes]
    return lines
