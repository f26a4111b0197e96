"""`batchpay statement`: a period's payouts as an auditor reconciles them, from the journal alone.

    the chain checked ─► every payout request of the period, replayed from the chain's events
        ─► one line per payout_ref (its latest request in the period) ─► refunds
        ─► per source currency: debited, refunded, net debit, fees, delivered, in doubt,
           and the wallet as the period's runs read it before and after (from the chain's
           run events, not the runs table)

A payout request belongs to the period of its intent (the event written before it left),
counted in the days of the `time_zone` setting (`batchpay.days`). Each request's amounts come from its intent event (the quote it was paid on) and
its state from the events after it, so a payout_ref that failed and was paid again shows
both: the refund of the first and the money of the second. The ledger only holds a ref's
latest request; the chain holds them all, and is what `verify` vouches for.

Money that left the wallet and stays out: PENDING, PROCESSING, COMPLETED and FAILED (a
failed payout's money is back only once it is REFUNDED). A request in doubt (UNKNOWN) may
have taken money: counted on its own, never in the net debit.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import Any

from batchpay.clock import stamp
from batchpay.days import FALLBACK_ZONE, Period
from batchpay.errors import JournalTampered
from batchpay.journal.integrity import check as check_journal
from batchpay.journal.integrity import replay_runs
from batchpay.journal.reads import payout_events_before, payout_events_from
from batchpay.journal.records import ChainCheck, LedgerEntry, RunRecord, as_decimal
from batchpay.journal.store import Journal
from batchpay.money import masked
from batchpay.statuses import IN_DOUBT, Status, display_status

# a request's money left the wallet and has not come back
MONEY_OUT = frozenset({Status.PENDING, Status.PROCESSING, Status.COMPLETED, Status.FAILED})
# the recipient has, or will have, the target amount
DELIVERING = frozenset({Status.PENDING, Status.PROCESSING, Status.COMPLETED})


@dataclass
class Request:
    """One payout request, replayed from the chain: its quote's money and its latest state."""

    attempt: int
    payout_ref: str
    run_id: str
    sent_at: str
    status: str = Status.UNKNOWN
    amount: Decimal | None = None
    fee: Decimal | None = None
    total_debit: Decimal | None = None
    target_amount: Decimal | None = None
    source_currency: str = ""
    target_currency: str = ""
    reference_number: str = ""
    payout_id: str = ""
    status_at: str = ""  # when it took its latest state

    @property
    def money_out(self) -> bool:
        return self.status in MONEY_OUT


@dataclass
class StatementLine:
    """A payout_ref of the period: its latest request, and what it relied on."""

    payout_ref: str
    status: str
    reference_number: str
    recipient_name: str
    account: str  # masked
    source_currency: str
    amount: Decimal  # source paid (requests whose money is out)
    fee: Decimal
    total_debit: Decimal
    target_currency: str
    delivered: Decimal  # what the recipient has or will have
    requests: int
    runs: list[str]
    plans: list[str]
    approvers: list[str]
    confirmations: list[str]
    first_sent: str
    updated: str


@dataclass
class CurrencyTotal:
    currency: str
    payouts: int = 0  # payout_refs with money out
    requests: int = 0  # requests accepted or in doubt
    debited: Decimal = Decimal(0)  # every request accepted by the service, refunded or not
    refunded: Decimal = Decimal(0)
    fees: Decimal = Decimal(0)  # of the money that stays out
    amount: Decimal = Decimal(0)  # source paid, fees apart, of the money that stays out
    in_doubt: int = 0
    in_doubt_debit: Decimal = Decimal(0)
    delivered: dict[str, Decimal] = field(default_factory=dict)  # target currency -> amount
    wallet_before: Decimal | None = None  # the period's first run, before paying
    wallet_after: Decimal | None = None  # its last run, after paying

    @property
    def net_debit(self) -> Decimal:
        return self.debited - self.refunded

    @property
    def wallet_movement(self) -> Decimal | None:
        if self.wallet_before is None or self.wallet_after is None:
            return None
        return self.wallet_before - self.wallet_after


@dataclass
class Statement:
    start: date
    end: date  # inclusive
    lines: list[StatementLine]
    refunds: list[Request]
    totals: dict[str, CurrencyTotal]
    runs: list[RunRecord]
    chain_head: str
    events: int
    journal: str
    made_at: str
    zone: str = FALLBACK_ZONE  # whose days the period counts
    # every request of the period, in the order made (lines keep a ref's latest only)
    requests: list[Request] = field(default_factory=list)

    @property
    def period(self) -> str:
        return Period(self.start, self.end, self.zone).label


def replay_requests(journal: Journal, since: str, until: str) -> list[Request]:
    """Every payout request whose intent falls in [since, until), in the order they were made,
    each with the latest state the chain records for it.

    Events about a ref follow its latest intent (the journal never applies a late report
    about an earlier request: `Journal.apply_state`), so each event belongs to the request
    its ref last had."""
    current: dict[str, Request] = {}
    found: list[Request] = []
    for at, kind, run_id, ref, text in payout_events_before(journal, until):
        data = json.loads(text)
        if kind == "payout.intent":
            request = Request(int(data.get("attempt", 0)), ref, run_id, at)
            current[ref] = request
            if at >= since:
                found.append(request)
        elif ref in current and "status" in data:
            request = current[ref]
        else:
            continue
        _apply(request, data, at)
    # states reported after the period still count (a request of the 30th settles on the
    # 1st), until a later request of the same ref takes its place
    late = {r.payout_ref: r for r in found if current.get(r.payout_ref) is r}
    for at, kind, ref, text in payout_events_from(journal, until):
        if kind == "payout.intent":
            late.pop(ref, None)
            continue
        if ref in late:
            data = json.loads(text)
            if "status" in data:
                _apply(late[ref], data, at)
    return found


def _apply(request: Request, data: dict[str, Any], at: str) -> None:
    status = data.get("status")
    if status:
        request.status, request.status_at = display_status(status), at
    for name in ("amount", "fee", "total_debit", "target_amount"):
        if data.get(name) not in (None, ""):
            setattr(request, name, as_decimal(str(data[name])))
    for name in ("source_currency", "target_currency", "reference_number", "payout_id"):
        if data.get(name):
            setattr(request, name, str(data[name]))


def build_statement(journal: Journal, start: date, end: date,
                    zone: str = FALLBACK_ZONE, *, verified: ChainCheck | None = None
                    ) -> Statement:
    """The statement of [start, end] (days of `zone`, both included). A journal that
    disagrees with its chain is refused: a statement vouches for the chain it was rendered
    from. `verified`: the check this caller just made of the same open journal (a second
    statement of it need not walk the chain again)."""
    period = Period(start, end, zone)
    since, until = period.since, period.until
    checked = verified if verified is not None and verified.ok else check_journal(journal)
    if not checked.ok:
        raise JournalTampered(
            f"The journal {journal.where} was changed outside batchpay: {checked.problem}. "
            "No statement was written.",
            hint="Keep this copy for the auditor, restore the journal from a backup, and "
            "run `batchpay verify` to confirm it.")
    requests = replay_requests(journal, since, until)
    # the runs as the chain has them (their plans, approvers, confirmations and wallet
    # figures), not as the runs table, a plain table, may have been edited to say
    runs = replay_runs(journal.db)
    ledger = journal.entries({r.payout_ref for r in requests})
    by_ref: dict[str, list[Request]] = {}
    for request in requests:
        by_ref.setdefault(request.payout_ref, []).append(request)

    totals: dict[str, CurrencyTotal] = {}
    lines = []
    for ref, made in by_ref.items():
        lines.append(_line(ref, made, ledger.get(ref), runs))
        for request in made:
            _count(totals, request)
    for line in lines:
        if line.total_debit:
            totals[line.source_currency].payouts += 1
    period_runs = [r for r in runs.values()
                   if since <= r.started_at < until and r.kind != "dry-run"]
    _wallets(totals, period_runs)
    refunds = [r for r in requests if r.status == Status.REFUNDED]
    return Statement(start, end, lines, refunds, dict(sorted(totals.items())), period_runs,
                     checked.head, checked.events, journal.where, stamp(), zone, requests)


def _line(ref: str, made: list[Request], entry: LedgerEntry | None, runs: dict[str, RunRecord]
          ) -> StatementLine:
    last = made[-1]
    out = [r for r in made if r.money_out]
    details: dict[str, Any] = {}
    if entry is not None:
        try:
            details = json.loads(entry.details)
        except ValueError:
            details = {}
    run_ids = list(dict.fromkeys(r.run_id for r in made))
    infos = [runs[i].info for i in run_ids if i in runs]
    confirmations = [f"{c['payee']}: {c['confirmed_by']}" for info in infos
                     for c in info.get("payee_changes", [])
                     if c.get("payout_ref") == ref and c.get("confirmed_by")
                     and c.get("decision") != Status.HELD]
    return StatementLine(
        payout_ref=ref, status=last.status, reference_number=last.reference_number,
        recipient_name=str(details.get("recipient_name", "")),
        account=masked(details.get("account_number", "")),
        source_currency=last.source_currency,
        amount=sum((r.amount or Decimal(0) for r in out), Decimal(0)),
        fee=sum((r.fee or Decimal(0) for r in out), Decimal(0)),
        total_debit=sum((r.total_debit or Decimal(0) for r in out), Decimal(0)),
        target_currency=last.target_currency,
        delivered=sum((r.target_amount or Decimal(0) for r in made
                       if r.status in DELIVERING), Decimal(0)),
        requests=len(made), runs=run_ids,
        plans=list(dict.fromkeys(str(i["plan_id"]) for i in infos if i.get("plan_id"))),
        approvers=list(dict.fromkeys(str(i["plan_approvers"]) for i in infos
                                     if i.get("plan_approvers"))),
        confirmations=list(dict.fromkeys(confirmations)),
        first_sent=made[0].sent_at, updated=last.status_at)


def _count(totals: dict[str, CurrencyTotal], request: Request) -> None:
    if request.status in (Status.NOT_SENT, Status.REJECTED, Status.QUOTE_FAILED):
        return  # refused or never received: no money moved
    total = totals.setdefault(request.source_currency, CurrencyTotal(request.source_currency))
    debit = request.total_debit or Decimal(0)
    total.requests += 1
    if request.status in IN_DOUBT or request.status == Status.UNKNOWN:
        total.in_doubt += 1
        total.in_doubt_debit += debit
        return
    total.debited += debit
    if request.status == Status.REFUNDED:
        total.refunded += debit
        return
    total.fees += request.fee or Decimal(0)
    total.amount += request.amount or Decimal(0)
    if request.status in DELIVERING and request.target_amount is not None:
        target = request.target_currency or "?"
        total.delivered[target] = total.delivered.get(target, Decimal(0)) + request.target_amount


def _wallets(totals: dict[str, CurrencyTotal], runs: Iterable[RunRecord]) -> None:
    """The wallet as the period's runs read it: before the first, after the last."""
    ordered = sorted(runs, key=lambda r: r.started_at)  # stable: ties keep the journal's order
    for currency, total in totals.items():
        befores = [r.info["wallet_before"][currency] for r in ordered
                   if currency in r.info.get("wallet_before", {})]
        afters = [r.info["wallet_after"][currency] for r in ordered
                  if currency in r.info.get("wallet_after", {})]
        total.wallet_before = Decimal(str(befores[0])) if befores else None
        total.wallet_after = Decimal(str(afters[-1])) if afters else None


def default_statement_path(start: date, end: date) -> Path:
    return Path(f"statement-{start.isoformat()}-{end.isoformat()}.xlsx")


def totals_by_run(journal: Journal) -> dict[str, dict[str, CurrencyTotal]]:
    """Each run's money per source currency, counted as a statement counts it: from the
    chain's events, every request of the run with its latest state (a row refunded weeks
    later shows as refunded in the run that sent it). History shows these per run and per
    batch; the wallet figures are the statement's alone."""
    by_run: dict[str, dict[str, CurrencyTotal]] = {}
    paid: set[tuple[str, str]] = set()
    for request in replay_requests(journal, "", "9999-12-31T23:59:59"):
        totals = by_run.setdefault(request.run_id, {})
        _count(totals, request)
        if request.money_out and request.total_debit and \
                (request.run_id, request.payout_ref) not in paid:
            paid.add((request.run_id, request.payout_ref))
            totals[request.source_currency].payouts += 1
    return by_run
