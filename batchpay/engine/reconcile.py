"""`batchpay reconcile`: the wallet's movements against the journal's, one by one.

    the wallet's side ── the service's transaction list, every state, every page
                     └─ or a statement file exported from the provider's dashboard
    the journal's side ─ the period's payouts, fees and refunds (`books.close_period`)
        ─► pairs by payout id, quote id or reference number and kind of movement
        ─► matched · in the wallet only (money moved outside batchpay) · in the journal only
        ─► per currency: the statement's `movement minus net debit`, explained line by line

The list is read with `state`, `page` and `size` given on every request (the provider
requires all three), per state COMPLETED, PENDING, FAILED and REFUNDED. A payout belongs to
the period of its creation at the service, a journal request to that of its intent; each
side is read a day wider than the period, so that a payout made a second before midnight
and dated a second after it still finds its pair, and only pairs and leftovers that touch
the period are reported.

The statement file (`--statement FILE`) is a CSV with a header: `date` (YYYY-MM-DD or ISO
8601 with a time), `type` (payout, fee, refund; anything else is another movement),
`amount` (signed as the wallet sees it: negative leaves it), `currency`, and optionally
`reference` (the service's reference number), `payout_id` and `description`.
"""

from __future__ import annotations

import asyncio
import csv
from datetime import datetime, time, timedelta
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from batchpay.clock import restamp, stamp
from batchpay.days import Period
from batchpay.engine.books import FEE, PAYOUT, REFUND, close_period
from batchpay.engine.payout_list import EVERY_STATE, read_list
from batchpay.engine.reconcile_lines import (
    KINDS,
    OTHER,
    STATEMENT_COLUMNS,
    Gap,
    GapLine,
    Line,
    Pair,
    Reconciliation,
)
from batchpay.engine.statement import Statement, build_statement
from batchpay.errors import InputError, JournalServiceMismatch
from batchpay.files import check_output
from batchpay.journal.reads import bound_service
from batchpay.journal.records import ChainCheck
from batchpay.journal.store import Journal
from batchpay.provider.client import PayoutClient
from batchpay.provider.errors import PayoutListAbsent
from batchpay.provider.models import Payout
from batchpay.service import Opener
from batchpay.settings.model import Settings
from batchpay.sheet.ref_tag import refs_in_remark


def default_reconcile_path(period: Period) -> Path:
    return Path(f"reconcile-{period.start.isoformat()}-{period.end.isoformat()}.xlsx")


def reconcile_period(settings: Settings, period: Period, out: Path,
                     statement_file: Path | None, connect: Opener, *,
                     overwrite: bool = False) -> Reconciliation:
    """Match, write the workbook to `out`, and return what was found."""
    from batchpay.engine.reconcile_book import write_reconciliation

    check_output(out, overwrite=overwrite)
    wide = Period(period.start - timedelta(days=1), period.end + timedelta(days=1),
                  period.zone_name)
    with Journal.existing(settings.journal) as journal:
        statement = build_statement(journal, period.start, period.end, period.zone_name)
        ours, doubt = journal_lines(journal, wide, ChainCheck(True, statement.events,
                                                              statement.chain_head))
        bound = bound_service(journal)
    if statement_file is not None:
        theirs, source = read_statement_file(statement_file, period), str(statement_file)
        done = match(period, theirs, ours, source)
    else:
        since, until = wide.since, wide.until
        with connect() as service:
            if bound is not None and bound != service.identity:
                raise JournalServiceMismatch(
                    f"This journal records payouts of {bound}, not {service.identity}: "
                    "its movements cannot be matched with that service's.",
                    hint="Reconcile with the journal of that service (--journal or "
                    "BATCHPAY_JOURNAL).")
            theirs, complete, requests = asyncio.run(
                _service_lines(settings, service.base_url, service.api_key, since, until))
        done = match(period, theirs, ours, "the service's transaction list")
        done.complete, done.requests = complete, requests
    for line in done.outside:
        if line.quote_id in doubt:  # batchpay's own request, its answer lost: not outside
            line.description = (f"batchpay's request for {doubt[line.quote_id]}, in doubt in "
                                "the journal (UNKNOWN): run `batchpay sync` "
                                f"({line.description})")
            line.payout_ref = line.payout_ref or doubt[line.quote_id]
    done.chain_head = statement.chain_head
    done.gaps = explain_gaps(statement, done)
    write_reconciliation(done, out)
    return done


def journal_lines(journal: Journal, period: Period, verified: ChainCheck | None = None
                  ) -> tuple[list[Line], dict[str, str]]:
    """The journal's movements of `period`, and its requests in doubt (quote id ->
    payout_ref)."""
    closed = close_period(journal, period, verified=verified)
    return [Line("journal", m.kind, m.at, m.payment.request.sent_at, m.currency, m.amount,
                 m.payment.request.payout_id, m.payment.quote_id, m.reference, m.payout_ref,
                 m.description, m.payment.request.status) for m in closed.movements
            ], closed.in_doubt


def match(period: Period, theirs: list[Line], ours: list[Line], source: str
          ) -> Reconciliation:
    done = Reconciliation(period, source)
    index: dict[tuple[str, str], Line] = {}
    for line in ours:
        for key in line.keys:
            index.setdefault(key, line)
    used: set[int] = set()
    for line in theirs:
        found = next((index[k] for k in line.keys if k in index and id(index[k]) not in used),
                     None)
        if found is None:
            if period.holds(line.anchor):
                done.outside.append(line)
            continue
        used.add(id(found))
        if not (period.holds(line.anchor) or period.holds(found.anchor)):
            continue
        pair = Pair(line, found)
        (done.matched if pair.agrees else done.differ).append(pair)
    done.missing = [x for x in ours if id(x) not in used and period.holds(x.anchor)]
    return done


def explain_gaps(statement: Statement, done: Reconciliation) -> list[Gap]:
    """Each currency's movement minus net debit, as the lines that make it: money moved
    outside batchpay between the first wallet read and the last, movements the journal has
    and the wallet not, and refunds credited after the last read."""
    if not statement.runs:
        return []
    read_from = min(r.started_at for r in statement.runs)
    read_to = max(r.finished_at or r.started_at for r in statement.runs)

    def between(at: str) -> bool:
        return read_from <= restamp(at) <= read_to

    gaps = []
    for currency, total in statement.totals.items():
        if total.wallet_movement is None:
            continue
        gap = Gap(currency, total.wallet_movement, total.net_debit)
        for x in done.outside:
            if x.currency == currency and between(x.at):
                gap.lines.append(GapLine(f"moved outside batchpay: {x.kind} on {done.shown(x.at)}, "
                                         f"reference {x.reference or '(none)'}", -x.amount))
        for x in done.missing:
            if x.currency == currency and statement_holds(statement, x.anchor):
                gap.lines.append(GapLine(f"in the journal, not in the wallet: {x.kind} of "
                                         f"{x.payout_ref}", x.amount))
        for pair in done.differ:
            j, w = pair.journal, pair.wallet
            if j.currency == currency and statement_holds(statement, j.anchor):
                gap.lines.append(GapLine(f"{j.kind} of {j.payout_ref}: the wallet moved "
                                         f"{w.amount}, the journal says {j.amount}",
                                         j.amount - w.amount))
        for pair in done.matched:
            j = pair.journal
            if (j.currency == currency and j.kind == REFUND and not between(j.at)
                    and statement_holds(statement, j.anchor)):
                gap.lines.append(GapLine(f"refund of {j.payout_ref} credited on {done.shown(j.at)}, "
                                         "after the last run read the wallet", j.amount))
        gaps.append(gap)
    return gaps


def statement_holds(statement: Statement, at: str) -> bool:
    return Period(statement.start, statement.end, statement.zone).holds(at)


# ------------------------------------------------------------------ the wallet's side


async def _service_lines(settings: Settings, base_url: str, api_key: str | None, since: str,
                         until: str) -> tuple[list[Line], bool, int]:
    async with PayoutClient.from_settings(settings, base_url=base_url,
                                          api_key=api_key) as client:
        lines, complete = await read_service_lines(client, since, until,
                                                   settings.sync_max_pages)
        return lines, complete, client.requests_sent


async def read_service_lines(client: PayoutClient, since: str, until: str, max_pages: int
                             ) -> tuple[list[Line], bool]:
    """The movements of the payouts the service created in [since, until), read state by
    state as every reader of the list reads it (`engine.payout_list`); False when the list
    was longer than `max_pages` pages. A payout that moved on while the list was read is
    taken in its later state (the states are read in the order payouts move)."""
    payouts: dict[str, Payout] = {}

    def on_page(state: str, items: list[Payout]) -> None:
        for payout in items:
            created = payout.created or ""
            if created and since <= restamp(created) < until:
                payouts[payout.id] = payout

    try:
        read = await read_list(client, EVERY_STATE, max_pages=max_pages, on_page=on_page)
    except PayoutListAbsent as exc:
        raise InputError(
            f"The service has no transaction list (404 on {exc.request}): the "
            "wallet's movements cannot be read from it.",
            hint="Export the wallet's statement from the provider's dashboard and "
            "run again with --statement FILE (the README says its columns).",
        ) from None
    return [line for payout in payouts.values() for line in service_movements(payout)], \
        read.complete


def service_movements(payout: Payout) -> list[Line]:
    """A payout record's movements: its source amount and fee left the wallet; once
    REFUNDED, its whole debit came back."""
    quote = _part(payout.raw, "quote")
    source = _part(quote, "source")
    fee_part = quote.get("fee")
    fee = _number(fee_part.get("amount") if isinstance(fee_part, dict) else fee_part)
    amount = _number(source.get("amount"))
    total = _number(_part(quote, "summary").get("total")) or amount + fee
    currency = str(source.get("currency") or "")
    created = payout.created or ""
    common: dict[str, Any] = {"payout_id": payout.id, "quote_id": payout.quote_id or "",
                              "reference": payout.reference_number or "",
                              "payout_ref": " ".join(sorted(refs_in_remark(payout.remark))),
                              "description": payout.remark or "", "state": payout.state}
    found = [Line("wallet", PAYOUT, created, created, currency, -amount, **common)]
    if fee:
        found.append(Line("wallet", FEE, created, created, currency, -fee, **common))
    if payout.state == "REFUNDED":
        found.append(Line("wallet", REFUND, payout.processed or created, created, currency,
                          total, **common))
    return found


def _part(record: Any, name: str) -> dict[str, Any]:
    value = record.get(name) if isinstance(record, dict) else None
    return value if isinstance(value, dict) else {}


def _number(value: Any) -> Decimal:
    if value is None or isinstance(value, bool):
        return Decimal(0)
    try:
        return Decimal(str(value))
    except InvalidOperation:
        return Decimal(0)


def read_statement_file(path: Path, period: Period) -> list[Line]:
    """The movements of a statement CSV (module docstring); a line that cannot be read is
    refused with its line number, never skipped."""
    try:
        with open(path, encoding="utf-8-sig", newline="") as handle:
            rows = list(csv.reader(handle))
    except UnicodeDecodeError:
        raise InputError(f"{path} is not UTF-8 text.",
                         hint="Save the statement as CSV UTF-8.") from None
    if not rows:
        raise InputError(f"{path} is empty.", hint=f"Its header: {','.join(STATEMENT_COLUMNS)}")
    header = [h.strip().lower() for h in rows[0]]
    lacking = [c for c in STATEMENT_COLUMNS[:4] if c not in header]
    if lacking:
        raise InputError(f"{path} has no column {', '.join(lacking)}.",
                         hint=f"Its header: {','.join(STATEMENT_COLUMNS)}")
    lines = []
    for number, row in enumerate(rows[1:], start=2):
        if not any(cell.strip() for cell in row):
            continue
        cells = dict(zip(header, (c.strip() for c in row), strict=False))
        try:
            at = _when(cells["date"], period)
            amount = Decimal(cells["amount"].replace(",", ""))
        except (ValueError, InvalidOperation):
            raise InputError(f"{path}, line {number}: date {cells.get('date')!r} or amount "
                             f"{cells.get('amount')!r} cannot be read.",
                             hint="Dates as YYYY-MM-DD (or ISO 8601 with a time), amounts as "
                             "signed numbers with a decimal point (-1000.50).") from None
        if not amount.is_finite():
            raise InputError(f"{path}, line {number}: amount {cells['amount']!r} is not a "
                             "number.")
        kind = cells["type"].lower()
        lines.append(Line("wallet", kind if kind in KINDS else OTHER, at, at,
                          cells["currency"].upper(), amount,
                          payout_id=cells.get("payout_id", ""),
                          reference=cells.get("reference", ""),
                          description=cells.get("description", "")))
    return lines


def _when(text: str, period: Period) -> str:
    """A statement's date: a day is that day's noon in the period's zone."""
    if "T" in text or " " in text.strip():
        return restamp(text.replace(" ", "T", 1))
    day = datetime.fromisoformat(text).date()
    return stamp(datetime.combine(day, time(12), period.tz))
