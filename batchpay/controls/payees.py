"""Payee change control: a payee's bank details that changed since its last payout are held
until a person confirms them, one payee at a time.

Each valid row is classified against its payee's history in the payee register
(batchpay.controls.payee_register, read from the journal):

    new               the payee was never paid
    known             the same details as its last payout (or details a person confirmed)
    changed           details differ from its last payout (which fields, before → after)
    shared account    the account was paid to another payee
    previously failed its last payout to these details ended FAILED or REFUNDED
    conflict in sheet the payee has two different sets of details in this sheet
    look-alike        a new payee whose name or payee_id is, or looks like, a known payee's

All but new and known are HELD (new too with `hold_new_payees`); a confirmed change waits
`payee_change_hold_hours` before it is paid. Spreadsheet noise never counts as a change:
spaces and hyphens in account numbers; case, width, white space and characters that show
as nothing in names (payee_keys.fold). A person confirms held details here too (`confirm`),
after reading them back to the payee (`show`).
"""

from __future__ import annotations

import json
import re
import shlex
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypedDict, cast

from batchpay import clock
from batchpay.clock import stamp
from batchpay.controls.lookalikes import visible
from batchpay.controls.payee_keys import (
    BANK_FIELDS,
    PayeeValues,
    bank_details,
    cleaned,
    fold,
    keys_of,
    natural_shown,
    payee_values,
    strong_keys,
)
from batchpay.controls.payee_records import Paid, Payee, PayeeConfirmation
from batchpay.controls.payee_register import (
    CONFIRMED,
    Register,
    RegisterLine,
    money_text,
    paid_totals,
    register_lines,
)
from batchpay.errors import UsageError
from batchpay.journal.records import operator
from batchpay.journal.store import Journal
from batchpay.money import masked
from batchpay.sheet.read import paused_gc
from batchpay.statuses import FAILED_AT_BANK, Status

if TYPE_CHECKING:
    from batchpay.sheet.validate import RowCheck

NEW, KNOWN, CHANGED = "new", "known", "changed"
SHARED, FAILED_BEFORE, CONFLICT = "shared account", "previously failed", "conflict in sheet"
LOOKALIKE = "look-alike"  # a new payee with a known payee's name or id, or one that looks alike
HOLDING = (CHANGED, SHARED, FAILED_BEFORE, CONFLICT, LOOKALIKE)
IDENTITY = "identity conflict"  # a known payee_id given another company_id: the row is INVALID


class PayeeChangeShown(TypedDict):
    """A finding worth a line in the Payee changes sheet, as a plan and `--json` show it:
    without the row's bank details (account numbers in `fields` masked)."""

    row: int  # the sheet's row number
    payout_ref: str
    payee: str
    reason: str  # NEW .. LOOKALIKE, KNOWN with a confirmation, or IDENTITY
    fields: list[list[str]]  # [field, before, after] as shown: account numbers masked
    last_paid: str  # "2026-10-31, run X, ref Y"
    decision: Literal[Status.HELD, "pay"]
    confirmed_by: str  # the confirmation these details are paid on (who, when, how)
    confirmer: str  # who made that confirmation: one of the plan's actors when it is paid on


class PayeeChange(PayeeChangeShown):
    """A finding as a run records it in the journal (run info, `hold.payee` events): with
    the row's bank details, which `payees confirm` trusts once a person read them back."""

    details: dict[str, str]


def without_details(change: PayeeChange) -> PayeeChangeShown:
    """A finding as a plan shows it: the approver sees what changed, masked, not the
    row's bank details."""
    return cast(PayeeChangeShown, {k: v for k, v in change.items() if k != "details"})


class PayeeHistory(TypedDict):
    """`batchpay payees show`: a payee's held details in full, for a read-back call."""

    payee: str
    held: list[dict[str, str]]  # the bank details the latest run that held it held it on
    history: list[RegisterLine]
    confirmations: list[PayeeConfirmation]


@dataclass
class Finding:
    """What the register says about one row."""

    seq: int
    row: int
    ref: str
    payee: str
    reason: str  # NEW .. CONFLICT, or "identity conflict" (the row is INVALID)
    # (field, before, after) as shown: account numbers masked
    fields: list[tuple[str, str, str]] = field(default_factory=list)
    last_paid: str = ""  # "2026-10-31, run X, ref Y"
    message: str = ""
    held: bool = False
    details: dict[str, str] = field(default_factory=dict)  # the row's bank details, normalized
    confirmed_by: str = ""  # the confirmation these details are paid on (who, when, how)
    confirmer: str = ""  # who made that confirmation (the OS user)

    def as_info(self) -> PayeeChange:
        # one row number per row: the sheet's (`seq`, the row's place in the run, stays inside)
        return {"row": self.row, "payout_ref": self.ref, "payee": self.payee,
                "reason": self.reason, "fields": [list(f) for f in self.fields],
                "last_paid": self.last_paid, "decision": Status.HELD if self.held else "pay",
                "details": self.details, "confirmed_by": self.confirmed_by,
                "confirmer": self.confirmer}


@dataclass(frozen=True)
class HoldRules:
    hold_new: bool = False
    cooling_hours: float = 0.0


def classify(register: Register, rows: Iterable[tuple[int, int, str, PayeeValues]],
             rules: HoldRules, now: datetime | None = None) -> list[Finding]:
    """A finding for every (seq, row, payout_ref, values) of the valid rows to be paid."""
    now = now or clock.now()
    items = list(rows)
    in_sheet: dict[str, set[tuple[str, ...]]] = defaultdict(set)
    prepared = []
    for seq, row, ref, values in items:
        keys = keys_of(values)
        payee = register.payee_of(keys, strong_keys(values))
        name = _named(payee, keys, values)
        raw = {n: str(values.get(n) or "") for n in BANK_FIELDS}
        in_sheet[fold(name)].add(tuple(raw.values()))
        prepared.append((seq, row, ref, values, keys, payee, name, raw))
    conflicts = {name for name, seen in in_sheet.items() if len(seen) > 1 and len(
        {tuple(bank_details(dict(zip(BANK_FIELDS, one, strict=True))).values())
         for one in seen}) > 1}
    findings = []
    for seq, row, ref, values, keys, payee, name, raw in prepared:
        finding = Finding(seq, row, ref, name, NEW)
        _judge(finding, register, payee, values, raw, keys, fold(name) in conflicts, rules,
               now)
        findings.append(finding)
    return findings


def _named(payee: Payee | None, keys: list[tuple[str, str]], values: PayeeValues) -> str:
    """How a row's payee is named (in messages, and to `payees confirm`): the register's
    name of a payee known by a payee_id (whatever id or spelling the row gives it), else
    the row's own payee_id, else the name the register knows, else its natural key."""
    if keys[0][0] == "id":
        known = payee is not None and any(k == "id" for k, _ in payee.keys)
        return payee.name if payee is not None and known else str(values["payee_id"]).strip()
    return payee.name if payee is not None else natural_shown(values)


def reported(findings: Iterable[Finding]) -> list[PayeeChange]:
    """The findings worth a line in the Payee changes sheet: all but plainly known payees."""
    return [f.as_info() for f in sorted(findings, key=lambda f: f.seq)
            if f.reason != KNOWN or f.confirmed_by]


def _judge(f: Finding, register: Register, payee: Payee | None, values: PayeeValues,
           raw: dict[str, str], keys: list[tuple[str, str]], conflict: bool, rules: HoldRules,
           now: datetime) -> None:
    identity = _identity_conflict(register, payee, values, keys)
    if identity:
        f.reason, f.message = IDENTITY, identity
        return
    last = payee.last if payee else None
    good = payee.last_good if payee else None  # the last payout whose money went
    if last is not None:
        f.last_paid = f"{clock.day(last.at, clock.FALLBACK_ZONE)}, run {last.run_id}, {last.ref}"
    if good is not None and good is last and good.shown == raw and not conflict:
        f.reason = KNOWN  # typed exactly as last paid: most rows of a month
        return
    f.details = bank_details(raw)
    account = f.details["account_number"]
    confirmed = sorted([*(payee.confirmed if payee else []),
                        *register.unpaid.get(fold(f.payee), [])], key=lambda c: c["at"])
    confirmation = _confirmation(confirmed, last, f.details)
    others = register.others_with_account(account, payee)
    if conflict:
        f.reason = CONFLICT
        f.message = (f"conflict in sheet: payee {f.payee} has two different sets of bank "
                     "details in this sheet; "
                     "keep one row, with the details you have checked with the payee")
    elif confirmation is not None:
        f.reason = KNOWN
        if good is not None:  # what changed and was confirmed, for the approver to see
            f.fields = [(n, shown_value(n, good.shown[n]), shown_value(n, raw[n]))
                        for n in BANK_FIELDS if good.details[n] != f.details[n]]
        f.confirmer = str(confirmation.get("by", ""))
        f.confirmed_by = (f"confirmed by {confirmation.get('by', '?')} "
                          f"{clock.show(str(confirmation['at']), clock.FALLBACK_ZONE)} "
                          f"({confirmation.get('method', '?')})")
        until = _cooling_until(confirmation, rules)
        if until is not None and now < until:
            f.reason = CHANGED
            f.message = (f"details confirmed {clock.show(str(confirmation['at']), clock.FALLBACK_ZONE)} by "
                         f"{confirmation.get('by', '?')}; held until {until:%Y-%m-%d %H:%M} UTC "
                         "(payee_change_hold_hours)")
            f.held = True
            return
    elif others and (payee is None or all(p.account != account
                                           for p in payee.payouts)):
        f.reason = SHARED
        who = ", ".join(o.name for o in others[:3])
        f.message = (f"shared account: {masked(account)} was paid to another payee ({who}); "
                     f"{_how(f.payee, account)}")
    else:
        _judge_history(f, payee, raw, good, account, rules)
        alike = register.look_alikes.match(values, payee) if f.reason == NEW else None
        if alike is not None:
            f.reason = LOOKALIKE
            f.message = f"{alike.message()}; {_how(f.payee, account)}"
    if f.message and keys[0][0] == "id" and payee is not None and keys[0] not in payee.keys \
            and f.payee == payee.name:  # found by its company_id or ic_number
        f.message = f"{_found_by(payee, values)}: {f.message}"
    f.held = f.reason in HOLDING or (f.reason == NEW and rules.hold_new)


def _judge_history(f: Finding, payee: Payee | None, raw: dict[str, str], good: Paid | None,
                   account: str, rules: HoldRules) -> None:
    """New, known, previously failed or changed: these details against the payee's payouts.

    Details whose last payout failed are held; details that differ from the last payout
    whose money went are a change. A payee whose every payout failed has had no money on
    any details: other details are new (correcting a failed row is not a change)."""
    same = [p for p in payee.payouts if p.details == f.details] if payee else []
    last_same = max(same, key=lambda p: p.at) if same else None
    if last_same is not None and last_same.status in FAILED_AT_BANK:
        f.reason = FAILED_BEFORE
        f.message = (f"previously failed: the last payout to these details ({last_same.ref}, "
                     f"{clock.day(last_same.at, clock.FALLBACK_ZONE)}) ended {last_same.status}; "
                     f"{_how(f.payee, account)}")
    elif last_same is not None:
        f.reason = KNOWN
    elif good is None:
        f.reason = NEW
        if rules.hold_new:
            f.message = f"new payee (hold_new_payees): {_how(f.payee, account)}"
    else:
        f.reason = CHANGED
        f.fields = [(n, shown_value(n, good.shown[n]), shown_value(n, raw[n]))
                    for n in BANK_FIELDS if good.details[n] != f.details[n]]
        paid_before = paid_totals(p for p in payee.payouts  # type: ignore[union-attr]
                                  if p.details == good.details)
        what = "; ".join(f"{n} {b} → {a}" for n, b, a in f.fields)
        f.message = (f"bank details changed since {clock.day(good.at, clock.FALLBACK_ZONE)} ({good.ref}, run {good.run_id}; "
                     f"{money_text(paid_before) or 'nothing'} paid to the old "
                     f"details): {what}; {_how(f.payee, account)}")


def _found_by(payee: Payee, values: PayeeValues) -> str:
    """Why a row with a payee_id the register does not know is a known payee."""
    kind, _ = next(k for k in strong_keys(values) if k in payee.keys)
    name: Literal["company_id", "ic_number"] = "company_id" if kind == "company" else "ic_number"
    return (f"payee_id {visible(str(values['payee_id']).strip())} is new, but {name} "
            f"{str(values[name]).strip().upper()} was paid as payee {payee.name}")


def shown_value(name: str, value: str) -> str:
    """A bank detail as messages and the Payee changes sheet show it (accounts masked)."""
    if not name:
        return ""
    return masked(cleaned(name, value)) if name == "account_number" else (value or "(empty)")


def _how(payee: str, account: str) -> str:
    return (f"call the payee on a number you already had, then `batchpay payees confirm "
            f"{_typed(payee)} --account-last4 {account[-4:]}`")


def _typed(word: str) -> str:
    """A command-line word as a shell takes it: quoted only when it must be (`'张 3'`)."""
    return word if _PLAIN_WORD.fullmatch(word) else shlex.quote(word)


_PLAIN_WORD = re.compile(r"[^\s'\"\\$`;&|<>()*?!#~{}\[\]]+")


def _identity_conflict(register: Register, payee: Payee | None, values: PayeeValues,
                       keys: list[tuple[str, str]]) -> str:
    """A known payee_id paid as one company, now given another company_id."""
    company = fold(values.get("company_id"))
    if not company or payee is None or keys[0][0] != "id" or keys[0] not in payee.keys:
        return ""
    known = {fold(p.company_id): p.company_id.strip().upper() for p in payee.payouts
             if p.company_id}
    if known and company not in known:
        return (f"payee_id {str(values['payee_id']).strip()} was paid as company "
                f"{', '.join(sorted(known.values()))}, not "
                f"{str(values['company_id']).strip().upper()}: a payee_id names one payee "
                "(use a new payee_id for another company)")
    return ""


def _confirmation(confirmed: list[PayeeConfirmation], last: Paid | None,
                  details: dict[str, str]) -> PayeeConfirmation | None:
    """The latest confirmation of exactly these details after the payee's last payout."""
    for data in reversed(confirmed):
        if data.get("details") == details and (last is None or _after(data.get("at"), last.at)):
            return data
    return None


def _cooling_until(confirmation: PayeeConfirmation, rules: HoldRules) -> datetime | None:
    if not rules.cooling_hours:
        return None
    return clock.parse(str(confirmation["at"])) + timedelta(hours=rules.cooling_hours)


def _after(at: object, other: str) -> bool:
    """A confirmation's time at or after a payout's: compared as moments, whatever form
    each was written in (a missing or unreadable time is never after)."""
    try:
        return clock.parse(str(at)) >= clock.parse(other)
    except ValueError:
        return False


def held_details(journal: Journal, payee: str) -> list[dict[str, str]]:
    """The bank details the latest run that held `payee` held it on (newest run first)."""
    for run in reversed(journal.runs()):
        found = [c["details"] for c in run.info.get("payee_changes", [])
                 if fold(c.get("payee", "")) == fold(payee)
                 and c.get("decision") == Status.HELD]
        if found:
            unique = {json.dumps(d, sort_keys=True): d for d in found}
            return list(unique.values())
    return []


def show(journal: Journal, name: str) -> PayeeHistory:
    """`batchpay payees show`: the held details in full (for a read-back call) and history."""
    register = Register.load(journal)
    payee = register.find(name)
    shown = payee.name if payee else name.strip()
    held = held_details(journal, shown)
    if payee is None and not held:
        raise UsageError(f"No payee {name} in the journal.",
                         hint="`batchpay payees` lists the payees by payee_id, company_id, "
                         "ic_number or name.")
    history = [line for line in register_lines(register) if line["payee"] == shown]
    return {"payee": shown, "held": held, "history": history,
            "confirmations": payee.confirmed if payee else []}


def confirm(journal: Journal, name: str, last4: str, *, method: str, note: str,
            by: str | None = None) -> PayeeConfirmation:
    """Trust exactly the held details of one payee whose account ends in `last4`."""
    register = Register.load(journal)
    payee = register.find(name)
    shown = payee.name if payee else name.strip()
    candidates = held_details(journal, shown)
    if not candidates:
        raise UsageError(f"No held bank details for payee {name}: nothing to confirm.",
                         hint="`batchpay payees` lists the payees; a row is held by a run "
                         "first, then confirmed here.")
    if not (len(last4) == 4 and last4.isdigit()):
        raise UsageError("--account-last4 takes the last four digits of the new account.")
    matching = [d for d in candidates if d["account_number"].endswith(last4)]
    if len(matching) != 1:
        raise UsageError(f"The last four digits {last4} do not match the account held for "
                         f"payee {shown}: nothing was confirmed.",
                         hint="Read the account back to the payee (`batchpay payees show "
                         f"{shown}`) and type its last four digits.")
    previous = payee.last if payee else None
    data: PayeeConfirmation = {
        "payee": shown, "details": matching[0], "before": previous.details if previous else None,
        "by": by or operator(), "at": stamp(), "method": method, "note": note}
    journal.record_note(CONFIRMED, data)
    return data


def check_rows(journal: Journal, rows: Iterable[tuple[int, int, str, PayeeValues]],
               rules: HoldRules) -> list[Finding]:
    """Load the register and classify (seq, row, payout_ref, values) rows against it.

    The collector is paused meanwhile: the register makes tens of thousands of small
    objects, and validate or run already holds a large heap that every collection would walk
    again. Measured by tests/benchmarks/bench_payees.py at 10,000 rows: the register adds
    0.43-0.45 s to `validate` paused, 0.60-0.64 s with the collector running (target 0.5 s).
    """
    with paused_gc():
        return classify(Register.load(journal), rows, rules)


def check_sheet(journal_path: Path | str, rows: Sequence[RowCheck], rules: HoldRules) -> list[Finding]:
    """`validate`: classify the valid rows (RowChecks) against the journal, when there is one.

    A row with an identity conflict becomes INVALID, as `run` would make it.
    """
    if isinstance(journal_path, Path) and not journal_path.is_file():
        return []
    valid = [r for r in rows if r.payout is not None]
    with Journal(journal_path) as journal:
        findings = check_rows(journal, ((seq, r.row, r.payout_ref, payee_values(r.payout))
                                        for seq, r in enumerate(valid)), rules)
    for finding, check in zip(findings, valid, strict=True):
        if finding.reason == IDENTITY:
            check.status = Status.INVALID
            check.errors.append(f"payee_id: {finding.message}")
    return findings
