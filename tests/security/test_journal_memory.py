"""The journal is not the only memory: an older copy put back, a deleted journal, a fresh
`--journal`, a chain rewritten without its key, two runs through a symbolic link, a payout
committed while a scan was reading, a journal replaced during a run. Every case is played
against the sandbox over real HTTP and judged by what the sandbox holds: no payout twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import sqlite3
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import pytest

from batchpay.clock import stamp
from batchpay.engine.gate import details_of
from batchpay.engine.sending import Sender, SendJob
from batchpay.engine.sync import sync_run
from batchpay.journal.records import GENESIS, RunRecord, RunRow, event_hash
from batchpay.journal.store import Journal
from batchpay.provider.client import PayoutClient
from batchpay.service import Service
from batchpay.settings.model import Settings
from batchpay.sheet.validate import read_payouts
from tests.support.e2e import batchpay, by_ref, own_settings, results, sandbox_payouts
from tests.support.processes import (
    journaled_attempts,
    runner_env,
    sandbox_process,
    start_runner,
)
from tests.support.sheets import row, rows, write_sheet


@pytest.fixture
def service(cli_sandbox: Any) -> Any:
    return cli_sandbox(settle_seconds=0.05)


def journal_path() -> Path:
    return Path(os.environ["BATCHPAY_JOURNAL"])


def copy_journal(source: Path, target: Path) -> None:
    """What an operator's copy does: the file and its write-ahead log, nothing else."""
    for suffix in ("", "-wal", "-shm"):
        Path(str(target) + suffix).unlink(missing_ok=True)
    for suffix in ("", "-wal"):
        if Path(str(source) + suffix).exists():
            shutil.copy2(str(source) + suffix, str(target) + suffix)


def paid_per_account(url: str) -> Counter[str]:
    return Counter(p["accountNumber"] for p in sandbox_payouts(url))


def assert_held_at_the_service(results: Path, refs: list[str]) -> None:
    got = by_ref(results)
    for ref in refs:
        assert got[ref]["status"] == "HELD", got[ref]
        assert "found at the service, not in this journal" in got[ref]["error"]
        assert f"--allow-repeat {ref}" in got[ref]["error"]


# --- 7: the service's own ledger, checked before paying ----------------------------------

@pytest.mark.parametrize("how", ["older copy", "deleted", "fresh --journal"])
def test_a_journal_that_forgot_pays_nothing_twice(service: Any, tmp_path: Path,
                                                  how: str) -> None:
    journal = journal_path()
    first = write_sheet(tmp_path / "oct.xlsx", rows(2, start=20))
    assert batchpay("run", str(first), "--wait", "0").exit_code == 0
    copy_journal(journal, tmp_path / "backup.sqlite3")  # the journal before November
    sheet = write_sheet(tmp_path / "nov.xlsx", rows(5))
    paid = batchpay("run", str(sheet), "--wait", "0", "--out", str(tmp_path / "paid.xlsx"))
    assert paid.exit_code == 0, paid
    assert len(sandbox_payouts(service.url)) == 7

    extra: list[str] = []
    if how == "older copy":
        copy_journal(tmp_path / "backup.sqlite3", journal)
    elif how == "deleted":
        for suffix in ("", "-wal", "-shm"):
            Path(str(journal) + suffix).unlink(missing_ok=True)
    else:
        extra = ["--journal", str(tmp_path / "fresh" / "journal.sqlite3")]
    dry = batchpay("run", str(sheet), "--dry-run", *extra, "--out", str(tmp_path / "dry.xlsx"))
    again = batchpay("run", str(sheet), "--wait", "0", *extra,
                     "--out", str(tmp_path / "again.xlsx"))
    assert len(sandbox_payouts(service.url)) == 7, again  # 0 extra
    assert set(paid_per_account(service.url).values()) == {1}
    assert again.exit_code == 1, again
    assert "service's own payout list holds" in " ".join(again.stderr.split()), again
    assert_held_at_the_service(tmp_path / "again.xlsx", [f"T-{n:05d}" for n in range(1, 6)])
    assert dry.exit_code == 1, dry  # the dry run showed what would be held
    assert_held_at_the_service(tmp_path / "dry.xlsx", [f"T-{n:05d}" for n in range(1, 6)])


def test_a_dashboard_payment_holds_the_row_and_allow_repeat_releases_it(
        service: Any, tmp_path: Path) -> None:
    # paid by hand in the provider's dashboard: same account, amount and currencies, a
    # remark of its own and no payout_ref
    target = row(3)
    with httpx.Client(base_url=service.url, headers={"X-API-Key": service.api_key}) as http:
        quote = http.post("/v1/quote", json={
            "paymentChannel": "BANK_TRANSFER", "target": {"country": "CN", "currency": "CNY"},
            "source": {"amount": str(target["amount"]), "country": "NG", "currency": "NGN"}})
        quote.raise_for_status()
        http.post("/v2/payout", json={
            "quoteId": quote.json()["data"]["id"], "reason": "by hand", "remark": "march",
            "recipient": {"name": target["recipient_name"], "type": "INDIVIDUAL",
                          "icNumber": target["ic_number"], "paymentChannel": "BANK_TRANSFER",
                          "currency": "CNY", "country": "CN",
                          "account": {"accountNumber": target["account_number"],
                                      "bankName": target["bank_name"]}}}).raise_for_status()
    sheet = write_sheet(tmp_path / "nov.xlsx", rows(3))
    held = batchpay("run", str(sheet), "--wait", "0", "--out", str(tmp_path / "held.xlsx"))
    assert paid_per_account(service.url)[target["account_number"]] == 1, held
    assert held.exit_code == 1, held
    got = by_ref(tmp_path / "held.xlsx")
    assert [got[f"T-{n:05d}"]["status"] for n in (1, 2)] != ["HELD", "HELD"]
    assert_held_at_the_service(tmp_path / "held.xlsx", ["T-00003"])
    assert "same account, amount and currencies" in got["T-00003"]["error"]
    assert paid_per_account(service.url)[target["account_number"]] == 1

    released = batchpay("run", str(sheet), "--wait", "0", "--allow-repeat", "T-00003",
                        "--out", str(tmp_path / "released.xlsx"))
    assert released.exit_code == 0, released
    assert paid_per_account(service.url)[target["account_number"]] == 2  # released: once more
    assert len(sandbox_payouts(service.url)) == 4


def test_the_payout_ref_travels_in_the_remark(service: Any, tmp_path: Path) -> None:
    sheet = write_sheet(tmp_path / "nov.xlsx", [row(1), row(2, remark="Invoice 0002"),
                                                row(3, remark="x" * 140)])
    assert batchpay("run", str(sheet), "--wait", "0").exit_code == 0
    remarks = {p["accountNumber"][-3:]: p["remark"] for p in sandbox_payouts(service.url)}
    assert remarks == {"001": "ref:T-00001", "002": "Invoice 0002 ref:T-00002",
                       "003": "x" * 128 + " ref:T-00003"}  # no room: the remark is cut


def backdate_payouts(state: Path, days: float) -> None:
    """Every payout the sandbox holds made `days` earlier, in its list as in its records: what
    the service shows when the sheet is run again weeks later."""
    from batchpay.sandbox.state import iso
    from batchpay.sandbox.wire import dumps, loads

    db = sqlite3.connect(state, timeout=10)
    with db:
        for seq, created, record in db.execute(
                "SELECT seq, created, record FROM payout").fetchall():
            moved = created - days * 86400
            db.execute("UPDATE payout SET created = ?, record = ? WHERE seq = ?",
                       (moved, dumps({**loads(record), "created": iso(moved)}), seq))
    db.close()


def forget_journal() -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(str(journal_path()) + suffix).unlink(missing_ok=True)


@pytest.mark.parametrize("days", [25, 40])
def test_a_journal_lost_and_the_sheet_run_again_weeks_later_pays_nothing_twice(
        service: Any, tmp_path: Path, days: int) -> None:
    sheet = write_sheet(tmp_path / "oct.xlsx", rows(5))
    assert batchpay("run", str(sheet), "--wait", "0").exit_code == 0
    backdate_payouts(tmp_path / "sandbox.sqlite3", days)  # paid weeks ago
    forget_journal()  # a new laptop, a journal deleted
    again = batchpay("run", str(sheet), "--wait", "0", "--out", str(tmp_path / "again.xlsx"))
    assert len(sandbox_payouts(service.url)) == 5, again  # 0 extra
    assert again.exit_code == 1, again
    refs = [f"T-{n:05d}" for n in range(1, 6)]
    assert_held_at_the_service(tmp_path / "again.xlsx", refs)
    got = by_ref(tmp_path / "again.xlsx")
    assert all("matched by its payout_ref" in got[ref]["error"] for ref in refs)
    run = {str(r["field"]): str(r["value"]) for r in results(tmp_path / "again.xlsx", "Run")}
    assert run["setting: service_check_days"] == "62"
    checked = run["service payout list checked"]
    # one page of PENDING, one of COMPLETED: the list's two states that hold paid payouts
    assert "pages=2" in checked and "payouts_seen=5" in checked and "complete=True" in checked


def salaries(month: str, numbers: range = range(1, 4)) -> list[dict[str, Any]]:
    return [row(n, payout_ref=f"{month}-{n:03d}") for n in numbers]


def test_last_months_salaries_are_paid_but_last_months_payout_ref_is_held(
        service: Any, tmp_path: Path) -> None:
    october = write_sheet(tmp_path / "oct.xlsx", salaries("OCT"))
    assert batchpay("run", str(october), "--wait", "0").exit_code == 0
    backdate_payouts(tmp_path / "sandbox.sqlite3", 30)
    forget_journal()  # November starts from a fresh journal
    # equal salaries under new refs, and October's third row left in the sheet as it was
    november = write_sheet(tmp_path / "nov.xlsx",
                           [*salaries("NOV", range(1, 3)), *salaries("OCT", range(3, 4))])
    paid = batchpay("run", str(november), "--wait", "0", "--out", str(tmp_path / "nov-r.xlsx"))
    assert paid.exit_code == 1, paid
    got = by_ref(tmp_path / "nov-r.xlsx")
    assert {got[ref]["status"] for ref in ("NOV-001", "NOV-002")} <= {
        "PENDING", "PROCESSING", "COMPLETED"}, got  # not held by account and amount
    assert_held_at_the_service(tmp_path / "nov-r.xlsx", ["OCT-003"])
    assert "matched by its payout_ref" in got["OCT-003"]["error"]
    assert paid_per_account(service.url) == Counter({
        row(1)["account_number"]: 2, row(2)["account_number"]: 2, row(3)["account_number"]: 1})


def user_settings(tmp_path: Path, text: str) -> None:
    path = tmp_path / "config" / "batchpay" / "batchpay.toml"  # XDG_CONFIG_HOME of cli_sandbox
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_repeat_window_days_0_leaves_the_service_check_on(service: Any, tmp_path: Path) -> None:
    user_settings(tmp_path, "repeat_window_days = 0\n")
    sheet = write_sheet(tmp_path / "oct.xlsx", rows(3))
    assert batchpay("run", str(sheet), "--wait", "0").exit_code == 0
    forget_journal()
    again = batchpay("run", str(sheet), "--wait", "0", "--out", str(tmp_path / "again.xlsx"))
    assert len(sandbox_payouts(service.url)) == 3, again
    assert_held_at_the_service(tmp_path / "again.xlsx", [f"T-{n:05d}" for n in range(1, 4)])


def test_a_longer_repeat_window_reads_the_service_list_as_far_back(
        service: Any, tmp_path: Path) -> None:
    # twice-a-month payments: the user holds equal payments for 90 days, the list is read
    # back 30 days only by service_check_days, yet an equal payment 40 days ago holds
    user_settings(tmp_path, "repeat_window_days = 90\nservice_check_days = 30\n")
    october = write_sheet(tmp_path / "oct.xlsx", salaries("OCT"))
    assert batchpay("run", str(october), "--wait", "0").exit_code == 0
    backdate_payouts(tmp_path / "sandbox.sqlite3", 40)
    forget_journal()
    november = write_sheet(tmp_path / "nov.xlsx", salaries("NOV"))
    held = batchpay("run", str(november), "--wait", "0", "--out", str(tmp_path / "held.xlsx"))
    assert len(sandbox_payouts(service.url)) == 3, held
    refs = [f"NOV-{n:03d}" for n in range(1, 4)]
    assert_held_at_the_service(tmp_path / "held.xlsx", refs)
    got = by_ref(tmp_path / "held.xlsx")
    assert all("the same account, amount and currencies" in got[r]["error"] for r in refs)


def test_a_folder_file_cannot_switch_the_service_check_off(service: Any, tmp_path: Path) -> None:
    sheet = write_sheet(tmp_path / "oct.xlsx", rows(3))
    assert batchpay("run", str(sheet), "--wait", "0").exit_code == 0
    forget_journal()
    (tmp_path / "batchpay.toml").write_text("service_check_days = 0\n", encoding="utf-8")
    refused = batchpay("run", str(sheet), "--wait", "0")
    assert len(sandbox_payouts(service.url)) == 3, refused
    assert refused.exit_code == 2, refused
    assert "service_check_days = 0 (yours: 62)" in " ".join(refused.stderr.split())
    # in the user's own file it is switched off, said on the Run sheet: paid again
    (tmp_path / "batchpay.toml").unlink()
    user_settings(tmp_path, "service_check_days = 0\n")
    off = batchpay("run", str(sheet), "--wait", "0", "--out", str(tmp_path / "off.xlsx"))
    assert off.exit_code == 0, off
    assert len(sandbox_payouts(service.url)) == 6
    run = {str(r["field"]): str(r["value"]) for r in results(tmp_path / "off.xlsx", "Run")}
    assert run["setting: service_check_days"] == "0"


# --- 7: the plan's chain head, and a chain recomputed without its key --------------------

def test_a_plan_runs_only_on_the_journal_state_it_was_made_from(
        service: Any, tmp_path: Path) -> None:
    from tests.controls.test_approval import approved_plan

    journal = journal_path()
    earlier = write_sheet(tmp_path / "oct.xlsx", rows(1, start=30))
    assert batchpay("run", str(earlier), "--wait", "0").exit_code == 0
    copy_journal(journal, tmp_path / "backup.sqlite3")
    (tmp_path / "batchpay.toml").unlink(missing_ok=True)
    plan, _, _, _ = approved_plan(tmp_path)
    copy_journal(tmp_path / "backup.sqlite3", journal)  # rolled back to before the plan
    refused = batchpay("run", "--plan", str(plan), "--wait", "0")
    assert len(sandbox_payouts(service.url)) == 1, refused  # the October row only
    assert refused.exit_code == 2, refused
    assert "chain head" in refused.stderr
    for suffix in ("", "-wal", "-shm"):
        Path(str(journal) + suffix).unlink(missing_ok=True)
    fresh = batchpay("run", "--plan", str(plan), "--wait", "0")
    assert len(sandbox_payouts(service.url)) == 1, fresh
    assert fresh.exit_code == 2, fresh


def _forget(journal: Path, ref: str) -> None:
    """An attacker's edit: the payout of `ref` removed from the tables and the chain, and
    the chain's hashes recomputed after it with the published (unkeyed) algorithm."""
    db = sqlite3.connect(journal)
    with db:
        db.execute("DELETE FROM payouts WHERE payout_ref = ?", (ref,))
        db.execute("DELETE FROM attempts WHERE payout_ref = ?", (ref,))
        db.execute("UPDATE run_rows SET linked = 0, status = 'NOT_SENT' WHERE payout_ref = ?",
                   (ref,))
        db.execute("DELETE FROM events WHERE payout_ref = ?", (ref,))
        kept = db.execute("SELECT seq, at, kind, run_id, payout_ref, data FROM events "
                          "ORDER BY seq").fetchall()
        db.execute("DELETE FROM events")
        prev = GENESIS
        for seq, (_, at, kind, run_id, pref, data) in enumerate(kept, start=1):
            digest = event_hash(prev, seq, at, kind, run_id, pref, data)
            db.execute("INSERT INTO events (seq, at, kind, run_id, payout_ref, data, prev_hash,"
                       " hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                       (seq, at, kind, run_id, pref, data, prev, digest))
            prev = digest
    db.close()


def test_events_removed_and_the_chain_recomputed_fail_verify_and_pay_nothing(
        service: Any, tmp_path: Path) -> None:
    journal = journal_path()
    sheet = write_sheet(tmp_path / "nov.xlsx", rows(3))
    assert batchpay("run", str(sheet), "--wait", "0").exit_code == 0
    assert batchpay("verify").exit_code == 0
    _forget(journal, "T-00002")
    checked = batchpay("verify")
    again = batchpay("run", str(sheet), "--wait", "0", "--out", str(tmp_path / "again.xlsx"))
    assert len(sandbox_payouts(service.url)) == 3, again
    assert again.exit_code == 2, again  # the rewritten chain is refused before any request
    assert checked.exit_code == 1, checked
    assert "recomputed without the chain's key" in checked.stderr


def test_the_chain_key_lives_outside_the_journal(service: Any, tmp_path: Path,
                                                 data_home: Path) -> None:
    sheet = write_sheet(tmp_path / "nov.xlsx", rows(1))
    assert batchpay("run", str(sheet), "--wait", "0").exit_code == 0
    key = data_home / "batchpay" / "chain.key"
    assert key.stat().st_mode & 0o777 == 0o600
    assert key.read_text().strip() not in journal_path().read_bytes().hex()
    key.rename(tmp_path / "elsewhere.key")  # another user, without the key
    checked = batchpay("verify")
    assert checked.exit_code == 1 and "chain.key" in checked.stderr, checked


# --- 8: the run lock is on the file, whatever path reaches it ----------------------------

def test_two_runs_through_a_symbolic_link_pay_each_row_once(tmp_path: Path) -> None:
    real = tmp_path / "journal" / "journal.sqlite3"
    real.parent.mkdir()
    link = tmp_path / "link.sqlite3"
    link.symlink_to(real)
    sheet = write_sheet(tmp_path / "nov.xlsx", rows(10))
    with sandbox_process("--latency-ms", "20", "--settle-seconds", "0.05",
                         state=tmp_path / "sandbox.sqlite3") as url:
        env = runner_env(url, real)
        one = start_runner("run", str(sheet), "--wait", "0", "--concurrency", "1", "--out",
                           str(tmp_path / "one.xlsx"), env=env, cwd=tmp_path)
        deadline = time.monotonic() + 60
        while journaled_attempts(real) < 1:  # the first run holds the journal and is paying
            assert time.monotonic() < deadline and one.poll() is None
            time.sleep(0.02)
        # stopped there, holding the journal, until the second run has tried: however slow
        # the machine, the first cannot finish (and let go) before the second is refused
        one.send_signal(signal.SIGSTOP)
        try:
            two = start_runner("run", str(sheet), "--wait", "0", "--out",
                               str(tmp_path / "two.xlsx"),
                               env={**env, "BATCHPAY_JOURNAL": str(link)}, cwd=tmp_path)
            _, err_two = two.communicate(timeout=120)
        finally:
            one.send_signal(signal.SIGCONT)
        one.communicate(timeout=120)
        assert len(sandbox_payouts(url)) == 10, err_two
        assert two.returncode == 2, err_two
        assert "Another batchpay run is using the journal" in " ".join(err_two.split())


def test_a_payout_request_is_refused_for_a_row_another_run_sent(
        sandbox: Any, tmp_path: Path) -> None:
    """Two journals objects on one file, as two runs would be had the lock failed: the row
    planned by both is sent by the first one only."""
    sheet = write_sheet(tmp_path / "nov.xlsx", [row(1)])
    _, validation = read_payouts(sheet)
    payout = validation.rows[0].payout
    assert payout is not None
    job = SendJob(0, payout.payout_ref, details_of(payout), payout, "NG")
    path = tmp_path / "journal.sqlite3"

    async def both() -> list[str]:
        statuses = []
        with Journal(path) as a, Journal(path) as b:
            for n, journal in enumerate((a, b)):
                run = RunRecord(id=f"run-{n}", kind="run", started_at=stamp(),
                                sheet="nov.xlsx", input_sha256="0" * 64,
                                input_columns=["payout_ref"])
                journal.start_run(run, [RunRow(seq=0, row=2, payout_ref=job.ref,
                                               inputs=[job.ref], status="NOT_SENT")])
            async with PayoutClient(sandbox.url, sandbox.api_key) as client:
                for n, journal in enumerate((a, b)):
                    statuses.append(await Sender(journal, client, f"run-{n}").send(job))
        return statuses

    first, second = asyncio.run(both())
    assert first == "PENDING" and second in {"PENDING", "PROCESSING", "COMPLETED"}
    assert len(sandbox_payouts(sandbox.url)) == 1


# --- 9: "never received" only for quotes that expired a read timeout before the scan -----

def in_doubt_then_committed_during_a_scan(service: Any, tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """(sheet, journal): one row in doubt (its request journaled, its answer lost, its quote
    valid one more second); the request reaches the service while the next scan of the list
    is reading (after the list's last page was read), and that scan ends after the quote
    expired. Returns once the list is patched so; the patch commits once."""
    sheet = write_sheet(tmp_path / "nov.xlsx", [row(1)])
    _, validation = read_payouts(sheet)
    payout = validation.rows[0].payout
    assert payout is not None
    journal = tmp_path / "journal.sqlite3"
    quote = service.state.create_quote("BANK_TRANSFER", payout.amount, "NGN", "NG", "CNY", "CN")
    body = payout.payout_body(quote["id"])
    run = RunRecord(id="20251120-080000-abcd", kind="run", started_at=stamp(),
                    sheet="nov.xlsx", input_sha256="0" * 64, input_columns=["payout_ref"])
    with Journal(journal) as j:
        j.bind_service(service.url)
        j.start_run(run, [RunRow(seq=0, row=2, payout_ref=payout.payout_ref,
                                 inputs=[payout.payout_ref], status="NOT_SENT")])
        j.record_intent(payout.payout_ref, run.id, details_of(payout), quote, body,
                        expires_at=time.time() + 1.0, seq=0, amount=payout.amount,
                        source_currency="NGN", target_currency="CNY")
        j.set_status(payout.payout_ref, "UNKNOWN", run_id=run.id, error="no answer")
    quote_expiry = time.time() + 1.0
    real_list = PayoutClient.list_payouts
    committed: list[bool] = []

    async def list_then_commit(self: PayoutClient, **kwargs: Any) -> Any:
        page = await real_list(self, **kwargs)
        if not committed:
            committed.append(True)
            service.state.create_payout(body)
            await asyncio.sleep(max(0.0, quote_expiry - time.time()) + 0.2)
        return page

    monkeypatch.setattr(PayoutClient, "list_payouts", list_then_commit)
    return sheet, journal


def test_a_payout_committed_while_syncs_scan_reads_is_not_paid_again(
        sandbox_factory: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    service = sandbox_factory(state_path=tmp_path / "sandbox.sqlite3", quote_ttl=1.0,
                              settle_seconds=0.05)
    sheet, journal = in_doubt_then_committed_during_a_scan(service, tmp_path, monkeypatch)
    settings = Settings(base_url=service.url, api_key=service.api_key, journal=journal,
                        read_timeout=5.0)
    opened = Service(service.url, service.api_key, embedded=False)
    with Journal(journal) as j:
        [run] = j.runs()
    synced = sync_run(settings, run.id, tmp_path / "synced.xlsx",
                      lambda: contextlib.nullcontext(opened))
    again = batchpay("run", str(sheet), "--wait", "2", "--journal", str(journal),
                     "--out", str(tmp_path / "again.xlsx"),
                     env={"BATCHPAY_BASE_URL": service.url, "BATCHPAY_API_KEY": service.api_key})
    assert len(sandbox_payouts(service.url)) == 1, again  # found in the list, not paid again
    assert synced.never_received == 0  # not proven: the quote expired during the scan
    assert again.exit_code == 0, again


def test_a_payout_committed_while_a_runs_lookup_reads_is_not_paid_again(
        sandbox_factory: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    service = sandbox_factory(state_path=tmp_path / "sandbox.sqlite3", quote_ttl=1.0,
                              settle_seconds=0.05)
    sheet, journal = in_doubt_then_committed_during_a_scan(service, tmp_path, monkeypatch)
    own_settings("read_timeout = 1\n")
    monkeypatch.chdir(tmp_path)
    again = batchpay("run", str(sheet), "--wait", "5", "--journal", str(journal),
                     "--out", str(tmp_path / "again.xlsx"),
                     env={"BATCHPAY_BASE_URL": service.url, "BATCHPAY_API_KEY": service.api_key})
    assert len(sandbox_payouts(service.url)) == 1, again  # found by a later scan: not resent
    assert again.exit_code == 0, again
    assert by_ref(tmp_path / "again.xlsx")["T-00001"]["status"] in {"PENDING", "PROCESSING",
                                                                   "COMPLETED"}


def test_sync_takes_the_journal_lock(service: Any, tmp_path: Path) -> None:
    sheet = write_sheet(tmp_path / "nov.xlsx", rows(1))
    assert batchpay("run", str(sheet), "--wait", "0").exit_code == 0
    with Journal(journal_path()) as holder:
        holder.lock()
        synced = batchpay("sync")
    assert synced.exit_code == 2, synced
    assert "Another batchpay run is using the journal" in " ".join(synced.stderr.split())


# --- 10: a journal deleted or replaced during a run ---------------------------------------

@pytest.mark.parametrize("how", ["deleted", "replaced"])
def test_a_journal_replaced_during_a_run_is_said_and_nothing_is_paid_twice(
        tmp_path: Path, how: str) -> None:
    journal = tmp_path / "journal" / "journal.sqlite3"
    sheet = write_sheet(tmp_path / "nov.xlsx", rows(6))
    with sandbox_process("--latency-ms", "200", "--settle-seconds", "0.05",
                         state=tmp_path / "sandbox.sqlite3") as url:
        env = runner_env(url, journal)
        proc = start_runner("run", str(sheet), "--wait", "0", "--out",
                            str(tmp_path / "one.xlsx"), env=env, cwd=tmp_path)
        deadline = time.monotonic() + 60
        while not journal.exists() or journal.stat().st_size == 0:
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.05)
        time.sleep(1.0)
        for suffix in ("", "-wal", "-shm"):
            Path(str(journal) + suffix).unlink(missing_ok=True)
        if how == "replaced":
            with Journal(journal):
                pass
        _, err = proc.communicate(timeout=120)
        assert len(sandbox_payouts(url)) == 6, err
        again = start_runner("run", str(sheet), "--wait", "0", "--out",
                             str(tmp_path / "two.xlsx"), env=env, cwd=tmp_path)
        _, err_again = again.communicate(timeout=120)
        assert len(sandbox_payouts(url)) == 6, err_again  # found at the service: held
        assert set(paid_per_account(url).values()) == {1}
        assert again.returncode == 1, err_again
        assert proc.returncode == 1, err
        assert "was deleted, moved or replaced during this run" in " ".join(err.split())
