"""The payee register's records: a payout as the register sees it (`Paid`), a person's
confirmation of bank details (`PayeeConfirmation`) and a payee with both (`Payee`).

Apart from the register that builds them (payee_register) so that the look-alike check,
which the register runs and which reads payees, does not import the register back.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TypedDict

from batchpay.controls.payee_keys import bank_details
from batchpay.statuses import FAILED_AT_BANK, LedgerStatus


class PayeeConfirmation(TypedDict):
    """A `payee.confirmed` event: bank details a person confirmed for a payee after
    reading them back to it (`batchpay payees confirm`)."""

    payee: str
    details: dict[str, str]  # the details confirmed, normalized as payee_keys.bank_details
    before: dict[str, str] | None  # the details of the payee's last payout, if any
    by: str  # the OS user, or a console's signed-in user
    at: str  # UTC ISO 8601
    method: str  # how they were checked (a call back on a known number, say)
    note: str


@dataclass
class Paid:
    """One payout of the ledger, as the register sees it."""

    ref: str
    status: LedgerStatus
    run_id: str
    at: str  # when its first payout request was made (UTC ISO 8601)
    shown: dict[str, str]  # bank details as sent (for before/after)
    account: str  # its account number without spaces or hyphens
    amount: str  # the source amount paid (an invoice row's as quoted), fees apart
    currency: str  # its source currency
    company_id: str
    delivered: str = ""  # what the recipient gets, in target_currency
    target_currency: str = ""

    @cached_property
    def details(self) -> dict[str, str]:
        """The bank details without spreadsheet noise (made when first compared)."""
        return bank_details(self.shown)


@dataclass
class Payee:
    name: str  # how it is named: its payee_id, else its natural key's value
    keys: set[tuple[str, str]] = field(default_factory=set)
    payouts: list[Paid] = field(default_factory=list)
    confirmed: list[PayeeConfirmation] = field(default_factory=list)

    @cached_property
    def last_good(self) -> Paid | None:
        """The last payout whose money went (or may have): not FAILED or REFUNDED."""
        good = [p for p in self.payouts if p.status not in FAILED_AT_BANK]
        return max(good, key=lambda p: p.at) if good else None

    @cached_property
    def last(self) -> Paid | None:
        if len(self.payouts) < 2:
            return self.payouts[0] if self.payouts else None
        return max(self.payouts, key=lambda p: p.at)
