"""A new payee that looks like a known one: the same name, or a name or payee_id that differs
only by what a reader cannot see (a U+202E, a Hangul filler, an inner space) or by a letter
from another alphabet that looks the same (a Cyrillic Р for a Latin P).

Such a row is how a look-alike supplier gets paid as "new" while the operator believes
they pay the supplier they know: it is held until a person confirms it. Two different people
may well share a name; the hold costs one phone call, a wrong account costs the payment.
"""

from __future__ import annotations

import unicodedata
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from batchpay.controls.payee_keys import PayeeValues, fold, shows_nothing, skeleton
from batchpay.money import masked

if TYPE_CHECKING:
    from batchpay.controls.payee_records import Payee

LOOKED_AT = (("payee_id", "payee_id"), ("recipient_name", "recipient name"))


@dataclass(frozen=True)
class LookAlike:
    payee: Payee  # the known payee the row looks like
    field: str  # "payee_id" or "recipient_name"
    typed: str  # the row's value
    known: str  # the known payee's value it looks like
    same: bool  # the very same text (else only alike)

    def message(self) -> str:
        what = dict(LOOKED_AT)[self.field]
        account = self.payee.last.shown["account_number"] if self.payee.last else ""
        paid = f"paid to {masked(account)}" if account else "paid before"
        if self.same:
            return (f"look-alike: payee {self.payee.name} ({paid}) has the same {what}, "
                    f"{visible(self.typed)}, but this row gives none of its payee_id, "
                    "company_id or ic_number, and pays an account never paid to it")
        return (f"look-alike: {what} {visible(self.typed)} looks like {visible(self.known)}, "
                f"the {what} of payee {self.payee.name} ({paid}), and pays an account never "
                "paid to it")


class LookAlikes:
    """Every known payee by the skeleton of each payee_id and name it was paid under."""

    def __init__(self, payees: Iterable[Payee]) -> None:
        self._index: dict[tuple[str, str], list[tuple[Payee, str]]] = defaultdict(list)
        for payee in payees:
            names = {paid.shown["recipient_name"] for paid in payee.payouts}
            texts = [("recipient_name", name) for name in names]
            if ("id", fold(payee.name)) in payee.keys:
                texts.append(("payee_id", payee.name))
            for field, text in texts:
                key = skeleton(text)
                if key:
                    self._index[(field, key)].append((payee, text))

    def match(self, values: PayeeValues, payee: Payee | None) -> LookAlike | None:
        """The known payee (not the row's own) whose payee_id or name the row's looks like;
        one with the very same folded text first."""
        found: list[LookAlike] = []
        for field, _ in LOOKED_AT:
            typed = str(values.get(field) or "")
            if not skeleton(typed):
                continue
            for other, known in self._index.get((field, skeleton(typed)), ()):
                if other is not payee:
                    found.append(LookAlike(other, field, typed, known, _same(typed, known)))
        return min(found, key=lambda m: not m.same) if found else None


def _same(typed: str, known: str) -> bool:
    """Typed alike but for case and the spaces around and between words."""
    return " ".join(typed.split()).casefold() == " ".join(known.split()).casefold()


def visible(text: str) -> str:
    """`text` with every character a reader could not tell apart written as its code point:
    `张<U+202E>3`, `SU<U+0420>-001`."""
    return "".join(f"<U+{ord(ch):04X}>" if _unclear(ch) else ch for ch in text)


def _unclear(ch: str) -> bool:
    """Shows as nothing, as a mark on its neighbour, as another space, or as a Latin letter
    or digit it is not."""
    if ch.isascii():
        return False
    looks = skeleton(ch)
    return (shows_nothing(ch) or ch.isspace() or unicodedata.category(ch) == "Mn"
            or (looks.isascii() and looks.isalnum()))
