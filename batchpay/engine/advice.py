"""Remittance advice: after a run, each payee whose payouts of that run COMPLETED gets one
e-mail with a PDF (batchpay.engine.advice_pdf) of what it was paid.

What an advice says is read from the journal alone: the name and account exactly as the
payout request sent them, the amount the service's quote delivered, the service's
reference number. Only payouts whose request this run made are advised (a run that shows an
earlier run's payout does not advise it again), and only once every row of that payee in
the run is final: a payee with a row still PENDING waits for `sync`, then `advise`, so that
it gets one advice, not one per settled row. FAILED and REFUNDED rows are never advised.

Every advice goes through the journal's outbox (batchpay.journal.outbox): queued once per
run and payee, then sent. A mail server that cannot be reached leaves the advice queued for
the next `batchpay advise`; nothing here touches a payout, and no mail error reaches a run's
exit code. The mailer is handed in (batchpay.mail's SMTP one, or a test's).
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from email.message import EmailMessage
from email.utils import formatdate, make_msgid
from pathlib import Path
from typing import Any, Protocol

import stamina

from batchpay import clock
from batchpay.controls.payee_keys import PayeeValues, keys_of
from batchpay.engine.advice_pdf import (
    AdviceDocument,
    AdviceLine,
    CjkFont,
    find_cjk_font,
    masked,
    reduced_font,
    render_advice,
)
from batchpay.engine.render import find_run
from batchpay.errors import BatchpayError
from batchpay.journal.outbox import AdviceDraft, AdviceRecord, AdviceState
from batchpay.journal.records import RunRecord
from batchpay.journal.store import Journal
from batchpay.settings.model import Mail, Settings
from batchpay.sheet.columns import normalize_header
from batchpay.statuses import Status

EMAIL_COLUMN = "payee_email"
# a payee's rows in these states are not final yet: its advice waits for them
_NOT_FINAL = {Status.PENDING, Status.PROCESSING, Status.UNKNOWN, "SENDING"}


class MailFailed(Exception):
    """One advice not taken by the mail server (a signal: it ends as the outbox record's
    state and last error, never as a payout's). `retry`: worth trying again (unreachable,
    4xx); `server`: the next advice cannot go either (unreachable, login refused)."""

    def __init__(self, message: str, *, retry: bool, server: bool) -> None:
        super().__init__(message)
        self.message, self.retry, self.server = message, retry, server


class Mailer(Protocol):
    def send(self, message: EmailMessage) -> None:
        """Hand one message to the mail server; MailFailed when it did not take it."""


@dataclass
class AdviceOutcome:
    """What `advise` did for one run, for the operator (nothing in it is an error of a run)."""

    run_id: str
    queued: int = 0  # advices queued by this call
    sent: list[AdviceRecord] = field(default_factory=list)  # sent by this call
    failed: list[AdviceRecord] = field(default_factory=list)  # refused for good
    left: list[AdviceRecord] = field(default_factory=list)  # still queued: try again later
    unsure: list[AdviceRecord] = field(default_factory=list)  # sending stopped half-way once
    sent_before: int = 0
    waiting: list[str] = field(default_factory=list)  # payees with rows not final yet
    no_email: list[str] = field(default_factory=list)  # payees paid with no payee_email
    problem: str = ""  # why the mail server took nothing more in this call

    def lines(self) -> list[str]:
        """The outcome in a few lines, as `advise` and a run print it."""
        out = [f"Remittance advices of run {self.run_id}: {len(self.sent)} sent now, "
               f"{self.sent_before} sent before, {len(self.left)} waiting to be sent, "
               f"{len(self.failed)} refused"]
        for rec in self.failed:
            out.append(f"  refused: {rec.payee_name} ({', '.join(rec.recipients)}): "
                       f"{rec.last_error}")
        if self.problem:
            out.append(f"  not sent: {self.problem}; `batchpay advise {self.run_id}` sends "
                       "the rest once the mail server takes them")
        for rec in self.unsure:
            out.append(f"  may have gone: {rec.payee_name} (sending stopped half-way on "
                       f"{rec.tried_at}); not sent again")
        if self.waiting:
            out.append(f"  {len(self.waiting)} payee(s) wait for rows not final yet "
                       f"({', '.join(self.waiting[:5])}): `batchpay sync`, then "
                       f"`batchpay advise {self.run_id}`")
        if self.no_email:
            out.append(f"  {len(self.no_email)} paid payee(s) have no payee_email: no advice "
                       f"({', '.join(self.no_email[:5])})")
        return out


def advise_run(journal: Journal, run_id: str | None, mail: Mail, mailer: Mailer,
               font: Callable[[], CjkFont] | None = None) -> AdviceOutcome:
    """Queue the run's advices that are due, then send every queued one of the run."""
    run = find_run(journal, run_id)
    outcome = AdviceOutcome(run.id)
    outcome.queued = journal.queue_advices(_drafts(journal, run, mail, outcome))
    records = journal.advices(run.id)
    outcome.sent_before = sum(r.state == AdviceState.SENT for r in records)
    outcome.failed = [r for r in records if r.state == AdviceState.FAILED]
    outcome.unsure = [r for r in records if r.state == AdviceState.SENDING]
    due = [r for r in records if r.state == AdviceState.QUEUED]
    if not due:
        return outcome
    docs = [advice_document(journal, run, rec, mail) for rec in due]
    with tempfile.TemporaryDirectory(prefix="batchpay-advice-") as folder:
        face = reduced_font((font or (lambda: find_cjk_font(mail.font)))(), docs, Path(folder))
        for rec, doc in zip(due, docs, strict=True):
            if outcome.problem:
                outcome.left.append(rec)
                continue
            failure = _send_with_retries(journal, rec, advice_message(doc, rec, mail, face),
                                         mailer, mail)
            if failure is None:
                outcome.sent.append(rec)
                continue
            now = next(r for r in journal.advices(run.id) if r.payee == rec.payee)
            (outcome.left if now.state == AdviceState.QUEUED else outcome.failed).append(now)
            if failure.server:
                outcome.problem = failure.message
    return outcome


def _worth_retrying(exc: Exception) -> bool:
    return isinstance(exc, MailFailed) and exc.retry


def _send_with_retries(journal: Journal, rec: AdviceRecord, message: EmailMessage,
                       mailer: Mailer, mail: Mail) -> MailFailed | None:
    """Send one advice: each try taken in the outbox first and its end recorded; a try the
    server may take later is repeated with backoff within [mail] attempts and retry_seconds.
    None: sent (or taken meanwhile by another `advise`)."""
    try:
        for attempt in stamina.retry_context(on=_worth_retrying, attempts=mail.attempts,
                                             timeout=mail.retry_seconds, wait_initial=1.0,
                                             wait_max=10.0):
            with attempt:
                if not journal.take_advice(rec.run_id, rec.payee):
                    return None
                try:
                    mailer.send(message)
                except MailFailed as exc:
                    journal.advice_not_sent(rec.run_id, rec.payee, exc.message,
                                            final=not (exc.retry or exc.server))
                    raise
                journal.advice_sent(rec.run_id, rec.payee)
                return None
    except MailFailed as exc:
        return exc
    return None  # pragma: no cover - stamina re-raises the last error


def _drafts(journal: Journal, run: RunRecord, mail: Mail,
            outcome: AdviceOutcome) -> list[AdviceDraft]:
    """One draft per payee of the run with COMPLETED payouts made by this run, every row of
    it final and an e-mail address given; the payees waiting or without one are noted."""
    columns = [normalize_header(c) for c in run.input_columns]
    at = columns.index(EMAIL_COLUMN) if EMAIL_COLUMN in columns else -1
    rows = list(journal.run_rows(run.id))
    entries = journal.entries(r.payout_ref for r in rows)
    advised = journal.advised_refs()
    payees: dict[str, dict[str, Any]] = {}
    for row in rows:
        entry = entries.get(row.payout_ref)
        if entry is None or entry.attempt_id is None or row.payout_ref in advised:
            continue
        if journal.attempt(entry.attempt_id).run_id != run.id:
            continue  # paid (or tried) by another run: advised with that run
        details: PayeeValues = json.loads(entry.details) if entry.details else {}
        kind, value = keys_of(details)[0]
        payee = payees.setdefault(f"{kind}:{value}", {
            "name": str(details.get("recipient_name") or ""), "refs": [], "emails": [],
            "waiting": False})
        if entry.status in _NOT_FINAL:
            payee["waiting"] = True
        elif entry.status == Status.COMPLETED:
            payee["refs"].append(row.payout_ref)
            email = row.inputs[at] if 0 <= at < len(row.inputs) else None
            if email and str(email).strip() and str(email).strip() not in payee["emails"]:
                payee["emails"].append(str(email).strip())
    drafts = []
    domain = mail.sender.rpartition("@")[2] or None
    for key, payee in payees.items():
        if payee["waiting"]:
            outcome.waiting.append(payee["name"])
        elif payee["refs"] and not payee["emails"]:
            outcome.no_email.append(payee["name"])
        elif payee["refs"]:
            drafts.append(AdviceDraft(run.id, key, payee["name"], tuple(payee["emails"]),
                                      tuple(payee["refs"]), make_msgid("advice", domain)))
    return drafts


def advice_document(journal: Journal, run: RunRecord, rec: AdviceRecord,
                    mail: Mail) -> AdviceDocument:
    """The advice's content, from the journal: the request as sent, the ledger as paid."""
    entries = journal.entries(rec.payout_refs)
    lines, names = [], []
    for ref in rec.payout_refs:
        entry = entries[ref]
        body = journal.attempt(entry.attempt_id or 0).body
        recipient = body.get("recipient", {})
        names.append(str(recipient.get("name", "")))
        lines.append(AdviceLine(
            payout_ref=ref, remark=str(body.get("remark", "")),
            account=masked(str(recipient.get("account", {}).get("accountNumber", ""))),
            amount=entry.target_amount if entry.target_amount is not None else Decimal(0),
            currency=entry.target_currency or str(recipient.get("currency", "")),
            reference_number=entry.reference_number))
    return AdviceDocument(payer=mail.payer or mail.sender,
                          payee_name=" / ".join(dict.fromkeys(names)),
                          paid_on=clock.day(run.started_at, clock.FALLBACK_ZONE).isoformat(),
                          run_id=run.id, lines=tuple(lines))


def advice_message(doc: AdviceDocument, rec: AdviceRecord, mail: Mail,
                   font: CjkFont) -> EmailMessage:
    """The e-mail of one advice: a short text in Chinese and English, the PDF attached."""
    totals = ", ".join(f"{cur} {amount:,}" for cur, amount in sorted(doc.totals().items()))
    message = EmailMessage()
    message["Subject"] = f"付款通知 Remittance advice: {doc.payer}, {doc.paid_on}"
    message["From"] = mail.sender
    message["To"] = ", ".join(rec.recipients)
    message["Date"] = formatdate(usegmt=True)
    message["Message-ID"] = rec.message_id
    count = len(doc.lines)
    message.set_content(
        f"{doc.payee_name}：\n\n{doc.payer} 已于 {doc.paid_on} 向您付款 {count} 笔，合计 "
        f"{totals}。明细见附件付款通知（PDF）。\n\n"
        f"Dear {doc.payee_name},\n\n{doc.payer} paid you {count} payment(s) on "
        f"{doc.paid_on}, in total {totals}. The attached remittance advice (PDF) lists each "
        "with its reference.\n")
    message.add_attachment(render_advice(doc, font), maintype="application", subtype="pdf",
                           filename=f"remittance-advice-{doc.run_id}.pdf")
    return message


def advise_after_run(settings: Settings, run_id: str,
                     mailer: Callable[[Mail], Mailer]) -> list[str]:
    """What a run (the command's or the console's) says about its advices when [mail] is
    set: never an error of the run (its payouts and exit code stay as they are), only lines
    to read."""
    if settings.mail is None:
        return []
    try:
        with Journal.existing(settings.journal) as journal:
            return advise_run(journal, run_id, settings.mail, mailer(settings.mail)).lines()
    except BatchpayError as exc:
        said = [exc.message, *([exc.hint] if exc.hint else [])]
    except Exception as exc:  # noqa: BLE001 - the payouts are made: nothing may undo the run
        said = [f"{type(exc).__name__}: {exc}"]
    return [f"Remittance advices not sent: {said[0]}", *said[1:],
            f"The payouts are as above; `batchpay advise {run_id}` sends the advices later."]
