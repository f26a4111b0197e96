"""`batchpay sync`: rows in doubt found in the payout list (or proven never received), later
states (FAILED -> REFUNDED) picked up, and the run's results workbook written again.

Every count is taken at the sandbox, never from what the client believes.
"""

from __future__ import annotations

import contextlib
import json
import re
import time
from collections import Counter
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from batchpay.clock import stamp
from batchpay.engine.sync import sync_run
from batchpay.journal.records import RunRecord, RunRow
from batchpay.journal.store import Journal
from batchpay.sandbox.server import RunningSandbox
from batchpay.service import Service
from batchpay.settings.model import Settings, journal_location
from tests.support.e2e import batchpay, by_ref, own_settings, results, sandbox_payouts
from tests.support.postgres import BOTH_STORES
from tests.support.sheets import row, rows, write_sheet

GOOD = {"PENDING", "PROCESSING", "COMPLETED"}


def prefill(service: RunningSandbox, count: int) -> None:
    """Payouts made before ours (by someone else): a full first page of the list."""
    for n in range(count):
        quote = service.state.create_quote("BANK_TRANSFER", Decimal(100000), "NGN", "NG",
                                           "CNY", "CN")
        service.state.create_payout({
            "quoteId": quote["id"], "reason": "earlier", "recipient": {
                "name": f"earlier {n}", "type": "INDIVIDUAL", "currency": "CNY",
                "country": "CN", "paymentChannel": "BANK_TRANSFER",
                "account": {"accountNumber": f"99{n:017d}", "bankName": "中国银行"}}})


@pytest.fixture
def use(cli_sandbox: Any) -> Any:
    """Start a sandbox with these options and point the CLI at it (cwd = tmp_path; the
    journal `journal_at`: a file, or PostgreSQL for the tests on both stores)."""
    return lambda **options: cli_sandbox(**options)


@BOTH_STORES
def test_dropped_answers_stay_unknown_after_a_capped_scan_and_resolve_after_a_full_one(
        use: Any, tmp_path: Path) -> None:
    # every payout answer is lost after the sandbox committed it; our payouts sit on the
    # second page of the COMPLETED list (read after PENDING), and the page cap of 2 lets a
    # scan read the first page of each state only (the run's check before paying reads
    # PENDING and COMPLETED, one page each, to their end)
    service = use(drop_rate=1.0, quote_ttl=1, settle_seconds=0)
    prefill(service, 100)
    settings_file = own_settings("sync_max_pages = 2\n")
    sheet_rows = rows(4)
    sheet = write_sheet(tmp_path / "nov.xlsx", sheet_rows)
    out = tmp_path / "nov-results.xlsx"
    first = batchpay("run", str(sheet), "--wait", "0", "--out", str(out))
    assert first.exit_code == 1, first
    assert {r["status"] for r in results(out)} == {"UNKNOWN"}
    ours = [p for p in sandbox_payouts(service.url) if p["recipientName"].startswith("张")
            or p["accountNumber"].startswith("6222")]
    assert len(ours) == 4  # the service did receive them all

    time.sleep(1.1)  # every quote has expired: only a complete scan could prove "never received"
    capped = batchpay("sync")
    assert capped.exit_code == 1, capped
    assert re.search(r"cut\s+short by the page cap", capped.stderr), capped
    shown = Path(capped.stdout.strip().removeprefix("Results: ")).absolute()
    assert shown.name.startswith("nov-synced-"), capped.stdout  # a new workbook beside it
    assert {r["status"] for r in results(shown)} == {"UNKNOWN"}  # not NOT_SENT: not proven

    settings_file.unlink()  # the default cap reads the whole list
    synced = batchpay("sync", "--json")
    assert synced.exit_code == 0, synced
    document = json.loads(synced.stdout)
    [written] = document["outputs"]
    assert Path(written).parent == out.absolute().parent and Path(written) != shown
    assert {r["status"] for r in results(out)} == {"UNKNOWN"}  # the run's own: as it was
    got = by_ref(Path(written))
    held = {p["accountNumber"]: p for p in sandbox_payouts(service.url)}
    paid = Counter(p["accountNumber"] for p in sandbox_payouts(service.url))
    for r in sheet_rows:
        mine = got[r["payout_ref"]]
        assert paid[r["account_number"]] == 1  # no duplicate, nothing resent
        assert mine["status"] in GOOD
        assert mine["payout_id"] == held[r["account_number"]]["id"]
        assert mine["reference_number"] == held[r["account_number"]]["referenceNumber"]
        assert not mine["error"]
    assert sum(document["counts"].values()) == 4
    assert set(document["counts"]) <= GOOD
    assert {(r["payout_ref"], r["status"], r["reference_number"]) for r in document["rows"]} == {
        (ref, r["status"], r["reference_number"]) for ref, r in got.items()}


def _journal_with_a_row_in_doubt(path: Path | str, service_url: str, quote_id: str) -> str:
    """A run whose one row's payout request never reached the service (its quote expired)."""
    with Journal(path) as j:
        j.bind_service(service_url)
        run = RunRecord(id="20251120-080000-abcd", kind="run", started_at=stamp(),
                        sheet="nov.xlsx", input_sha256="0" * 64,
                        input_columns=["payout_ref", "amount"])
        j.start_run(run, [RunRow(seq=0, row=2, payout_ref="R-1", inputs=["R-1", Decimal("5")],
                                 status="NOT_SENT", linked=True, amount="5",
                                 source_currency="NGN", target_currency="CNY")])
        j.record_intent("R-1", run.id, "{}", {"id": quote_id}, {"quoteId": quote_id},
                        # expired longer ago than a read timeout: a scan may prove it unsent
                        expires_at=time.time() - 60, amount="5", source_currency="NGN",
                        target_currency="CNY")
        j.set_status("R-1", "UNKNOWN", run_id=run.id, error="no answer")
        j.finish_run(run.id, "rows need attention", 1, {})
        return run.id


@BOTH_STORES
def test_never_received_only_after_a_complete_scan(sandbox_factory: Any, journal_at: str,
                                                   tmp_path: Path) -> None:
    service = sandbox_factory(state_path=tmp_path / "sandbox.sqlite3", settle_seconds=0)
    prefill(service, 101)  # two pages of COMPLETED: the cap of one page cannot see the end
    journal = journal_location(journal_at)
    run_id = _journal_with_a_row_in_doubt(journal, service.url, "q-never-arrived")
    settings = Settings(base_url=service.url, api_key=service.api_key, journal=journal,
                        sync_max_pages=1)
    out = tmp_path / "out.xlsx"

    opened = Service(service.url, service.api_key, embedded=False)

    def connect() -> Any:
        return contextlib.nullcontext(opened)

    capped = sync_run(settings, run_id, out, connect)
    assert (capped.complete, capped.never_received, capped.changed) == (False, 0, 0)
    assert [r["status"] for r in results(out)] == ["UNKNOWN"]

    full = sync_run(Settings(base_url=service.url, api_key=service.api_key, journal=journal),
                    run_id, out, connect)
    assert (full.complete, full.never_received, full.changed) == (True, 1, 1)
    # every state the payout could be in, and nothing else: PENDING, FAILED and REFUNDED are
    # one empty page each; COMPLETED's two pages are read from the newest back to the first,
    # which is read again (payouts leaving the list's old end shift newer ones onto it)
    assert full.requests == 6
    assert [r["status"] for r in results(out)] == ["NOT_SENT"]
    assert len(sandbox_payouts(service.url)) == 101  # sync never sends a payout


@BOTH_STORES
def test_sync_picks_up_failed_then_refunded(use: Any, tmp_path: Path, journal_at: str) -> None:
    service = use(settle_seconds=1.0)
    sheet = write_sheet(tmp_path / "nov.xlsx", [row(1), row(2, remark="fail")])
    out = tmp_path / "nov-results.xlsx"
    first = batchpay("run", str(sheet), "--wait", "10", "--out", str(out))
    assert first.exit_code == 1, first
    before = by_ref(out)
    assert before["T-00001"]["status"] == "COMPLETED"
    assert before["T-00002"]["status"] == "FAILED"  # the run stops following final rows
    deadline = time.monotonic() + 10
    while {p["state"] for p in sandbox_payouts(service.url)} != {"COMPLETED", "REFUNDED"}:
        assert time.monotonic() < deadline
        time.sleep(0.1)

    synced = batchpay("sync")
    assert synced.exit_code == 1, synced  # REFUNDED needs attention: pay it again
    assert re.search(r"Tracked 1 row\(s\)", synced.stderr), synced  # only the FAILED row
    after = by_ref(Path(synced.stdout.strip().removeprefix("Results: ")))
    assert after["T-00002"]["status"] == "REFUNDED"
    assert after["T-00002"]["payout_id"] == before["T-00002"]["payout_id"]
    assert after["T-00001"] == before["T-00001"]
    with Journal(journal_location(journal_at)) as j:
        kinds = [r[0] for r in j.db.execute(
            "SELECT kind FROM events WHERE payout_ref = 'T-00002' ORDER BY seq")]
        assert kinds[-1] == "payout.sync"
        notes = [json.loads(r[0]) for r in j.db.execute(
            "SELECT data FROM events WHERE kind = 'sync'")]
        assert notes and notes[-1]["changed"] == 1
    # nothing is left to follow: a second sync asks the service nothing
    again = batchpay("sync", "--out", str(tmp_path / "again.xlsx"))
    assert again.exit_code == 1, again
    assert re.search(r"Tracked 0 row\(s\)\s+with\s+0\s+request\(s\)", again.stderr), again
    assert by_ref(tmp_path / "again.xlsx")["T-00002"]["status"] == "REFUNDED"
    assert len(sandbox_payouts(service.url)) == 2
