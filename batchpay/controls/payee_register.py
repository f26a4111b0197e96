"""The payee register: every payee the journal has paid, read from the journal every time
it is needed, never kept as a second copy that could drift: every payout the ledger holds
(its recipient and bank details, status, run and amount, all under the hash chain) and
every confirmation (an event of the chain).

Payouts are grouped into payees by every key they were sent with: the operator's
`payee_id`, else the company_id of a BUSINESS, the ic_number, or the recipient name (so a
sheet that starts carrying payee_id still finds last month's payees by their natural key).
A known company_id or ic_number finds its payee whatever payee_id a row gives it, and ids
and names are compared folded (payee_keys): a new id or a look-alike is no new payee.
batchpay.controls.payees judges rows against it.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Sequence
from decimal import Decimal
from functools import cached_property
from typing import TypedDict, cast

from batchpay.clock import FALLBACK_ZONE, day
from batchpay.controls.lookalikes import LookAlikes
from batchpay.controls.payee_keys import (
    BANK_FIELDS,
    cleaned,
    fold,
    natural_key,
    natural_shown,
    strong_keys,
)
from batchpay.controls.payee_records import Paid, Payee, PayeeConfirmation
from batchpay.journal.records import stored_status
from batchpay.journal.store import Journal
from batchpay.money import in_minor_units, masked, plain_account, shown_amount
from batchpay.statuses import FAILED_AT_BANK, REQUESTED, LedgerStatus

CONFIRMED = "payee.confirmed"  # the kind of a confirmation's event


class PaidTotals(TypedDict):
    """Money per currency, as text: what left the wallet per source currency ("paid") and
    what the recipients get per target currency ("delivered")."""

    paid: dict[str, str]
    delivered: dict[str, str]


class RegisterLine(PaidTotals):
    """`batchpay payees`: one payee and one set of bank details it was paid on."""

    payee: str
    name: str  # the recipient name last paid on these details
    account: str  # masked
    bank: str
    last_paid: str  # its date
    last_status: LedgerStatus  # of the last payout (SENDING: a request in doubt)
    payouts: int
    confirmed: bool  # a person confirmed these details


class Register:
    """Every payee the journal has paid, with its payouts and confirmations."""

    def __init__(self, payees: list[Payee], by_key: dict[tuple[str, str], Payee]) -> None:
        self.payees = payees
        self._by_key = by_key
        self.unpaid: dict[str, list[PayeeConfirmation]] = defaultdict(list)
        self._by_account: dict[str, list[Payee]] = defaultdict(list)
        for p in payees:
            for account in {paid.account for paid in p.payouts}:
                self._by_account[account].append(p)

    @classmethod
    def load(cls, journal: Journal) -> Register:
        """Payouts with a payee_id are that payee's; one payee_id never merges with another
        (ids compared folded: `sup-001` is SUP-001). Payouts without one are grouped by their
        natural key, which joins the payee_id it was paid under when that is exactly one (a
        sheet that starts carrying payee_id). Every company_id and ic_number a payee was paid
        with names it too."""
        by_id: dict[str, Payee] = {}
        by_natural: dict[tuple[str, str], Payee] = {}
        ids_of: dict[tuple[str, str], set[str]] = defaultdict(set)
        # money as the ledger has it: an invoice row's details carry only its target amount
        money = {ref: (e.amount, e.target_amount, e.target_currency)
                 for ref, e in journal.entries().items()}
        for ref, details_text, status, run_id, at in journal.sent_since("", REQUESTED):
            try:
                values = json.loads(details_text)
            except ValueError:
                continue
            shown = {n: str(values.get(n) or "") for n in BANK_FIELDS}
            source, delivered, target = money.get(ref, (None, None, None))
            paid = Paid(ref, stored_status(status), run_id, at, shown,
                        plain_account(shown["account_number"]),
                        str(source or values.get("amount") or ""),
                        str(values.get("source_currency") or ""),
                        str(values.get("company_id") or ""), str(delivered or ""),
                        str(target or values.get("currency") or ""))
            natural = natural_key(values)
            keys = {natural, *strong_keys(values)}
            payee_id = fold(values.get("payee_id"))
            if payee_id:
                payee = by_id.setdefault(payee_id, Payee(str(values["payee_id"]).strip()))
                payee.keys.add(("id", payee_id))
                for key in keys:
                    ids_of[key].add(payee_id)
            else:
                payee = by_natural.setdefault(natural, Payee(natural_shown(values)))
            payee.keys.update(keys)
            payee.payouts.append(paid)
        by_key: dict[tuple[str, str], Payee] = {("id", i): p for i, p in by_id.items()}
        payees = list(by_id.values())
        for natural, payee in by_natural.items():
            ids = ids_of.get(natural, set())
            if len(ids) == 1:  # the same payee, paid before the sheet carried its payee_id
                owner = by_id[next(iter(ids))]
                owner.payouts.extend(payee.payouts)
                owner.keys.update(payee.keys)
            else:
                owner = payee
                payees.append(payee)
            by_key[natural] = owner
            for key in payee.keys:
                by_key.setdefault(key, owner)
        for key, ids in ids_of.items():  # a key of payee_ids only: the latest
            if key not in by_key:
                by_key[key] = by_id[next(iter(ids))] if len(ids) == 1 else max(
                    (by_id[i] for i in ids), key=lambda p: p.last.at if p.last else "")
        register = cls(payees, by_key)
        # the events `payees confirm` wrote, under the hash chain
        for data in cast("list[PayeeConfirmation]", journal.events_of(CONFIRMED)):
            found = register.find(data.get("payee", ""))
            if found is not None:
                found.confirmed.append(data)
            else:  # a payee confirmed before its first payout (hold_new_payees, look-alike)
                register.unpaid[fold(data.get("payee", ""))].append(data)
        return register

    def find(self, name: str) -> Payee | None:
        """A payee by any name it was paid under: payee_id, company_id, ic_number or name."""
        text = fold(name)
        for key in (("id", text), ("company", text), ("ic", text),
                    ("name", cleaned("recipient_name", name))):
            if key in self._by_key:
                return self._by_key[key]
        return None

    def payee_of(self, keys: Sequence[tuple[str, str]],
                 strong: Sequence[tuple[str, str]] = ()) -> Payee | None:
        """The payee of a row: by its payee_id; else by a company_id or ic_number it was paid
        with, whatever payee_id the row gives (a new or look-alike id is no new payee); by
        its name only when it has no payee_id, or when that name's payee has none yet (its
        payouts were made before the sheet carried one)."""
        if keys[0][0] == "id":
            if keys[0] in self._by_key:
                return self._by_key[keys[0]]
            for key in strong:
                if key in self._by_key:
                    return self._by_key[key]
            payee = self._by_key.get(keys[1])
            return payee if payee is not None and not any(
                k == "id" for k, _ in payee.keys) else None
        for key in (keys[0], *strong):
            if key in self._by_key:
                return self._by_key[key]
        return None

    @cached_property
    def look_alikes(self) -> LookAlikes:
        """Made when a row first needs it: only a new payee is compared with the known."""
        return LookAlikes(self.payees)

    def others_with_account(self, account: str, payee: Payee | None) -> list[Payee]:
        return [p for p in self._by_account.get(account, ()) if p is not payee]


def _money(amount: Decimal, currency: str) -> Decimal:
    return in_minor_units(amount, currency)


def paid_totals(payouts: Iterable[Paid]) -> PaidTotals:
    """What left the wallet per source currency ("paid") and what the recipients get per
    target currency ("delivered"), of the payouts whose money went: never one summed
    under the other's currency."""
    paid: dict[str, Decimal] = defaultdict(Decimal)
    delivered: dict[str, Decimal] = defaultdict(Decimal)
    for p in payouts:
        if p.status in FAILED_AT_BANK:
            continue
        if p.amount:
            paid[p.currency] += Decimal(p.amount)
        if p.delivered:
            delivered[p.target_currency] += Decimal(p.delivered)
    return {"paid": {c: str(_money(t, c)) for c, t in sorted(paid.items())},
            "delivered": {c: str(_money(t, c)) for c, t in sorted(delivered.items())}}


def money_text(totals: PaidTotals) -> str:
    """`12,000.00 NGN (52.17 CNY delivered)`."""
    paid = ", ".join(shown_amount(Decimal(v), c) for c, v in totals["paid"].items())
    got = ", ".join(shown_amount(Decimal(v), c) for c, v in totals["delivered"].items())
    return f"{paid} ({got} delivered)" if paid and got else paid or (
        f"{got} delivered" if got else "")


def register_lines(register: Register, zone_name: str = FALLBACK_ZONE) -> list[RegisterLine]:
    """`batchpay payees`: one line per payee and set of bank details it was paid on, its
    last payout's day counted in `zone_name` (the `time_zone` setting)."""
    lines: list[RegisterLine] = []
    for payee in sorted(register.payees, key=lambda p: p.name):
        sets: dict[str, list[Paid]] = defaultdict(list)
        for paid in payee.payouts:
            sets[json.dumps(paid.details, sort_keys=True)].append(paid)
        for group in sorted(sets.values(), key=lambda g: max(p.at for p in g)):
            last = max(group, key=lambda p: p.at)
            lines.append({
                "payee": payee.name, "name": last.shown["recipient_name"],
                "account": masked(last.details["account_number"]),
                "bank": last.shown["bank_name"], "last_paid": day(last.at, zone_name).isoformat(),
                "last_status": last.status, "payouts": len(group),
                **paid_totals(group),
                "confirmed": any(c.get("details") == last.details for c in payee.confirmed)})
    return lines
