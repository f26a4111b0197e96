"""The Payees page's held payees as a person reads them back on the phone, and the rule that
keeps identity numbers masked on every other page.

A held payee is confirmed by calling it on a number already known and reading the new
details back. The maker doing that needs to see, for each held payee, what was paid before
and what the sheet asks now — name, account, bank, ID — side by side (before → after), and
the new account in full: the last four digits it types prove only that it read them. Every
other role, and every other page, sees IDs and accounts masked.

The templates' output passes through `shown` (the console's Jinja `finalize`): every text a
page prints has its ID-shaped words masked (`batchpay.controls.masking`), unless the value is
`Revealed` — which only this module makes, and only for a maker on the Payees page.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from markupsafe import Markup

from batchpay import clock
from batchpay.engine import Register, fold, held_rows, mask_ids, masked_id, payee_list
from batchpay.money import masked, plain_account
from batchpay.settings.model import Settings


class Revealed(str):
    """A value a page shows in full: an ID or account the confirming maker reads back."""

    __slots__ = ()


def shown(value: Any) -> Any:
    """A template's output as the page prints it: IDs masked, unless `Revealed`."""
    if isinstance(value, Revealed) or not isinstance(value, str):
        return value
    if isinstance(value, Markup):
        return Markup(mask_ids(str(value)))
    return mask_ids(value)


@dataclass
class Detail:
    """One detail of a held payee: what was paid before, what is held now."""

    label: str  # name, account, bank, city, ID
    before: str  # as shown (an account masked)
    after: str
    changed: bool  # the values differ (compared whole, whatever is shown)


@dataclass
class HeldPayee:
    """A held payee with its details before → after, as the Payees page shows it."""

    payee: str  # how it is named (its key: the confirm form sends it back)
    name: str  # the recipient name held now
    account: str  # masked, as every role sees it
    full_account: str  # the maker's only: the new account in full (else "")
    confirmed: list[str] = field(default_factory=list)  # "who when" so far
    details: list[Detail] = field(default_factory=list)
    last_paid: str = ""  # "2026-11-30, NOV26-001": the payout "before" is, its day in the zone

    @property
    def label(self) -> str:
        """Who the confirm form is for, in its button and fields' names."""
        return self.name or self.payee


def _id_of(values: dict[str, str]) -> str:
    """The registration number a row or payout names its payee by (company, else person)."""
    return (values.get("company_id") or values.get("ic_number") or "").strip().upper()


def held_for_read_back(settings: Settings, held: Sequence[Mapping[str, Any]], *,
                       maker: bool) -> list[HeldPayee]:
    """the engine's `payee_list`' held payees, each with its details before (its last payout) → after
    (the row that held it, as typed in the sheet); IDs and the new account in full for a
    maker (`maker`), masked for everyone else."""
    if not held or not settings.journal_exists():
        return []
    register, typed = held_rows(settings, {str(h["payee"]) for h in held})
    return [_held_payee(h, register, typed, maker, settings.time_zone) for h in held]


def _held_payee(held: Mapping[str, Any], register: Register,
                typed: dict[tuple[str, str], dict[str, str]], maker: bool,
                zone_name: str) -> HeldPayee:

    name = str(held["payee"])
    # the row that held these details: the payee's, with the account the register masked so
    mine = [(account, cells) for (key, account), cells in typed.items() if key == fold(name)]
    after = next((cells for account, cells in mine if masked(account) == held["account"]),
                 mine[0][1] if mine else {})
    payee = register.find(name)
    before_paid = (payee.last_good or payee.last) if payee is not None else None
    before = dict(before_paid.shown) if before_paid is not None else {}
    before_id = ""
    if payee is not None:
        ids = sorted(v.upper() for k, v in payee.keys if k in ("company", "ic"))
        before_id = ", ".join(ids)

    def secret(value: str, mask: Any) -> str:
        return Revealed(value) if maker else mask(value) if value else ""

    new_account = plain_account(after.get("account_number", ""))
    old_account = plain_account(before.get("account_number", ""))
    after_id = _id_of(after) or before_id

    def plain(label: str, old: str, new: str) -> Detail:
        return Detail(label, old, new, fold(old) != fold(new))

    details = [
        plain("name", before.get("recipient_name", ""),
              after.get("recipient_name") or str(held.get("name", ""))),
        Detail("account", masked(old_account), secret(new_account, masked),
               old_account != new_account),
        plain("bank", before.get("bank_name", ""),
              after.get("bank_name") or str(held.get("bank", ""))),
        plain("bank city", before.get("bank_city", ""), after.get("bank_city", "")),
        Detail("ID", secret(before_id, masked_id), secret(after_id, masked_id),
               fold(before_id) != fold(after_id)),
    ]
    if before.get("sort_code") or after.get("sort_code"):
        details.append(plain("sort code", before.get("sort_code", ""),
                             after.get("sort_code", "")))
    # the day of the `time_zone` setting, as every page counts days (a payout at 17:00 UTC
    # was paid the next day in Shanghai)
    last = (f"{clock.day(before_paid.at, zone_name).isoformat()}, {before_paid.ref}"
            if before_paid is not None else "")
    return HeldPayee(
        payee=Revealed(name) if maker else masked_id(name) if _looks_secret(name) else name,
        name=details[0].after, account=masked(new_account) or str(held["account"]),
        full_account=Revealed(new_account) if maker else "",
        confirmed=list(held.get("confirmed", [])), details=details, last_paid=last)


def _looks_secret(name: str) -> bool:
    return mask_ids(name) != name


def payees_page(settings: Settings, maker: bool) -> dict[str, Any]:
    """The Payees page's data: the engine's `payee_list`, its held payees made ready to read back."""
    found = payee_list(settings)
    return {**found, "held": held_for_read_back(settings, found["held"], maker=maker)}
