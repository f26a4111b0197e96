"""Notifications: what each event says, to whom it is queued, and its delivery from the
journal's outbox (batchpay.journal.notices) with retries.

The events: a batch waits for approval (to approvers), a batch was approved or rejected (to
its maker), a payment ended with its rows counted per status (to everyone), and payees held
by a payment (to everyone). Who a receiver is for is said in the `notify` setting
(batchpay.settings.notify). Each event is queued once per receiver, under a key made of the
event and its subject, so that queueing it again (a page reloaded, a command run twice)
sends nothing twice.

A notification never blocks or changes a payment: queueing is one insert into its own table
after the payment's records are written, delivery happens apart (the console's worker,
`batchpay notify send`), and a receiver that cannot be reached leaves its record queued,
due again later with a longer wait each time, until it is delivered or its tries run out.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from batchpay.journal.notices import NoticeDraft, NoticeRecord
from batchpay.journal.store import Journal
from batchpay.settings.model import JournalLocation
from batchpay.settings.notify import Receiver, receivers
from batchpay.statuses import Status

log = logging.getLogger("batchpay.notify")

ATTEMPTS = 12  # tries of one notice before it is failed for good: about a day of waiting
FIRST_WAIT = 30.0  # seconds before the second try; doubled after each failed try
LONGEST_WAIT = 4 * 3600.0


class NoticeKind(StrEnum):
    BATCH_WAITING = "batch.waiting"  # to approvers: a reviewed batch waits for them
    BATCH_APPROVED = "batch.approved"  # to its maker
    BATCH_REJECTED = "batch.rejected"  # to its maker
    PAYMENT_ENDED = "payment.ended"  # to everyone: counts per status
    PAYEE_HELD = "payee.held"  # to everyone: payees a payment held


AUDIENCE: dict[NoticeKind, str] = {  # "" is everyone
    NoticeKind.BATCH_WAITING: "approver", NoticeKind.BATCH_APPROVED: "maker",
    NoticeKind.BATCH_REJECTED: "maker", NoticeKind.PAYMENT_ENDED: "",
    NoticeKind.PAYEE_HELD: "",
}


class NoticeFailed(Exception):
    """One delivery not taken by its receiver (a signal: it ends as the record's state)."""

    def __init__(self, message: str, *, retry: bool = True) -> None:
        super().__init__(message)
        self.message, self.retry = message, retry


# how a notice leaves: (URL, title, body), raising NoticeFailed (batchpay.notify.send)
Send = Callable[[str, str, str], None]


def queue(journal: Journal, notify: tuple[str, ...], kind: NoticeKind, subject: str,
          title: str, body: str) -> int:
    """Queue one event for every receiver it is for; how many records are new."""
    audience = AUDIENCE[kind]
    return journal.queue_notices(
        NoticeDraft(event=f"{kind}:{subject}", target=r.key, shown=r.shown, kind=str(kind),
                    title=title, body=body)
        for r in receivers(notify) if r.gets(audience))


def queue_at(journal_at: JournalLocation, notify: tuple[str, ...], kind: NoticeKind,
             subject: str, title: str, body: str) -> None:
    """`queue` into the journal at `journal_at` (opened for it and closed)."""
    with Journal(journal_at) as journal:
        queue(journal, notify, kind, subject, title, body)


def notice_records(journal_at: JournalLocation) -> list[NoticeRecord]:
    """The notices' outbox as it stands (none when the journal does not exist yet)."""
    if isinstance(journal_at, Path) and not journal_at.is_file():
        return []
    with Journal.existing(journal_at) as journal:
        return journal.notices()


def queue_payment_ended(journal: Journal, notify: tuple[str, ...], run_id: str,
                        held: Iterable[Mapping[str, object]] = ()) -> int:
    """A payment ended: its rows counted per status, and the payees it held, to everyone.
    Read from the run's record as `finish_run` wrote it. Never raises: the payment is
    recorded already, and a notice that cannot be queued must not change its outcome."""
    if not notify:
        return 0
    try:
        return _queue_payment_ended(journal, notify, run_id, held)
    except Exception:  # noqa: BLE001 - logged; the payment's outcome stands
        log.exception("the notification of run %s could not be queued", run_id)
        return 0


def _queue_payment_ended(journal: Journal, notify: tuple[str, ...], run_id: str,
                         held: Iterable[Mapping[str, object]]) -> int:
    run = journal.run(run_id)
    if run is None:
        return 0
    name = Path(run.sheet).name
    counts: dict[str, int] = run.info.get("counts", {})
    shown = ", ".join(f"{status} {n:,}" for status, n in sorted(counts.items()))
    lines = [f"Payment of {name} ended ({run.outcome or 'finished'}), run {run_id}.",
             "", "Rows per status:"]
    lines += [f"  {status}: {n:,}" for status, n in sorted(counts.items())]
    totals: dict[str, str] = run.info.get("totals", {})
    if totals:
        lines += ["", "Debited by this run:"]
        lines += [f"  {currency} {amount}" for currency, amount in sorted(totals.items())]
    added = queue(journal, notify, NoticeKind.PAYMENT_ENDED, run_id,
                  f"Payment ended: {name}: {shown or 'no rows'}", "\n".join(lines))
    payees = [c for c in held if c.get("decision") == Status.HELD]
    if payees:
        body = [f"The payment of {name} (run {run_id}) held {len(payees)} row(s): the payee's "
                "details are new or changed and wait for a confirmation.", ""]
        body += [f"  row {c.get('row')}: {c.get('payout_ref')}: {c.get('payee')} "
                 f"({c.get('reason')})" for c in payees]
        added += queue(journal, notify, NoticeKind.PAYEE_HELD, run_id,
                       f"Payee held: {len(payees)} row(s) of {name}", "\n".join(body))
    return added


@dataclass
class Delivery:
    """What one delivery round did."""

    sent: list[NoticeRecord] = field(default_factory=list)
    retrying: list[tuple[NoticeRecord, str]] = field(default_factory=list)  # due again later
    failed: list[tuple[NoticeRecord, str]] = field(default_factory=list)  # for good

    def lines(self) -> list[str]:
        out = [f"Notifications: {len(self.sent)} sent, {len(self.retrying)} to try again "
               f"later, {len(self.failed)} failed for good."]
        out += [f"  not delivered to {r.shown}: {r.title}: {why}"
                for r, why in [*self.retrying, *self.failed]]
        return out


def wait_after(attempts: int, first: float = FIRST_WAIT) -> float:
    """The wait before the next try after `attempts` failed ones: doubled each time."""
    return float(min(first * 2.0 ** max(attempts - 1, 0), LONGEST_WAIT))


def deliver(journal: Journal, notify: tuple[str, ...], send: Send, *, everything: bool = False,
            first_wait: float = FIRST_WAIT) -> Delivery:
    """Deliver the queued notices that are due (`everything`: those waiting for a retry too).
    Each try is taken in the outbox first and its end recorded, so that two workers never
    send one notice twice and a crash mid-send leaves it `sending`, shown, not resent."""
    by_key: dict[str, Receiver] = {r.key: r for r in receivers(notify)}
    done = Delivery()
    records = journal.notices() if everything else journal.due_notices()
    for rec in records:
        if rec.state != "queued":
            continue
        target = by_key.get(rec.target)
        if target is None:
            why = "its receiver is no longer in the notify setting"
            journal.notice_not_sent(rec.event, rec.target, why, final=True)
            done.failed.append((rec, why))
            continue
        if not journal.take_notice(rec.event, rec.target):
            continue  # another worker took it
        try:
            send(target.url, rec.title, rec.body)
        except Exception as exc:  # noqa: BLE001 - any failure ends as the record's state
            failure = exc if isinstance(exc, NoticeFailed) else NoticeFailed(
                f"{type(exc).__name__}: {exc}")
            final = not failure.retry or rec.attempts + 1 >= ATTEMPTS
            journal.notice_not_sent(rec.event, rec.target, failure.message, final=final,
                                    retry_in=wait_after(rec.attempts + 1, first_wait))
            (done.failed if final else done.retrying).append((rec, failure.message))
            log.info("notice %s to %s not delivered: %s", rec.event, rec.shown, failure.message)
            continue
        journal.notice_sent(rec.event, rec.target)
        done.sent.append(rec)
    return done
