"""Rows in doubt within a run (engine.doubt), proven at the sandbox over real HTTP."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from batchpay.sandbox import app as sandbox_app
from batchpay.sandbox.wire import failed
from tests.support.e2e import batchpay, by_ref, own_settings, sandbox_payouts
from tests.support.postgres import BOTH_STORES
from tests.support.sheets import rows, write_sheet


@BOTH_STORES
def test_a_run_that_proves_every_row_in_doubt_never_received_ends_normally(
        cli_sandbox: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A payout answered 500 before the service made it: in doubt. Its quote lives a second
    and a read timeout is a second, so within --wait a complete scan proves it never
    arrived; with no other row left in doubt the run goes on to its results."""
    service = cli_sandbox(quote_ttl=1.0, settle_seconds=0.05)
    own_settings("read_timeout = 1\n")
    refusal = sandbox_app.Gate.refusal
    refused: list[str] = []

    def first_payout_500(self: Any, scope: Any, template: str) -> Any:
        if scope["method"] == "POST" and "payout" in template and not refused:
            refused.append(template)
            return failed(500, "Internal server error")  # before the payout is made
        return refusal(self, scope, template)

    monkeypatch.setattr(sandbox_app.Gate, "refusal", first_payout_500)
    sheet = write_sheet(tmp_path / "nov.xlsx", rows(3))
    out = tmp_path / "out.xlsx"
    result = batchpay("run", str(sheet), "--concurrency", "1", "--wait", "10", "--out", str(out))
    assert refused
    assert result.exit_code == 1, result  # a row needs attention: it goes with the next run
    got = by_ref(out)
    assert got["T-00001"]["status"] == "NOT_SENT"
    assert "holds no payout for its quote" in got["T-00001"]["error"]
    assert len(sandbox_payouts(service.url)) == 2

    again = batchpay("run", str(sheet), "--wait", "5", "--out", str(tmp_path / "again.xlsx"))
    assert again.exit_code == 0, again
    paid = Counter(p["accountNumber"] for p in sandbox_payouts(service.url))
    assert len(paid) == 3 and set(paid.values()) == {1}
