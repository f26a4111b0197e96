"""The outbox of remittance advices: one record per run and payee, and the moves that keep
an advice from going twice."""

from __future__ import annotations

from batchpay.journal.outbox import AdviceDraft, AdviceState
from batchpay.journal.store import Journal


def draft(payee: str = "company:91440300MA0000002X", run: str = "r1") -> AdviceDraft:
    return AdviceDraft(run, payee, "深圳市华强电子有限公司", ("ap@huaqiang.cn",),
                       ("T-1", "T-2"), "<advice.1@acme.example>")


def test_an_advice_is_queued_once_per_run_and_payee(journal: Journal) -> None:
    assert journal.queue_advices([draft(), draft("name:张三")]) == 2
    assert journal.queue_advices([draft()]) == 0  # queued again: nothing new
    assert journal.queue_advices([draft(run="r2")]) == 1  # another run's advice is its own
    records = journal.advices("r1")
    assert [r.payee for r in records] == ["company:91440300MA0000002X", "name:张三"]
    assert records[0].payout_refs == ("T-1", "T-2") and records[0].recipients == (
        "ap@huaqiang.cn",)
    assert {r.state for r in records} == {AdviceState.QUEUED}
    assert journal.advised_refs() == {"T-1", "T-2"}


def test_a_taken_advice_is_not_taken_again_and_a_sent_one_never(journal: Journal) -> None:
    journal.queue_advices([draft()])
    payee = draft().payee
    assert journal.take_advice("r1", payee)
    assert not journal.take_advice("r1", payee)  # sending: a second `advise` leaves it
    journal.advice_not_sent("r1", payee, "could not reach the mail server", final=False)
    (record,) = journal.advices("r1")
    assert record.state == AdviceState.QUEUED and record.attempts == 1
    assert record.last_error == "could not reach the mail server"
    assert journal.take_advice("r1", payee)
    journal.advice_sent("r1", payee)
    (record,) = journal.advices("r1")
    assert record.state == AdviceState.SENT and record.attempts == 2 and record.sent_at
    assert record.last_error == ""
    assert not journal.take_advice("r1", payee)


def test_a_refused_advice_is_failed_for_good(journal: Journal) -> None:
    journal.queue_advices([draft()])
    assert journal.take_advice("r1", draft().payee)
    journal.advice_not_sent("r1", draft().payee, "550 no such user", final=True)
    (record,) = journal.advices()
    assert record.state == AdviceState.FAILED and record.last_error == "550 no such user"
    assert not journal.take_advice("r1", draft().payee)
