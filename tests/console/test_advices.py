"""Remittance advices of a batch paid in the console: mailed when the payment ends (a real
SMTP server on a free port), and listed read-only on the batch's page for the maker."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from batchpay.settings.model import Mail
from tests.cli.test_advice import HEADERS_MAIL, NAME_A, Inbox, free_port, start_smtp
from tests.console.conftest import batch_id
from tests.console.test_month import wait_final
from tests.support.e2e import sandbox_payouts
from tests.support.sheets import row, write_sheet

pytestmark = pytest.mark.slow


def test_the_batch_page_lists_the_advices_its_payment_sent(desk_factory: Any,
                                                          tmp_path: Path) -> None:
    port, inbox = free_port(), Inbox()
    controller = start_smtp(inbox, port)
    try:
        desk = desk_factory(sandbox={"settle_seconds": 0.05}, mail=Mail(
            host="127.0.0.1", port=port, security="none", sender="payments@acme.example"))
        sheet = write_sheet(tmp_path / "advised.xlsx", [
            row(2, recipient_name=NAME_A, company_name=NAME_A,
                payee_email="ap@huaqiang.example.cn"),
            row(3)], headers=HEADERS_MAIL)
        maker = desk.client("mia")
        batch = batch_id(maker.upload(sheet))
        assert maker.post(f"/batches/{batch}/review").status_code == 303
        assert maker.press(batch, "pay").status_code == 303
        state = wait_final(maker, batch)
        assert dict(state["counts"]) == {"COMPLETED": 2}
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not inbox.messages:
            time.sleep(0.2)
        assert [m["To"] for m in inbox.messages] == ["ap@huaqiang.example.cn"]
        page = maker.http.get(f"/batches/{batch}").text
        assert "Remittance advices" in page
        section = page.split('id="advices"', 1)[1]
        assert NAME_A in section and "ap@huaqiang.example.cn" in section
        assert "T-00002" in section and "sent" in section and "T-00003" not in section
        assert len(sandbox_payouts(desk.sandbox.url)) == 2
    finally:
        controller.stop()
