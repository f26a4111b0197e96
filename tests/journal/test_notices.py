"""The outbox of notifications, in a SQLite journal and in PostgreSQL: one record per event
and receiver, the moves every outbox record makes, and a failed try due again later; the
delivery rounds over it with a sender that fails and then takes (no network: the sender is
a function the delivery is given)."""

from __future__ import annotations

import pytest

from batchpay.engine.notices import ATTEMPTS, NoticeFailed, NoticeKind, deliver, queue
from batchpay.journal.notices import NoticeDraft
from batchpay.journal.outbox import OutboxState
from batchpay.journal.store import Journal
from batchpay.settings.notify import receiver

HOOK = "json://127.0.0.1:9/hook"
MAIL = "approver=mailto://127.0.0.1:2525?from=b@acme.example&to=cfo@acme.example&mode=insecure"


def draft(event: str = "payment.ended:r1", target: str = "t1") -> NoticeDraft:
    return NoticeDraft(event, target, "json://127.0.0.1/hook", "payment.ended",
                       "Payment ended: 三月.xlsx", "COMPLETED: 3")


def test_a_notice_is_queued_once_per_event_and_receiver(journal: Journal) -> None:
    assert journal.queue_notices([draft(), draft(target="t2")]) == 2
    assert journal.queue_notices([draft()]) == 0
    assert journal.queue_notices([draft("payment.ended:r2")]) == 1
    records = journal.notices()
    assert len(records) == 3 and {r.state for r in records} == {OutboxState.QUEUED}
    assert records[0].title == "Payment ended: 三月.xlsx"
    assert len(journal.due_notices()) == 3


def test_a_failed_try_waits_for_its_time_and_a_sent_one_is_never_taken(journal: Journal
                                                                       ) -> None:
    journal.queue_notices([draft()])
    assert journal.take_notice("payment.ended:r1", "t1")
    assert not journal.take_notice("payment.ended:r1", "t1")  # sending: not taken twice
    journal.notice_not_sent("payment.ended:r1", "t1", "connection refused", final=False,
                            retry_in=3600)
    (record,) = journal.notices()
    assert record.state == OutboxState.QUEUED and record.attempts == 1
    assert journal.due_notices() == []  # due in an hour
    journal.notice_not_sent("payment.ended:r1", "t1", "connection refused", final=False)
    assert len(journal.due_notices()) == 1
    assert journal.take_notice("payment.ended:r1", "t1")
    journal.notice_sent("payment.ended:r1", "t1")
    (record,) = journal.notices(OutboxState.SENT)
    assert record.attempts == 2 and record.sent_at and record.last_error == ""
    assert not journal.take_notice("payment.ended:r1", "t1")


def test_each_event_goes_to_the_receivers_it_is_for(journal: Journal) -> None:
    notify = (HOOK, MAIL)
    assert queue(journal, notify, NoticeKind.BATCH_WAITING, "b1:p1", "waits", "") == 2
    assert queue(journal, notify, NoticeKind.BATCH_APPROVED, "b1:p1:abe", "approved", "") == 1
    assert queue(journal, notify, NoticeKind.BATCH_WAITING, "b1:p1", "waits", "") == 0
    by_title = {(r.title, r.target) for r in journal.notices()}
    hook, mail = receiver(HOOK).key, receiver(MAIL).key
    assert by_title == {("waits", hook), ("waits", mail), ("approved", hook)}


def test_delivery_retries_with_a_growing_wait_then_gives_up(journal: Journal) -> None:
    notify = (HOOK,)
    queue(journal, notify, NoticeKind.PAYMENT_ENDED, "r1", "Payment ended", "COMPLETED: 1")
    calls: list[str] = []

    def down(url: str, title: str, body: str) -> None:
        calls.append(url)
        raise NoticeFailed("connection refused")

    first = deliver(journal, notify, down)
    assert len(first.retrying) == 1 and calls == [HOOK]
    assert deliver(journal, notify, down).retrying == []  # not due yet: not tried
    for _ in range(ATTEMPTS - 2):
        deliver(journal, notify, down, everything=True)
    last = deliver(journal, notify, down, everything=True)
    assert len(last.failed) == 1 and len(calls) == ATTEMPTS
    (record,) = journal.notices()
    assert record.state == OutboxState.FAILED and record.attempts == ATTEMPTS


def test_a_receiver_taken_out_of_the_setting_is_failed_not_sent(journal: Journal) -> None:
    queue(journal, (HOOK,), NoticeKind.PAYMENT_ENDED, "r1", "Payment ended", "")

    def never(url: str, title: str, body: str) -> None:
        pytest.fail("sent to a receiver no longer in the setting")

    done = deliver(journal, (), never)
    assert [why for _, why in done.failed] == ["its receiver is no longer in the notify setting"]


def test_a_sender_that_breaks_leaves_the_notice_queued_not_sending(journal: Journal) -> None:
    queue(journal, (HOOK,), NoticeKind.PAYMENT_ENDED, "r1", "Payment ended", "")

    def broken(url: str, title: str, body: str) -> None:
        raise OSError("network is unreachable")

    done = deliver(journal, (HOOK,), broken)
    assert [why for _, why in done.retrying] == ["OSError: network is unreachable"]
    (record,) = journal.notices()
    assert record.state == OutboxState.QUEUED and record.attempts == 1
