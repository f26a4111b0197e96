"""The plan file: what `batchpay plan` writes and `approve` and `run --plan` read.

    NAME.plan.json            canonical JSON (sorted keys, no spaces, one newline): every row
                              that would be sent, with every input value, and the figures,
                              controls and findings the approver is shown
    NAME.plan.json.maker.sig  the maker's signature (OpenSSH SSHSIG, batchpay-plan-maker-v1)
    NAME.plan.json.sig, .2.sig, ...   the approvers' (batchpay-plan-v1)

The plan id is the SHA-256 of the file's bytes; the file must be canonical JSON, so the id
and the signed bytes are one thing. Its short code (100 bits of the id, Crockford's base32)
is what a person reads out and types. Who may sign is batchpay.controls.approval's business.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import platform
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypedDict

from batchpay import clock, sshsig
from batchpay.controls.payees import PayeeChange, PayeeChangeShown, without_details
from batchpay.controls.plan_checks import (
    PLAN_VERSION,
    PlanActor,
    PlanDocument,
    PlannedRow,
    PlanRefused,
    check_figures,
    check_shape,
    currency_figures,
    plan_sheet,
)
from batchpay.controls.repeats import control_settings
from batchpay.journal.reads import plan_debits
from batchpay.journal.records import operator
from batchpay.settings.model import Settings
from batchpay.sheet.read import Sheet
from batchpay.statuses import Status

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from batchpay.journal.store import Journal
    from batchpay.sheet.outcomes import ResultRow
    from batchpay.sheet.validate import Validation

NAMESPACE = "batchpay-plan-v1"  # an approver's signature
MAKER_NAMESPACE = "batchpay-plan-maker-v1"  # the maker's: never taken for an approval

# the short code: Crockford's base32 (no I, L, O or U), 20 characters = 100 bits of the plan
# id, read out in groups of four. A second plan with the same code takes about 2^100 tries,
# or 2^50 for a maker making pairs of plans: out of reach either way.
ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
CODE_LENGTH = 20
LOOK_ALIKES = str.maketrans({"O": "0", "I": "1", "L": "1"})


def canonical_bytes(document: Mapping[str, Any]) -> bytes:
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
               payee_changes: Iterable[PayeeChange] = (), results_workbook: bool = False,
               held: Iterable[ResultRow] = (),
               released: dict[str, list[str]] | None = None) -> PlanDocument:
    """The plan document (made canonical by `canonical_bytes`). `results_workbook`: the
    input is one, paid as `rerun` would (a FAILED row goes again); `held`: the rows the
    checks held out of the plan; `released`: the repeats the maker released (payout_ref →
    the earlier payout_refs)."""
    now = clock.now().replace(microsecond=0)
    planned: list[PlannedRow] = [
        {"row": r.row, "payout_ref": r.payout_ref, "source_currency": r.source_currency,
         "values": r.values, "amount": r.amount, "total_debit": r.total_debit} for r in rows]
    refs = {r["payout_ref"] for r in planned}
    changes = [without_details(c) for c in payee_changes]
    return {
        "version": PLAN_VERSION, "created_at": clock.stamp_seconds(now),
        "expires_at": clock.stamp_seconds(
            now + timedelta(seconds=max(1, math.ceil(hours * 3600)))),
        "maker": {"user": maker.user or operator(), "host": platform.node(), "key": maker.fingerprint,
                  "principals": maker.principals},
        "service": {"base_url": settings.base_url or "embedded",
                    "key_fingerprint": settings.key_fingerprint},
        "journal": {"path": settings.journal_name, "chain_head": chain_head},
        "dry_run": run_id, "tolerance": format(tolerance, "f"),
        "source_currency": source_currency or "",
        "sheet": {"name": sheet.path.name, "sha256": sheet.sha256, "columns": sheet.columns},
        "rows": planned,
        "currencies": currency_figures(planned, tolerance),
        # what the payee register found (new, changed and held payees; accounts masked)
        "payee_changes": changes,
        # what the maker decided, for the approver: the settings of the checks that hold
        # rows, the rows held out and why, the repeats released
        "controls": control_settings(settings),
        "input": "results workbook" if results_workbook else "sheet",
        "held": [{"row": r.row, "why": r.error} for r in held],
        "released_repeats": {ref: earlier for ref, earlier in sorted((released or {}).items())
                             if ref in refs},
        # who changed what the plan pays: each is a maker of it, and approves none of it
        "actors": plan_actors(maker.user or operator(), sorted(set(released or {}) & refs),
                              changes),
    }


def plan_actors(reviewer: str, released: Iterable[str], changes: Iterable[PayeeChangeShown]
                ) -> list[PlanActor]:
    """The plan's actors: its reviewer (the maker) first, who released each repeat (the
    reviewer: a release is made with the review), and who confirmed each payee change a row
    is paid on."""
    actors: list[PlanActor] = [{"user": reviewer, "action": "review", "subject": ""}]
    actors += [{"user": reviewer, "action": "release", "subject": ref} for ref in released]
    confirmed = sorted({(str(c.get("confirmer", "")), c["payee"]) for c in changes
                        if c["decision"] == "pay" and c.get("confirmed_by")})
    actors += [{"user": who, "action": "payee confirmation", "subject": payee}
               for who, payee in confirmed]
    return actors


def plan_rows_of(sheet: Sheet, journal_rows: Iterable[ResultRow]) -> list[PlanRow]:
    """The dry run's rows that would be sent (quoted, not sent), with their input values."""
    by_row = {r.row: r for r in sheet.rows}
    found = []
    for rr in journal_rows:
        if rr.status != Status.NOT_SENT or rr.total_debit is None:
            continue
        values = {c: t for c, v in zip(sheet.columns, by_row[rr.row].values, strict=True)
                  if (t := _text(v)) is not None}
        found.append(PlanRow(rr.row, rr.payout_ref, values, rr.source_currency,
                             format(rr.amount, "f"), format(rr.total_debit, "f")))
    return found


# --------------------------------------------------------------------------- reading


class RunTerms(TypedDict):
    """What `run --plan` takes from a plan besides its rows (`CheckedPlan.run_terms`)."""

    kind: Literal["run", "rerun"]
    source_currency: str | None
    allow_repeat: frozenset[str]  # the payout_refs of the repeats the maker released


class PlanRunInfo(TypedDict):
    """Which plan a run paid, who made it and who approved it, as the run records it."""

    plan_id: str
    plan_maker: str
    plan_approvers: str


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
    document: PlanDocument
    id: str
    validation: Validation
    maker: list[str] = field(default_factory=list)  # the maker's principals, once checked
    approvals: list[Approval] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def short(self) -> str:
        return short_code(self.id)

    def run_terms(self) -> RunTerms:
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
        spent = plan_debits(journal, self.id) if journal is not None else {}
        return {c: Decimal(t["ceiling"]) - spent.get(c, Decimal(0))
                for c, t in self.document["currencies"].items()}

    def sheet(self) -> Sheet:
        return plan_sheet(self.document, self.path, self.id)

    def run_info(self) -> PlanRunInfo:
        maker = self.document["maker"]
        return {"plan_id": self.id,
                "plan_maker": f"{', '.join(self.maker or maker['principals'])} "
                              f"({maker['key']}), {maker['user']}@{maker['host']}",
                "plan_approvers": ", ".join(f"{a.principal} ({a.fingerprint})"
                                            for a in self.approvals)}


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
    plan = check_shape(document)
    return CheckedPlan(path, data, plan, plan_id(data), check_figures(plan))


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
