"""The service's payout list as the provider documents it: `state`, `page` and `size` are
required, PROCESSING payouts are listed under PENDING, the list may be absent (404), and a
window the check cannot read completely holds the rows it could not clear.

Played against the sandbox over real HTTP and judged by what the sandbox holds.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.e2e import TLS, batchpay, by_ref, sandbox_payouts, sandbox_stats
from tests.support.sheets import row, rows, write_sheet

LISTED = ("PENDING", "COMPLETED", "FAILED", "REFUNDED")


def api(running: Any) -> httpx.Client:
    return httpx.Client(base_url=running.url, headers={"X-API-KEY": running.api_key},
                        timeout=10, verify=TLS)


def listed(client: httpx.Client, state: str) -> list[dict[str, Any]]:
    answer = client.get("/v1/transaction", params={"state": state, "page": 0, "size": 100})
    assert answer.status_code == 200, answer.text
    return list(answer.json()["data"])


def made_elsewhere(running: Any, count: int, *, start: int = 0) -> None:
    """Payouts made by someone else (another journal, the dashboard), straight at the books."""
    for n in range(start, start + count):
        quote = running.state.create_quote("BANK_TRANSFER", Decimal(100000), "NGN", "NG",
                                           "CNY", "CN")
        running.state.create_payout({
            "quoteId": quote["id"], "reason": "earlier", "recipient": {
                "name": f"earlier {n}", "type": "INDIVIDUAL", "currency": "CNY",
                "country": "CN", "paymentChannel": "BANK_TRANSFER",
                "account": {"accountNumber": f"99{n:017d}", "bankName": "中国银行"}}})


def user_settings(tmp_path: Path, text: str) -> None:
    path = tmp_path / "config" / "batchpay" / "batchpay.toml"  # XDG_CONFIG_HOME of cli_sandbox
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def forget_journal() -> None:
    journal = Path(os.environ["BATCHPAY_JOURNAL"])
    for suffix in ("", "-wal", "-shm"):
        Path(str(journal) + suffix).unlink(missing_ok=True)


def list_requests(url: str) -> Counter[str]:
    """The list's requests by status ("GET /v1/transaction 200": n), by id ones apart."""
    return Counter({k: v for k, v in sandbox_stats(url)["requests"].items()
                    if k.startswith("GET /v1/transaction")})


# --- the sandbox holds to the documented contract ------------------------------------------

def test_the_list_refuses_a_request_without_state_page_or_size(sandbox_factory: Any) -> None:
    client = api(sandbox_factory())
    whole = {"state": "PENDING", "page": "0", "size": "100"}
    for missing in whole:
        answer = client.get("/v1/transaction",
                            params={k: v for k, v in whole.items() if k != missing})
        assert answer.status_code == 400
        assert answer.json() == {"message": f"{missing} is required", "status": "failed"}
    for state in ("PROCESSING", "INITIATED", "pending!"):
        answer = client.get("/v1/transaction", params={**whole, "state": state})
        assert answer.status_code == 400
        assert answer.json()["message"].startswith("Invalid state: use one of COMPLETED")
    assert client.get("/v1/transaction", params=whole).status_code == 200


def test_a_processing_payout_is_always_listed_under_pending(sandbox_factory: Any) -> None:
    running = sandbox_factory(settle_seconds=2)  # a second PENDING, a second PROCESSING
    client = api(running)
    made_elsewhere(running, 1)
    quote = running.state.create_quote("BANK_TRANSFER", Decimal(100000), "NGN", "NG", "CNY", "CN")
    running.state.create_payout({
        "quoteId": quote["id"], "reason": "r", "remark": "fail", "recipient": {
            "name": "fails", "type": "INDIVIDUAL", "currency": "CNY", "country": "CN",
            "paymentChannel": "BANK_TRANSFER",
            "account": {"accountNumber": "8800000000001", "bankName": "中国银行"}}})
    ids = {p["id"] for p in sandbox_payouts(running.url)}
    seen_states: set[tuple[str, str]] = set()  # (list, state of a record in it)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and ("REFUNDED", "REFUNDED") not in seen_states:
        everywhere: Counter[str] = Counter()
        for state in LISTED:
            for record in listed(client, state):
                everywhere[record["id"]] += 1
                seen_states.add((state, record["state"]))
        # whatever moment it is read, every payout is in one list (a move between two reads
        # may show it twice, never nowhere)
        assert set(everywhere) == ids, everywhere
        time.sleep(0.05)
    assert ("PENDING", "PROCESSING") in seen_states
    assert {s for _, s in seen_states} >= {"PENDING", "PROCESSING", "COMPLETED", "FAILED",
                                           "REFUNDED"}
    assert all(list_name == state or (list_name, state) == ("PENDING", "PROCESSING")
               for list_name, state in seen_states)


# --- batchpay reads it so ----------------------------------------------------------------

def test_a_run_against_the_documented_list_pays_each_row_once(cli_sandbox: Any,
                                                              tmp_path: Path) -> None:
    service = cli_sandbox(settle_seconds=0.05)
    made_elsewhere(service, 3)
    sheet = write_sheet(tmp_path / "nov.xlsx", rows(3))
    first = batchpay("run", str(sheet), "--wait", "5", "--out", str(tmp_path / "first.xlsx"))
    assert first.exit_code == 0, first
    paid = Counter(p["accountNumber"] for p in sandbox_payouts(service.url))
    assert len(paid) == 6 and set(paid.values()) == {1}
    assert {r["status"] for r in by_ref(tmp_path / "first.xlsx").values()} == {"COMPLETED"}
    requests = list_requests(service.url)
    assert requests["GET /v1/transaction 200"] >= 2  # PENDING and COMPLETED, before paying
    assert not any(" 400" in k for k in requests), requests

    forget_journal()  # a lost journal: the service's list, read by state, remembers
    again = batchpay("run", str(sheet), "--wait", "0", "--out", str(tmp_path / "again.xlsx"))
    assert again.exit_code == 1, again
    assert {r["status"] for r in by_ref(tmp_path / "again.xlsx").values()} == {"HELD"}
    assert len(sandbox_payouts(service.url)) == 6  # nothing paid twice
    assert not any(" 400" in k for k in list_requests(service.url))


def test_without_the_list_a_run_pays_nothing_and_names_the_one_way_on(
        cli_sandbox: Any, tmp_path: Path) -> None:
    service = cli_sandbox(settle_seconds=0.3, payout_list=False)
    sheet = write_sheet(tmp_path / "nov.xlsx", [row(1), row(2), row(3, remark="fail")])
    refused = batchpay("run", str(sheet), "--wait", "0", "--out", str(tmp_path / "no.xlsx"))
    said = " ".join(refused.stderr.split())
    assert refused.exit_code == 2, refused
    assert sandbox_payouts(service.url) == []
    assert "no payout list" in said and "HTTP 404 on GET /v1/transaction" in said
    assert "a lost, deleted or rolled-back journal would pay its rows again" in said
    assert "service_check_days = 0" in said and "own settings file" in said
    assert "Traceback" not in refused.stderr

    user_settings(tmp_path, "service_check_days = 0\n")
    out = tmp_path / "nov-results.xlsx"
    paid = batchpay("run", str(sheet), "--wait", "0", "--out", str(out))
    assert paid.exit_code == 0, paid
    assert {r["status"] for r in by_ref(out).values()} <= {"PENDING", "PROCESSING"}
    assert len(sandbox_payouts(service.url)) == 3

    deadline = time.monotonic() + 10
    while {p["state"] for p in sandbox_payouts(service.url)} != {"COMPLETED", "REFUNDED"}:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    synced = batchpay("sync", "--out", str(tmp_path / "synced.xlsx"))
    assert synced.exit_code == 1, synced  # the "fail" row was refunded: pay it again
    got = by_ref(tmp_path / "synced.xlsx")
    assert [got[f"T-0000{n}"]["status"] for n in (1, 2, 3)] == ["COMPLETED", "COMPLETED",
                                                                "REFUNDED"]
    assert "the service has no payout list: payouts read one by one by id" in " ".join(
        synced.stderr.split())
    stats = sandbox_stats(service.url)["requests"]
    assert stats.get("GET /v1/transaction/{id} 200", 0) == 3  # followed one by one, by id
    assert len(sandbox_payouts(service.url)) == 3


def test_without_the_list_a_lost_answer_is_never_paid_again(cli_sandbox: Any,
                                                            tmp_path: Path) -> None:
    service = cli_sandbox(settle_seconds=0.05, payout_list=False, drop_rate=1.0)
    user_settings(tmp_path, "service_check_days = 0\n")
    sheet = write_sheet(tmp_path / "nov.xlsx", rows(2))
    for attempt in ("first", "again"):
        out = tmp_path / f"{attempt}.xlsx"
        result = batchpay("run", str(sheet), "--wait", "1", "--out", str(out))
        assert result.exit_code == 1, result
        assert {r["status"] for r in by_ref(out).values()} == {"UNKNOWN"}  # never NOT_SENT
        paid = Counter(p["accountNumber"] for p in sandbox_payouts(service.url))
        assert len(paid) == 2 and set(paid.values()) == {1}


# --- item: a window read only in part holds the rows it could not clear ------------------

@pytest.mark.parametrize("cap", [1, 2, 3])
def test_a_window_cut_by_the_page_cap_holds_every_row_it_could_not_clear(
        cli_sandbox: Any, tmp_path: Path, cap: int) -> None:
    service = cli_sandbox(settle_seconds=0)
    made_elsewhere(service, 250)  # three pages of COMPLETED payouts within the window
    before = len(sandbox_payouts(service.url))
    user_settings(tmp_path, f"sync_max_pages = {cap}\n")
    sheet = write_sheet(tmp_path / "nov.xlsx", rows(3))
    out = tmp_path / "capped.xlsx"
    capped = batchpay("run", str(sheet), "--wait", "0", "--out", str(out))
    assert capped.exit_code == 1, capped
    assert len(sandbox_payouts(service.url)) == before  # nothing paid on a partial read
    for r in by_ref(out).values():
        assert r["status"] == "HELD", r
        assert "not checked against the service's own payout list" in r["error"]
        assert f"sync_max_pages = {cap}" in r["error"]
        assert f"--allow-repeat {r['payout_ref']}" in r["error"]
    assert "could not be read completely" in " ".join(capped.stderr.split())

    released = batchpay("run", str(sheet), "--wait", "0", "--allow-repeat", "T-00002",
                        "--out", str(tmp_path / "released.xlsx"))
    got = by_ref(tmp_path / "released.xlsx")
    assert [got[f"T-0000{n}"]["status"] for n in (1, 3)] == ["HELD", "HELD"], released
    assert got["T-00002"]["status"] in {"PENDING", "PROCESSING", "COMPLETED"}
    assert len(sandbox_payouts(service.url)) == before + 1

    user_settings(tmp_path, "sync_max_pages = 5\n")  # 1 page of PENDING + 4 of COMPLETED
    whole = batchpay("run", str(sheet), "--wait", "0", "--out", str(tmp_path / "whole.xlsx"))
    assert whole.exit_code == 0, whole
    paid = Counter(p["accountNumber"] for p in sandbox_payouts(service.url))
    assert len(sandbox_payouts(service.url)) == before + 3 and max(paid.values()) == 1
