"""The table Rows on a reviewed batch's page: who gets what, a hundred rows at a time.

An approver signs a plan of thousands of rows; the totals say how much, this table says to
whom: each row's sheet row, payout_ref, payee name, masked account, amount and currency, what
the recipient gets (CNY to deliver), and the review's finding about it:

    new        the payee was never paid
    changed    the payee's bank details differ from its last payout (paid on a confirmation)
    held       not paid in this batch (a payee to confirm, a repeat of a recent payment)
    released   a repeat the batch's maker released (`pay anyway`)
    known      paid before on these details
    not paid   neither quoted nor held (invalid, refused by the service)

The findings are the review's facts (the dry run's row statuses, the payee register's
reason per row, the releases the plan lists), never read out of messages. The rows are the
stored dry run's, read once per review and kept while the console runs (a dry run never
changes), so a page of 2,000 rows is a slice, not a new read or a new quote.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from functools import lru_cache
from urllib.parse import urlencode

from batchpay.console.batches import Batch, Review
from batchpay.engine import KNOWN, NEW, run_inputs
from batchpay.money import masked
from batchpay.settings.model import JournalLocation, Settings
from batchpay.statuses import Status

PAGE_SIZE = 100
LARGEST = 5  # the largest rows shown above the table
NEW_, CHANGED_, HELD_, RELEASED_, KNOWN_, NOT_PAID = (
    "new", "changed", "held", "released", "known", "not paid")
FINDINGS = (NEW_, CHANGED_, HELD_, RELEASED_, KNOWN_, NOT_PAID)


@dataclass(frozen=True)
class RowLine:
    """One row as the table shows it (the account masked)."""

    row: int
    payout_ref: str
    name: str
    account: str
    amount: Decimal | None
    currency: str
    deliver: Decimal | None  # what the recipient gets, in `deliver_currency`
    deliver_currency: str
    finding: str


@dataclass
class RowsView:
    """One page of the table, under a filter by finding ("": every row)."""

    batch_id: str
    lines: list[RowLine]
    finding: str
    page: int
    pages: int
    matching: int  # rows under the filter
    total: int  # rows of the review
    counts: dict[str, int]  # rows per finding, of the whole review
    largest: list[RowLine]

    @property
    def first(self) -> int:
        """The place (from 1) of the page's first row among the matching rows."""
        return (self.page - 1) * PAGE_SIZE + 1 if self.lines else 0

    @property
    def last(self) -> int:
        return self.first + len(self.lines) - 1 if self.lines else 0

    def link(self, page: int, finding: str | None = None) -> str:
        """This batch's page at another page of the table (the filter kept unless given)."""
        chosen = self.finding if finding is None else finding
        query = {k: v for k, v in (("finding", chosen), ("page", str(page)))
                 if v and v != "1"}
        return f"/batches/{self.batch_id}{'?' + urlencode(query) if query else ''}#rows"


def finding_of(status: str, ref: str, reason: str, changed_fields: bool,
               released: Mapping[str, object]) -> str:
    """A row's finding from the review's facts: the dry run's status, the payee register's
    reason for the row ("" when it has none: a payee paid before on the same details) and
    whether its details differ from the last payout, the plan's released repeats."""
    if status == Status.HELD:
        return HELD_
    if status != Status.NOT_SENT:
        return NOT_PAID
    if ref in released:
        return RELEASED_
    if reason == NEW:
        return NEW_
    if reason and (reason != KNOWN or changed_fields):
        return CHANGED_  # a confirmed change: KNOWN now, with the fields that changed
    return KNOWN_


@lru_cache(maxsize=16)
def _stored(journal: JournalLocation, run_id: str, released: tuple[str, ...],
            reasons: tuple[tuple[int, str, bool], ...]) -> tuple[RowLine, ...]:
    """Every row of the dry run `run_id`, read once (the key names what a review saw)."""
    by_row = {row: (reason, fields) for row, reason, fields in reasons}
    repeats = dict.fromkeys(released)
    columns, rows = run_inputs(journal, run_id)

    def cell(values: list[object], name: str) -> str:
        i = columns.index(name) if name in columns else -1
        value = values[i] if 0 <= i < len(values) else None
        return "" if value is None else str(value).strip()

    lines = []
    for r in rows:
        reason, fields = by_row.get(r.row, ("", False))
        lines.append(RowLine(
            row=r.row, payout_ref=r.payout_ref or cell(r.inputs, "payout_ref"),
            name=cell(r.inputs, "recipient_name"),
            account=masked(cell(r.inputs, "account_number")),
            amount=r.amount, currency=r.source_currency or cell(r.inputs, "source_currency"),
            deliver=r.target_amount if r.target_amount is not None else r.asked,
            deliver_currency=r.target_currency or cell(r.inputs, "currency"),
            finding=finding_of(r.status, r.payout_ref, reason, fields, repeats)))
    return tuple(lines)


def review_rows(settings: Settings, review: Review) -> tuple[RowLine, ...]:
    """The review's rows with their findings (kept per review: a dry run never changes)."""
    reasons = tuple(sorted((int(c["row"]), str(c["reason"]), bool(c.get("fields")))
                           for c in review.get("payee_changes", [])))
    return _stored(settings.journal, review["run_id"],
                   tuple(sorted(review.get("released", {}))), reasons)


def rows_view(settings: Settings, batch: Batch, query: Mapping[str, str]) -> RowsView | None:
    """The page of the table that `query` asks for (`finding`, `page` from 1): None before a
    review. A page beyond the last shows the last; an unknown finding shows every row."""
    review: Review | None = batch.meta.get("review")
    if not review or not review.get("run_id"):
        return None
    rows = review_rows(settings, review)
    finding = query.get("finding", "")
    finding = finding if finding in FINDINGS else ""
    matching = [r for r in rows if r.finding == finding] if finding else list(rows)
    pages = max(1, math.ceil(len(matching) / PAGE_SIZE))
    try:
        page = min(max(1, int(query.get("page", "1"))), pages)
    except ValueError:
        page = 1
    counts = Counter(r.finding for r in rows)
    paid = [r for r in rows if r.finding not in (HELD_, NOT_PAID) and r.deliver is not None]
    largest = sorted(paid, key=lambda r: (r.deliver or Decimal(0), -r.row), reverse=True)
    return RowsView(batch_id=batch.id, lines=matching[(page - 1) * PAGE_SIZE:page * PAGE_SIZE],
                    finding=finding, page=page, pages=pages, matching=len(matching),
                    total=len(rows), counts={f: counts[f] for f in FINDINGS if counts[f]},
                    largest=largest[:LARGEST])
