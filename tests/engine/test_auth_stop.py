"""A 401/403 stops the run at once: no request that had not left yet goes after it.

With --max-rps, every worker books its pacing slot before it sends, so when one request
is refused the others are waiting for theirs, payouts among them. Those must never leave:
the key was refused, and a payout after that is money the operator did not expect. They
are cancelled at the stop, not whenever the run's loop happens to end: here closing the
connections takes a while, as a real service's TLS close may, and nothing goes meanwhile.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from batchpay.provider.client import PayoutClient
from batchpay.sandbox import app as sandbox_app
from batchpay.sandbox.wire import failed
from tests.support.e2e import batchpay, by_ref, sandbox_payouts
from tests.support.sheets import rows, write_sheet


def test_a_401_while_others_wait_to_send_stops_them_all(
        cli_sandbox: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    service = cli_sandbox()
    arrivals: list[tuple[float, str]] = []  # (monotonic, "METHOD path") at the sandbox
    refused_at: list[float] = []
    refusal = sandbox_app.Gate.refusal

    def once_401(self: Any, scope: Any, template: str) -> Any:
        request = f"{scope['method']} {template}"
        arrivals.append((time.monotonic(), request))
        if scope["method"] == "POST" and "payout" in template and not refused_at:
            refused_at.append(time.monotonic())
            return failed(401, "Invalid API key")  # one request only: say, a gateway's hiccup
        return refusal(self, scope, template)

    monkeypatch.setattr(sandbox_app.Gate, "refusal", once_401)
    close = PayoutClient.aclose

    async def slow_close(self: PayoutClient) -> None:
        await asyncio.sleep(2.0)
        await close(self)

    monkeypatch.setattr(PayoutClient, "aclose", slow_close)
    sheet = write_sheet(tmp_path / "nov.xlsx", rows(8))
    out = tmp_path / "out.xlsx"
    # 2 requests a second: each worker's next request waits for a slot half a second apart
    stopped = batchpay("run", str(sheet), "--concurrency", "4", "--max-rps", "2",
                       "--wait", "0", "--out", str(out))
    assert stopped.exit_code == 2, stopped
    assert "Stopped" in stopped.stderr, stopped
    assert refused_at, arrivals
    after = [request for at, request in arrivals if at > refused_at[0]]
    assert after == []  # nothing left after the 401, not the payouts that waited for a slot
    assert sandbox_payouts(service.url) == []

    # the rows that were waiting to send are in doubt (their intent is on disk): the next
    # run looks them up, resends their identical bodies and pays every row exactly once
    again = batchpay("run", str(sheet), "--wait", "5", "--out", str(tmp_path / "again.xlsx"))
    assert again.exit_code == 0, again
    paid = Counter(p["accountNumber"] for p in sandbox_payouts(service.url))
    assert len(paid) == 8 and set(paid.values()) == {1}
    assert {r["status"] for r in by_ref(tmp_path / "again.xlsx").values()} <= {
        "PENDING", "PROCESSING", "COMPLETED"}
