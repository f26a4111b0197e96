"""The console's notifications, over HTTP with real sessions: a batch reviewed in approval
mode is mailed to the approvers (a real SMTP server), its approval to its maker, and the
payment's end with its counts to everyone (a real JSON web hook too), each delivered by the
worker `batchpay serve` runs."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from batchpay.notify import EVERY as NOTIFY_EVERY
from batchpay.notify import NoticeWorker
from tests.console.conftest import Desk, batch_id
from tests.console.test_month import wait_final
from tests.support.e2e import sandbox_payouts
from tests.support.receivers import HookServer, SmtpServer

pytestmark = pytest.mark.slow


@pytest.fixture
def receivers() -> Iterator[tuple[SmtpServer, HookServer]]:
    smtp, hook = SmtpServer().start(), HookServer().start()
    yield smtp, hook
    smtp.stop()
    hook.stop()


def deliver(desk: Desk) -> None:
    """One round of the console's delivery worker."""
    done = NoticeWorker(desk.settings.journal, desk.settings.notify).round()
    assert done is not None and not done.retrying and not done.failed, done


def texts(smtp: SmtpServer, to: str) -> list[str]:
    return [smtp.inbox.text(m) for m in smtp.inbox.to(to)]


def test_approver_maker_and_everyone_are_told(desk_factory: Any,
                                               receivers: tuple[SmtpServer, HookServer]
                                               ) -> None:
    smtp, hook = receivers
    desk: Desk = desk_factory(require_approval=True, own_settings=(
        f'notify = ["approver={smtp.url("cfo@acme.example")}",\n'
        f'  "maker={smtp.url("mia@acme.example")}", "{hook.url}"]\n'))
    maker, approver = desk.client("mia"), desk.client("abe")

    batch = batch_id(maker.upload("november-payouts.xlsx"))
    assert maker.post(f"/batches/{batch}/review").status_code == 303
    deliver(desk)
    [waiting] = texts(smtp, "cfo@acme.example")
    assert waiting.startswith("Batch waits for approval: november-payouts.xlsx")
    assert "mia reviewed november-payouts.xlsx" in waiting and f"/batches/{batch}" in waiting
    assert texts(smtp, "mia@acme.example") == []  # not the maker's to hear
    assert hook.titles() == ["Batch waits for approval: november-payouts.xlsx"]

    assert approver.press(batch, "approve").status_code == 303
    deliver(desk)
    [approved] = texts(smtp, "mia@acme.example")
    assert approved.startswith("Batch approved: november-payouts.xlsx")
    assert "abe approved" in approved
    assert len(texts(smtp, "cfo@acme.example")) == 1  # nothing new for the approver

    assert maker.press(batch, "pay").status_code == 303
    assert dict(wait_final(maker, batch)["counts"]) == {"COMPLETED": 25}
    assert len(sandbox_payouts(desk.sandbox.url)) == 25
    deliver(desk)
    for to in ("cfo@acme.example", "mia@acme.example"):
        ended = texts(smtp, to)[-1]
        assert "Payment ended: " in ended and "COMPLETED 25" in ended, ended
        assert "COMPLETED: 25" in ended
    assert hook.titles()[-1].startswith("Payment ended: ")
    assert len(hook.posts) == 3
    deliver(desk)  # a second round sends nothing again
    assert len(hook.posts) == 3 and len(smtp.inbox.messages) == 4


def test_a_rejection_is_told_to_the_maker_by_the_served_consoles_worker(desk_factory: Any,
                                          receivers: tuple[SmtpServer, HookServer]) -> None:
    smtp, hook = receivers
    desk: Desk = desk_factory(require_approval=True, own_settings=(
        f'notify = ["maker={smtp.url("mia@acme.example")}"]\n'))
    maker, approver = desk.client("mia"), desk.client("abe")
    batch = batch_id(maker.upload("november-payouts.xlsx"))
    assert maker.post(f"/batches/{batch}/review").status_code == 303
    assert approver.press(batch, "reject", reason="Row 7 pays the old account").status_code == 303
    with maker.http:  # the app served: its lifespan runs the delivery worker, as `serve` does
        deadline = time.monotonic() + NOTIFY_EVERY * 6
        while not smtp.inbox.messages and time.monotonic() < deadline:
            time.sleep(0.2)
    [rejected] = texts(smtp, "mia@acme.example")
    assert rejected.startswith("Batch rejected: november-payouts.xlsx")
    assert "abe rejected november-payouts.xlsx: Row 7 pays the old account" in rejected
