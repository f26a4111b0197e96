"""The exactly-once gate: what a run does with each valid row, decided from the journal.

    new payout_ref, or one whose request never left (NOT_SENT ...)  → send
    a row in doubt (UNKNOWN, SENDING: a request may have left)       → resolve first
    sent and alive or final (PENDING ... COMPLETED)                  → track, never resend
    FAILED or REFUNDED                                               → resend on `rerun` only
    the same payout_ref with other details, or in another case      → INVALID
    a changed payee, a payment the service holds and the journal does
    not (engine.service_ledger), or a repeat of a recent payment      → HELD

Pure: it reads the journal and the rows and returns a `Plan`; nothing is sent or written.
One INVALID row empties the plan unless the operator skips invalid rows.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from functools import partial
from typing import TYPE_CHECKING, Any

from batchpay.controls.payee_keys import payee_values
from batchpay.controls.payees import (
    IDENTITY,
    Finding,
    HoldRules,
    PayeeChange,
    check_rows,
    reported,
)
from batchpay.controls.repeats import RepeatCheck, held_message, payment_key
from batchpay.engine.sending import SendJob
from batchpay.journal.records import RunRow, canonical, operator
from batchpay.journal.store import Journal
from batchpay.settings.model import Settings
from batchpay.statuses import FAILED_AT_BANK, IN_DOUBT, NO_PAYOUT, Status, display_status

if TYPE_CHECKING:
    from batchpay.engine.service_ledger import ServiceLedger
    from batchpay.sheet.validate import PayoutRow, RowCheck

DETAIL_FIELDS = (
    "recipient_type", "recipient_name", "company_name", "company_id", "ic_number",
    "account_number", "bank_name", "bank_city", "sort_code", "amount", "target_amount",
    "payee_id", "source_currency",
    "currency", "country", "payment_channel",
)


@dataclass
class Plan:
    rows: list[RunRow]
    send: list[SendJob]
    resolve: list[SendJob]  # rows in doubt: looked up first, sent only if never received
    track: list[str]  # refs already sent, shown with their journal status
    invalid: int
    # events about rows (kind, payout_ref, data): holds, and holds released by the operator
    decisions: list[tuple[str, str, Mapping[str, Any]]] = field(default_factory=list)
    # the payee register's findings that are not plainly "known" (the Payee changes sheet)
    payee_changes: list[PayeeChange] = field(default_factory=list)

    @property
    def held(self) -> int:
        return sum(r.status == Status.HELD for r in self.rows)

    def hold_notes(self, allow_repeat: frozenset[str]) -> list[str]:
        """What the operator is told about held rows, and about releases that found none."""
        notes = []
        payee_held = sum(c["decision"] == Status.HELD for c in self.payee_changes)
        service_held = sum(kind == "hold.service" for kind, _, _ in self.decisions)
        unchecked = sum(kind == "hold.service" and "unchecked" in data
                        for kind, _, data in self.decisions)
        if payee_held:
            notes.append(f"{payee_held} row(s) HELD because the payee's bank details changed, "
                         "are new or shared, failed before, or look like a known payee's: see their error. Confirm one "
                         "payee at a time with `batchpay payees confirm`.")
        if unchecked:
            notes.append(f"{unchecked} row(s) HELD: the service's own payout list could not be "
                         "read completely (page cap sync_max_pages), so they could not be "
                         "checked against it: see their error.")
        if service_held - unchecked:
            notes.append(f"{service_held - unchecked} row(s) HELD: the service's own payout list holds a "
                         "payment with the same payout_ref, or the same account, amount and "
                         "currencies, that this journal did not make (another journal, an "
                         "older copy of this one, the provider's dashboard): see their error. "
                         "If a row is a new payment, run again with --allow-repeat PAYOUT_REF.")
        if self.held - payee_held - service_held > 0:
            notes.append(f"{self.held - payee_held - service_held} row(s) HELD as possible "
                         "duplicate payments "
                         "(the same account and amount were paid recently under another "
                         "payout_ref): see their error. If a row is a new payment, run again "
                         "with --allow-repeat PAYOUT_REF.")
        held_or_released = {ref for _, ref, _ in self.decisions}
        for ref in sorted(allow_repeat - held_or_released):
            notes.append(f"--allow-repeat {ref}: no row with that payout_ref repeats a recent "
                         "payment; nothing to release.")
        return notes


def details_of(row: PayoutRow) -> str:
    """What makes a payout the same payment: recipient, account, bank, amount, currencies."""
    values = {}
    for name in DETAIL_FIELDS:
        value = getattr(row, name, None)
        if isinstance(value, Decimal):
            value = format(value.normalize(), "f")
        if value or name not in ("target_amount", "payee_id"):  # as they always were
            values[name] = value or ""
    return canonical(values)


def _changed_fields(old: str, new: str) -> list[str]:
    try:
        before, after = json.loads(old), json.loads(new)
    except ValueError:
        return ["details"]
    return [k for k in DETAIL_FIELDS if before.get(k) != after.get(k)]


def plan_rows(journal: Journal, checks: list[RowCheck], columns: list[str], *, kind: str,
              settings: Settings, skip_invalid: bool,
              allow_repeat: frozenset[str] = frozenset(),
              service: ServiceLedger | None = None, maker: str = "") -> Plan:
    """What a run does with each row. `service`: the service's payout list as read before
    paying (rows it holds and this journal does not are HELD). `maker`: who makes this batch
    (the plan's maker for `run --plan`), whose own payee confirmations do not count with
    payee_confirmed_by_other."""
    ledger = journal.entries(c.payout.payout_ref for c in checks if c.payout is not None)
    cased = {ref.upper(): ref for ref in journal.refs()}  # the refs, to compare without case
    repeats = RepeatCheck(journal, settings.repeat_window_days)
    rows: list[RunRow] = []
    send: list[SendJob] = []
    resolve: list[SendJob] = []
    track: list[str] = []
    decisions: list[tuple[str, str, Mapping[str, Any]]] = []
    candidates: list[tuple[SendJob, RunRow]] = []  # rows to send, if nothing holds them
    for seq, check in enumerate(checks):
        p = check.payout
        ref = p.payout_ref if p is not None else input_ref(check.values, columns)
        rr = RunRow(seq=seq, row=check.row, payout_ref=ref, inputs=list(check.values),
                    status=Status.INVALID, error="; ".join(check.errors),
                    warning="; ".join(check.warnings))
        rows.append(rr)
        if p is None:  # counted in the Summary under its currency, with its amount if readable
            amount, rr.source_currency = check.money(columns)
            rr.amount = amount
            continue
        rr.amount, rr.asked = p.amount, p.target_amount
        rr.source_currency, rr.target_currency = p.source_currency, p.currency
        details = details_of(p)
        entry = ledger.get(ref)
        other_case = cased.get(ref.upper(), ref) if entry is None else ref
        if other_case != ref:  # r-1 and R-1 are one payment
            rr.error = (f"payout_ref: {ref} differs only in case from {other_case}, already in "
                        "the journal; a payout_ref names one payment whatever its case: use "
                        f"{other_case} for that payment, or a new payout_ref for a new one")
            continue
        country = settings.source_countries.get(p.source_currency)
        # a paid (or possibly paid) ref met again with other details is another payment
        if (entry is not None and entry.status not in NO_PAYOUT
                and entry.status not in FAILED_AT_BANK and entry.details != details):
            rr.error = (f"payout_ref: {ref} was already sent in run {entry.run_id} "
                        f"({display_status(entry.status)}) with other "
                        f"{', '.join(_changed_fields(entry.details, details))}; a payout_ref "
                        "is paid once — use a new payout_ref for a new payment")
            continue
        if country is None and (entry is None or entry.status in NO_PAYOUT):
            rr.error = (f"source_currency: no source country is known for {p.source_currency}; "
                        "add it under [source_countries] in your own settings file")
            continue
        rr.status, rr.error = Status.NOT_SENT, ""
        job = SendJob(seq, ref, details, p, country or "")
        if entry is None or entry.status in NO_PAYOUT or (
                kind == "rerun" and entry.status in FAILED_AT_BANK):
            candidates.append((job, rr))
        elif entry.status in IN_DOUBT:
            rr.linked = True
            resolve.append(job)
        else:
            rr.linked = True
            track.append(ref)
    findings = _payee_holds(journal, settings, candidates)
    if settings.payee_confirmed_by_other and maker:
        for f in findings.values():
            if f.confirmer == maker and not f.held:  # four eyes on a change, not two
                f.held = True
                f.message = (f"payee {f.payee}: its bank details were confirmed by {maker}, who "
                             "makes this batch; with payee_confirmed_by_other someone else "
                             f"confirms them (`batchpay payees confirm {f.payee}`)")
    # a changed payee is held first, then a payment the service holds and the journal does
    # not, then a repeated payment
    holds = (partial(_service_decision, service), partial(_repeat_decision, repeats))
    for job, rr in candidates:
        finding = findings.get(job.seq)
        if finding is not None and (finding.held or finding.reason == IDENTITY):
            rr.status = Status.INVALID if finding.reason == IDENTITY else Status.HELD
            rr.error = (f"payee_id: {finding.message}" if rr.status == Status.INVALID
                        else finding.message)
            continue
        for decide in holds:
            decision = decide(job.row, job.ref, allow_repeat)
            if decision is not None:
                decisions.append(decision)
                if decision[0] != "hold.released":
                    rr.status, rr.error = Status.HELD, decision[2]["message"]
                    break
        else:
            send.append(job)
    decisions += [("hold.payee", f.ref, f.as_info()) for f in findings.values() if f.held]
    invalid = sum(r.status == Status.INVALID for r in rows)
    if invalid and not skip_invalid:
        send = []  # an invalid row blocks the whole sheet: nothing is sent
        resolve = []
        decisions = [d for d in decisions if d[0] != "hold.released"]
    changes = reported(findings.values())
    return Plan(rows, send, resolve, track, invalid, decisions, changes)


def _payee_holds(journal: Journal, settings: Settings,
                 candidates: list[tuple[SendJob, RunRow]]) -> dict[int, Finding]:
    """The payee register's finding for every row about to be sent (by seq)."""
    if not candidates:
        return {}
    rules = HoldRules(settings.hold_new_payees, settings.payee_change_hold_hours)
    found = check_rows(journal, ((job.seq, rr.row, job.ref, payee_values(job.row))
                                 for job, rr in candidates), rules)
    return {f.seq: f for f in found}


def _service_decision(service: ServiceLedger | None, p: PayoutRow, ref: str,
                      allow_repeat: frozenset[str]) -> tuple[str, str, dict[str, Any]] | None:
    """A hold for a row the service's list already holds, or that a list not read completely
    could not clear; or its release by --allow-repeat."""
    if service is None:
        return None
    found = service.match(ref, p)
    if found is None:
        if service.complete:
            return None
        unread = {"unchecked": service.unread, "since": f"{service.since:%Y-%m-%dT%H:%M:%SZ}",
                  "max_pages": service.max_pages}
        if ref in allow_repeat:
            return "hold.released", ref, {"reason": "service", **unread, "operator": operator()}
        return "hold.service", ref, {**unread, "message": service.unchecked_message(ref)}
    how, payouts = found
    info = {"matched_by": how, "found": [
        {"payout_id": o.payout_id, "reference_number": o.reference_number, "state": o.state,
         "created": o.created} for o in payouts]}
    if ref in allow_repeat:
        return "hold.released", ref, {"reason": "service", **info, "operator": operator()}
    return "hold.service", ref, {**info, "message": service.hold_message(ref, how, payouts)}


def _repeat_decision(repeats: RepeatCheck, p: PayoutRow, ref: str, allow_repeat: frozenset[str]
                     ) -> tuple[str, str, dict[str, Any]] | None:
    """A hold for a row that repeats a recent payment, or its release by --allow-repeat."""
    if not repeats.window_days:
        return None
    found = repeats.earlier(ref, payment_key(p.account_number, p.amount, p.source_currency,
                                             p.currency, target_amount=p.target_amount))
    if not found:
        return None
    earlier = [e.payout_ref for e in found]
    if ref in allow_repeat:
        return "hold.released", ref, {"reason": "repeat", "earlier": earlier,
                                      "operator": operator()}
    return "hold.repeat", ref, {"earlier": earlier, "message": held_message(
        ref, p.account_number,
        f"{p.amount:,} {p.source_currency}" if p.amount is not None
        else f"an invoice of {p.target_amount:,} {p.currency}", found)}


def input_ref(values: list[Any], columns: list[str]) -> str:
    i = columns.index("payout_ref") if "payout_ref" in columns else -1
    value = values[i] if 0 <= i < len(values) else None
    return "" if value is None else str(value).strip()
