"""The review's page marks a wallet too short for the batch as an error, and refuses to pay
it, from the dry run's facts: a note reworded changes neither."""

from __future__ import annotations

import re
from typing import Any

import pytest

from batchpay.engine import real_money
from tests.console.conftest import Desk, batch_id
from tests.support.e2e import sandbox_payouts, set_wallet


def test_a_short_wallet_is_an_error_on_the_review_whatever_its_note_says(
        desk_factory: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(real_money.WalletNeed, "note", property(
        lambda self: f"Reworded {self.currency}: {'lacking' if self.short else 'enough'}"))
    desk: Desk = desk_factory()
    set_wallet(desk.sandbox.url, "NGN", 1)
    maker = desk.client("mia")
    batch = batch_id(maker.upload("november-payouts-corrected.xlsx"))
    assert maker.post(f"/batches/{batch}/review").status_code == 303
    page = maker.http.get(f"/batches/{batch}").text
    notes = dict((text, kind) for kind, text in re.findall(
        r'<p class="(error|note)">(Reworded [A-Z]{3}: \w+)</p>', page))
    assert notes.get("Reworded NGN: lacking") == "error"
    assert "enough" not in " ".join(k for k, v in notes.items() if v == "error")
    assert "Nothing can be paid: the wallet cannot cover it." in page
    assert maker.press(batch, "pay").status_code == 409
    assert sandbox_payouts(desk.sandbox.url) == []
