"""The console's notifications: a reviewed batch waits for its approvers, its maker hears it
was approved or rejected (what each says and its delivery: batchpay.engine.notices).

Each is queued in the journal's outbox after the batch's own change is saved, and a failure
to queue is logged, never shown as the page's error: the approval stands either way.
"""

from __future__ import annotations

import logging

from batchpay.console.batches import Batch
from batchpay.engine import NoticeKind, queue_notice_at
from batchpay.settings.model import Settings

log = logging.getLogger("batchpay.console")


def _queue(settings: Settings, kind: NoticeKind, subject: str, title: str, body: str) -> None:
    if not settings.notify:
        return
    try:
        queue_notice_at(settings.journal, settings.notify, kind, subject, title, body)
    except Exception:  # noqa: BLE001 - logged; the batch's change stands
        log.exception("the notification %s:%s could not be queued", kind, subject)


def _name(batch: Batch) -> str:
    return batch.meta.get("uploaded_name") or batch.sheet.name


def batch_waiting(settings: Settings, batch: Batch) -> None:
    """A batch was reviewed in approval mode: its approvers are told it waits for them."""
    review = batch.meta.get("review")
    if not settings.require_approval or review is None or review.get("refused"):
        return
    name = _name(batch)
    lines = [f"{batch.maker} reviewed {name} and it waits for your approval.",
             f"Plan {review['short_code']}, valid until {review['expires_at']}.", ""]
    for currency, figures in sorted(review.get("currencies", {}).items()):
        lines.append(f"  {currency}: {figures.get('NbOfTxs', '?')} row(s), debit about "
                     f"{figures.get('quoted_debit', '?')} {currency}")
    held = [c for c in review.get("payee_changes", []) if c.get("decision") == "HELD"]
    if held:
        lines.append(f"  {len(held)} row(s) held: payee details new or changed")
    lines += ["", f"Open the batch in the console: /batches/{batch.id}"]
    _queue(settings, NoticeKind.BATCH_WAITING, f"{batch.id}:{review['plan_id']}",
           f"Batch waits for approval: {name}", "\n".join(lines))


def batch_approved(settings: Settings, batch: Batch, approver: str) -> None:
    review = batch.meta.get("review")
    plan = review["plan_id"] if review else ""
    count = len(batch.meta.get("approvals", []))
    name = _name(batch)
    _queue(settings, NoticeKind.BATCH_APPROVED, f"{batch.id}:{plan}:{approver}",
           f"Batch approved: {name}",
           f"{approver} approved {name} ({count} of {settings.approvals_required} approval(s) "
           f"needed).\n\nOpen the batch in the console: /batches/{batch.id}")


def batch_rejected(settings: Settings, batch: Batch) -> None:
    rejected = batch.meta.get("rejected")
    if rejected is None:
        return
    name = _name(batch)
    _queue(settings, NoticeKind.BATCH_REJECTED, f"{batch.id}:{rejected['at']}",
           f"Batch rejected: {name}",
           f"{rejected['by']} rejected {name}: {rejected['reason']}\n\n"
           f"Open the batch in the console: /batches/{batch.id}")
