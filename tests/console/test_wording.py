"""A page names the page action, never a command: the engine's own messages (as the engine
makes them) pass through `for_page`, and no `batchpay` command or option is left in them."""

from __future__ import annotations

import re

import pytest

from batchpay.console.wording import for_page
from batchpay.controls.repeats import Earlier, held_message
from batchpay.engine.doubt import UNKNOWN_ERROR
from batchpay.engine.render import STATUS_EXPLAINED
from batchpay.statuses import Status

COMMAND = re.compile(r"`batchpay|--[a-z]")


def engine_messages() -> list[str]:
    from batchpay.controls.payees import _how

    earlier = Earlier(payout_ref="NOV-1", run_id="20261101-000000-abcd",
                      sent_at="2026-11-01T00:00:00Z", status=Status.COMPLETED)
    messages = [UNKNOWN_ERROR, *STATUS_EXPLAINED.values(),
                held_message("DEC-1", "6222020000012420000", "100 NGN", [earlier]),
                _how("payee 91350100M000100Y43", "6222020000012420000"),
                "3 invalid row(s): nothing was sent. Fix them, or run with --skip-invalid to "
                "pay the valid rows.",
                "12 row(s) are PENDING or PROCESSING: accepted, not final yet. Run "
                "`batchpay sync` later to bring them up to date."]
    return messages


@pytest.mark.parametrize("text", engine_messages())
def test_engine_messages_name_page_actions_on_a_page(text: str) -> None:
    assert COMMAND.search(text), text  # the engine's words stay for the CLI
    shown = for_page(text)
    assert not COMMAND.search(shown), shown


def test_the_page_words_name_the_actions() -> None:
    assert "Refresh statuses" in for_page(UNKNOWN_ERROR)
    assert "upload the results workbook" in for_page(STATUS_EXPLAINED[Status.FAILED])
    assert "Payees page" in for_page("Confirm one payee at a time with "
                                     "`batchpay payees confirm`.")
    repeat = for_page("possible duplicate payment: ...; if this is a new payment, run again "
                      "with --allow-repeat DEC-1")
    assert "pay anyway" in repeat and "Review again" in repeat
    assert "the batch's maker ticks" in repeat  # nobody else reviews it again
    assert "Continue without the invalid rows" in for_page(
        "Fix them, or run with --skip-invalid to pay the valid rows.")
    assert for_page("account_number: must be 8-30 digits") == (
        "account_number: must be 8-30 digits")  # no command: unchanged
