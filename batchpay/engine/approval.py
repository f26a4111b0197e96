"""Two-person approval: a run pays only a plan that a second, named person signed.

    batchpay plan SHEET          the maker: a dry run, written as NAME.plan.json (canonical
                                 JSON: every row that would be sent, with every input value)
                                 and NAME.plan.xlsx (the dry run's workbook, for a person)
    batchpay approve PLAN        a checker: reads the totals, types the short code, signs the
                                 file's bytes (OpenSSH SSHSIG, namespace batchpay-plan-v1)
    batchpay run --plan PLAN     pays exactly the plan's rows, rebuilt from the plan (the sheet
                                 is never read again), once the signatures, approvers, maker,
                                 expiry, service and journal all check out; the total debit
                                 per currency never passes the plan's ceiling

The plan id is the SHA-256 of the plan file's bytes; the file must be canonical JSON, so the
id and the signed bytes are one thing.
"""

from __future__ import annotations

import base64
import hashlib
import json
import platform
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

from batchpay import sshsig
from batchpay.config import Settings
from batchpay.engine.records import operator
from batchpay.errors import UsageError
from batchpay.sheet.read import Sheet, SheetRow
from batchpay.statuses import Status

if TYPE_CHECKING:
    from batchpay.sheet.outcomes import ResultRow

PLAN_VERSION = 1
NAMESPACE = "batchpay-plan-v1"


class PlanRefused(UsageError):
    """A plan that must not be paid (exit 2, nothing sent)."""


def canonical_bytes(document: dict[str, Any]) -> bytes:
    return (json.dumps(document, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
            + "\n").encode()


def plan_id(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def short_code(identifier: str) -> str:
    """Eight characters of the plan id for reading out on a phone: `7KQ2-M9XD`."""
    text = base64.b32encode(bytes.fromhex(identifier)[:5]).decode()
    return f"{text[:4]}-{text[4:8]}"


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


def build_plan(settings: Settings, sheet: Sheet, rows: Iterable[PlanRow], *, run_id: str,
               chain_head: str, maker_key: str, hours: float, tolerance: Decimal,
               source_currency: str | None,
               payee_changes: Iterable[dict[str, Any]] = ()) -> dict[str, Any]:
    """The plan document (made canonical by `canonical_bytes`)."""
    now = datetime.now(UTC).replace(microsecond=0)
    rows = list(rows)
    totals: dict[str, dict[str, Any]] = {}
    for r in rows:
        total = totals.setdefault(r.source_currency, {"NbOfTxs": 0, "CtrlSum": Decimal(0),
                                                      "debit": Decimal(0)})
        total["NbOfTxs"] += 1
        total["CtrlSum"] += Decimal(r.amount)
        total["debit"] += Decimal(r.total_debit)
    currencies = {c: {"NbOfTxs": t["NbOfTxs"], "CtrlSum": format(t["CtrlSum"], "f"),
                      "quoted_debit": format(t["debit"], "f"),
                      "ceiling": format((t["debit"] * (1 + tolerance)).quantize(Decimal("0.01")),
                                        "f")}
                  for c, t in sorted(totals.items())}
    return {
        "version": PLAN_VERSION, "created_at": now.isoformat().replace("+00:00", "Z"),
        "expires_at": (now + timedelta(hours=hours)).isoformat().replace("+00:00", "Z"),
        "maker": {"user": operator(), "host": platform.node(), "key": maker_key},
        "service": {"base_url": settings.base_url or "embedded",
                    "key_fingerprint": settings.key_fingerprint},
        "journal": {"path": str(Path(settings.journal).absolute()), "chain_head": chain_head},
        "dry_run": run_id, "tolerance": format(tolerance, "f"),
        "source_currency": source_currency or "",
        "sheet": {"name": sheet.path.name, "sha256": sheet.sha256, "columns": sheet.columns},
        "rows": [{"row": r.row, "payout_ref": r.payout_ref, "values": r.values,
                  "amount": r.amount, "total_debit": r.total_debit} for r in rows],
        "currencies": currencies,
        # what the payee register found (new, changed and held payees; accounts masked)
        "payee_changes": [{k: v for k, v in c.items() if k != "details"}
                          for c in payee_changes],
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


@dataclass
class Approval:
    principal: str
    fingerprint: str
    path: Path


@dataclass
class CheckedPlan:
    path: Path
    data: bytes
    document: dict[str, Any]
    id: str
    approvals: list[Approval] = field(default_factory=list)

    @property
    def short(self) -> str:
        return short_code(self.id)

    def ceilings(self) -> dict[str, Decimal]:
        return {c: Decimal(t["ceiling"]) for c, t in self.document["currencies"].items()}

    def sheet(self) -> Sheet:
        """The rows to pay, rebuilt from the plan: the sheet is never read again."""
        columns = list(self.document["sheet"]["columns"])
        rows = [SheetRow(r["row"], [_value(c, r["values"].get(c)) for c in columns])
                for r in self.document["rows"]]
        return Sheet(path=self.path, sheet_name="plan", columns=columns, headers=columns,
                     rows=rows, sha256=self.id)

    def run_info(self) -> dict[str, Any]:
        maker = self.document["maker"]
        return {"plan_id": self.id, "plan_maker": f"{maker['user']}@{maker['host']}"
                + (f" key {maker['key']}" if maker.get("key") else ""),
                "plan_approvers": ", ".join(f"{a.principal} ({a.fingerprint})"
                                            for a in self.approvals)}


def _value(column: str, text: str | None) -> Any:
    if text is None:
        return None
    if column in ("amount", "target_amount"):
        return Decimal(text)
    return text


def read_plan(path: Path) -> CheckedPlan:
    """A plan file, whose bytes must be its canonical JSON (else its id would not be them)."""
    try:
        data = path.read_bytes()
        document = json.loads(data)
    except OSError as exc:
        raise PlanRefused(f"Cannot read the plan {path}: {exc.strerror or exc}.") from exc
    except ValueError as exc:
        raise PlanRefused(f"{path} is not a plan: {exc}.") from exc
    if not isinstance(document, dict) or document.get("version") != PLAN_VERSION:
        raise PlanRefused(f"{path} is not a batchpay plan of version {PLAN_VERSION}.")
    if canonical_bytes(document) != data:
        raise PlanRefused(f"{path} was changed after it was made (it is no longer the plan's "
                          "canonical JSON): make and approve a new plan.")
    return CheckedPlan(path, data, document, plan_id(data))


def signature_paths(plan: Path) -> list[Path]:
    return sorted(p for p in plan.parent.glob(plan.name + "*.sig") if p.is_file())


def next_signature_path(plan: Path) -> Path:
    first = plan.with_name(plan.name + ".sig")
    if not first.exists():
        return first
    n = 2
    while plan.with_name(f"{plan.name}.{n}.sig").exists():
        n += 1
    return plan.with_name(f"{plan.name}.{n}.sig")


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
    expires = datetime.fromisoformat(document["expires_at"].replace("Z", "+00:00"))
    if now >= expires:
        raise PlanRefused(f"The plan expired at {document['expires_at']}: make and approve a "
                          "new one.")
    service = document["service"]
    if service["base_url"] != (settings.base_url or "embedded") or (
            service["key_fingerprint"] != settings.key_fingerprint):
        raise PlanRefused(f"The plan was made for the service {service['base_url']} (key "
                          f"{service['key_fingerprint']}), not this one.")
    if document["journal"]["path"] != str(Path(settings.journal).absolute()):
        raise PlanRefused(f"The plan was made against the journal {document['journal']['path']}"
                          f", not {Path(settings.journal).absolute()}.")
    if settings.approvers_file is None:
        raise PlanRefused("No approvers file is set: set approvers_file to the allowed_signers "
                          "file that lists who may approve.")
    try:
        signers = sshsig.allowed_signers(Path(settings.approvers_file))
    except OSError as exc:
        raise PlanRefused(f"Cannot read the approvers file {settings.approvers_file}: "
                          f"{exc.strerror or exc}.") from exc
    except sshsig.SignatureError as exc:
        raise PlanRefused(f"The approvers file is not usable: {exc}.") from exc
    plan.approvals = _approvals(plan, signers)
    needed = settings.approvals_required
    if len(plan.approvals) < needed:
        raise PlanRefused(f"The plan has {len(plan.approvals)} approval(s) from the approvers "
                          f"file; {needed} are required.",
                          hint=f"An approver runs `batchpay approve {plan.path.name}`.")


def _approvals(plan: CheckedPlan, signers: list[sshsig.Signer]) -> list[Approval]:
    maker = plan.document["maker"]
    found: dict[str, Approval] = {}
    for path in signature_paths(plan.path):
        try:
            key = sshsig.verify(path.read_text(encoding="utf-8", errors="replace"), plan.data,
                                NAMESPACE)
        except sshsig.SignatureError as exc:
            raise PlanRefused(f"{path.name} is not a valid approval of this plan: {exc}.") \
                from exc
        print_ = sshsig.fingerprint(key)
        principals = [s.principal for s in signers if s.fingerprint == print_]
        if not principals:
            raise PlanRefused(f"{path.name} is signed by key {print_}, which the approvers file "
                              "does not list.")
        if print_ == maker.get("key") or maker["user"] in principals:
            raise PlanRefused(f"{path.name} is the maker's own signature ({principals[0]}): a "
                              "plan is approved by someone else.")
        found.setdefault(print_, Approval(principals[0], print_, path))
    return list(found.values())


def approve(plan: CheckedPlan, key: Any, *, approver: str) -> Path:
    """Sign the plan's bytes; refuses the maker (by OS user and by key)."""
    maker = plan.document["maker"]
    print_ = sshsig.fingerprint(key.public_key())
    if approver == maker["user"] or print_ == maker.get("key"):
        raise PlanRefused(f"The plan was made by {maker['user']}: the maker cannot approve it.")
    path = next_signature_path(plan.path)
    path.write_text(sshsig.sign(key, plan.data, NAMESPACE), encoding="utf-8")
    return path


def summary_lines(document: dict[str, Any], largest: int = 5) -> list[str]:
    """What an approver reads before signing: totals, the largest rows."""
    lines = [f"Plan of {document['sheet']['name']} by {document['maker']['user']}@"
             f"{document['maker']['host']}, made {document['created_at']}, expires "
             f"{document['expires_at']}; service {document['service']['base_url']}"]
    for currency, total in document["currencies"].items():
        lines.append(f"  {currency}: {total['NbOfTxs']} row(s), amounts {Decimal(total['CtrlSum']):,}"
                     f", quoted debit {Decimal(total['quoted_debit']):,}, ceiling "
                     f"{Decimal(total['ceiling']):,}")
    controls = document.get("controls")
    if controls:
        lines.append(f"  holds: a repeat of a payment made within {controls['repeat_window_days']}"
                     f" day(s) (0: not checked); new payees held: "
                     f"{'yes' if controls['hold_new_payees'] else 'no'}")
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
                     f"debit {Decimal(r['total_debit']):,} {v.get('source_currency', '')}")
    return lines
