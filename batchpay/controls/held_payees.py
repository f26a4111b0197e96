"""The payees held now, as a team's month reads them: every payee a run held for its bank
details and that no one has confirmed on those details yet, with who confirmed them so far.

With `payee_confirmed_by_other`, a batch whose maker confirmed a payee alone keeps its rows
held: the list says who confirmed, so that someone else can.
"""

from __future__ import annotations

from typing import TypedDict

from batchpay.clock import FALLBACK_ZONE, show
from batchpay.controls.payee_register import CONFIRMED, Register, RegisterLine, register_lines
from batchpay.controls.payees import held_details
from batchpay.journal.store import Journal
from batchpay.money import masked
from batchpay.statuses import Status


class HeldPayee(TypedDict):
    payee: str
    account: str  # masked
    bank: str
    name: str
    confirmed: list[str]  # "who when" of each confirmation of these details so far


class Payees(TypedDict):
    """The register's lines and the payees held now."""

    lines: list[RegisterLine]  # `batchpay payees`' lines
    held: list[HeldPayee]
    by_other: bool  # payee_confirmed_by_other


def payees(journal: Journal | None, *, by_other: bool, zone_name: str = FALLBACK_ZONE
           ) -> Payees:
    """The register and the payees held now, each with its held details (accounts masked)
    and who confirmed those details already (None: no journal yet, nobody paid); times
    shown in `zone_name`."""
    if journal is None:
        return Payees(lines=[], held=[], by_other=by_other)
    lines = register_lines(Register.load(journal), zone_name)
    confirmations = journal.events_of(CONFIRMED)
    names = sorted({c["payee"] for run in journal.runs()
                    for c in run.info.get("payee_changes", [])
                    if c.get("decision") == Status.HELD})
    held = []
    for name in names:
        for details in held_details(journal, name):
            if any(line["payee"] == name and line["confirmed"] for line in lines):
                continue
            held.append(HeldPayee(
                payee=name, account=masked(details["account_number"]),
                bank=details.get("bank_name", ""), name=details.get("recipient_name", ""),
                confirmed=[f"{c.get('by', '?')} {show(str(c.get('at', '')), zone_name)}"
                           for c in confirmations
                           if c.get("payee") == name and c.get("details") == details]))
    return Payees(lines=lines, held=held, by_other=by_other)
