"""`batchpay run` / `rerun` / `--dry-run` end to end, over real HTTP against the sandbox.

Every count is taken at the sandbox (/_sandbox/payouts), never from what the client believes.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.support.e2e import (
    batchpay,
    by_ref,
    edit_results,
    results,
    sandbox_payouts,
    set_wallet,
)
from tests.support.sheets import row, rows, write_sheet


@pytest.fixture
def service(cli_sandbox: Any) -> Any:
    """A sandbox with fast settling; the CLI pointed at it through the environment."""
    return cli_sandbox(settle_seconds=0.3)


def test_happy_path_pays_every_row_once_and_reports_it(service: Any, tmp_path: Path) -> None:
    sheet = write_sheet(tmp_path / "nov.xlsx", rows(6))
    out = tmp_path / "out.xlsx"
    result = batchpay("run", str(sheet), "--out", str(out), "--wait", "10")
    assert result.exit_code == 0, result
    paid = sandbox_payouts(service.url)
    assert len(paid) == 6
    assert Counter(p["accountNumber"] for p in paid) == Counter(f"6222{n:015d}" for n in range(1, 7))
    got = by_ref(out)
    assert {r["status"] for r in got.values()} == {"COMPLETED"}
    assert {r["reference_number"] for r in got.values()} == {p["referenceNumber"] for p in paid}
    assert got["T-00001"]["account_number"] == "6222000000000000001"  # text, all digits
    assert "Results: out.xlsx" in result.stdout  # relative to where the operator is
    assert "SANDBOX" in result.stderr


def test_second_run_of_the_same_sheet_sends_nothing(service: Any, tmp_path: Path) -> None:
    sheet = write_sheet(tmp_path / "nov.xlsx", rows(4))
    assert batchpay("run", str(sheet), "--wait", "10").exit_code == 0
    again = batchpay("run", str(sheet), "--wait", "10", "--out", str(tmp_path / "2.xlsx"))
    assert again.exit_code == 0, again
    assert len(sandbox_payouts(service.url)) == 4
    assert {r["status"] for r in results(tmp_path / "2.xlsx")} == {"COMPLETED"}


def test_an_invalid_row_blocks_the_sheet(service: Any, tmp_path: Path) -> None:
    bad = rows(3) + [row(4, company_id="91440300MA00000040")]  # wrong check character
    sheet = write_sheet(tmp_path / "nov.xlsx", bad)
    result = batchpay("run", str(sheet), "--out", str(tmp_path / "r.xlsx"))
    assert result.exit_code == 1, result
    assert sandbox_payouts(service.url) == []
    got = by_ref(tmp_path / "r.xlsx")
    assert got["T-00004"]["status"] == "INVALID"
    assert str(got["T-00004"]["error"]).startswith("company_id")
    assert {got[f"T-0000{n}"]["status"] for n in (1, 2, 3)} == {"NOT_SENT"}


def test_skip_invalid_pays_the_valid_rows(service: Any, tmp_path: Path) -> None:
    bad = rows(3) + [row(4, account_number="12AB")]
    sheet = write_sheet(tmp_path / "nov.xlsx", bad)
    result = batchpay("run", str(sheet), "--skip-invalid", "--out", str(tmp_path / "r.xlsx"),
                      "--wait", "10")
    assert result.exit_code == 1, result
    assert len(sandbox_payouts(service.url)) == 3
    got = by_ref(tmp_path / "r.xlsx")
    assert got["T-00004"]["status"] == "INVALID"
    assert {got[f"T-0000{n}"]["status"] for n in (1, 2, 3)} == {"COMPLETED"}


def test_remark_fail_ends_failed_or_refunded(service: Any, tmp_path: Path) -> None:
    sheet = write_sheet(tmp_path / "nov.xlsx", rows(2) + [row(3, remark="fail")])
    result = batchpay("run", str(sheet), "--out", str(tmp_path / "r.xlsx"), "--wait", "10")
    assert result.exit_code == 1, result
    got = by_ref(tmp_path / "r.xlsx")
    assert got["T-00003"]["status"] in {"FAILED", "REFUNDED"}
    assert got["T-00001"]["status"] == "COMPLETED"


def test_wrong_key_stops_with_exit_2_and_pays_nothing(service: Any, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BATCHPAY_API_KEY", "not-the-key")
    sheet = write_sheet(tmp_path / "nov.xlsx", rows(3))
    result = batchpay("run", str(sheet))
    assert result.exit_code == 2, result
    assert sandbox_payouts(service.url) == []
    assert "Traceback" not in result.stderr
    assert "API key" in result.stderr or "401" in result.stderr


def test_changed_amount_under_a_paid_ref_is_invalid(service: Any, tmp_path: Path) -> None:
    sheet = write_sheet(tmp_path / "nov.xlsx", rows(2))
    assert batchpay("run", str(sheet), "--wait", "10").exit_code == 0
    changed = write_sheet(tmp_path / "dec.xlsx", [row(1, amount=999999), row(2)])
    result = batchpay("run", str(changed), "--out", str(tmp_path / "r.xlsx"))
    assert result.exit_code == 1, result
    assert len(sandbox_payouts(service.url)) == 2
    got = by_ref(tmp_path / "r.xlsx")
    assert got["T-00001"]["status"] == "INVALID"
    assert "already sent in run" in got["T-00001"]["error"]
    assert "amount" in got["T-00001"]["error"]


def test_rerun_after_fixing_a_refused_quote_pays_just_that_row(service: Any,
                                                               tmp_path: Path) -> None:
    sheet = write_sheet(tmp_path / "nov.xlsx", rows(2) + [row(3, amount=100)])  # < 10 CNY
    first = tmp_path / "first.xlsx"
    assert batchpay("run", str(sheet), "--out", str(first), "--wait", "10").exit_code == 1
    assert by_ref(first)["T-00003"]["status"] == "QUOTE_FAILED"
    assert len(sandbox_payouts(service.url)) == 2
    edit_results(first, "T-00003", amount=250000)
    second = tmp_path / "second.xlsx"
    result = batchpay("rerun", str(first), "--out", str(second), "--wait", "10")
    assert result.exit_code == 0, result
    paid = sandbox_payouts(service.url)
    assert len(paid) == 3
    assert paid[-1]["sourceAmount"] == 250000
    assert {r["status"] for r in results(second)} == {"COMPLETED"}


def test_rerun_after_a_rejected_payout(service: Any, tmp_path: Path) -> None:
    set_wallet(service.url, "NGN", 0)
    sheet = write_sheet(tmp_path / "nov.xlsx", rows(2))
    first = tmp_path / "first.xlsx"
    assert batchpay("run", str(sheet), "--out", str(first)).exit_code == 1
    assert {r["status"] for r in results(first)} == {"REJECTED"}
    assert "Insufficient wallet balance" in str(results(first)[0]["error"])
    assert sandbox_payouts(service.url) == []
    set_wallet(service.url, "NGN", 10_000_000_000)
    result = batchpay("rerun", str(first), "--out", str(tmp_path / "2.xlsx"), "--wait", "10")
    assert result.exit_code == 0, result
    assert len(sandbox_payouts(service.url)) == 2


def test_rerun_of_a_failed_row_makes_exactly_one_new_payout(service: Any,
                                                            tmp_path: Path) -> None:
    sheet = write_sheet(tmp_path / "nov.xlsx", [row(1), row(2, remark="fail")])
    first = tmp_path / "first.xlsx"
    assert batchpay("run", str(sheet), "--out", str(first), "--wait", "10").exit_code == 1
    assert by_ref(first)["T-00002"]["status"] in {"FAILED", "REFUNDED"}
    edit_results(first, "T-00002", remark=None)
    # the same details as a payout that failed: held until a person confirms them
    held = batchpay("rerun", str(first), "--out", str(tmp_path / "held.xlsx"), "--wait", "1")
    assert by_ref(tmp_path / "held.xlsx")["T-00002"]["status"] == "HELD", held
    assert len(sandbox_payouts(service.url)) == 2
    confirmed = batchpay("payees", "confirm", row(2)["company_id"], "--account-last4",
                         row(2)["account_number"][-4:])
    assert confirmed.exit_code == 0, confirmed
    second = tmp_path / "second.xlsx"
    result = batchpay("rerun", str(first), "--out", str(second), "--wait", "10")
    assert result.exit_code == 0, result
    paid = sandbox_payouts(service.url)
    assert Counter(p["accountNumber"] for p in paid)[row(2)["account_number"]] == 2
    assert Counter(p["accountNumber"] for p in paid)[row(1)["account_number"]] == 1
    assert by_ref(second)["T-00002"]["status"] == "COMPLETED"
    # and a plain run of the first sheet afterwards sends nothing more
    assert batchpay("run", str(sheet), "--out", str(tmp_path / "3.xlsx")).exit_code in (0, 1)
    assert len(sandbox_payouts(service.url)) == 3


def test_dry_run_quotes_without_paying(service: Any, tmp_path: Path) -> None:
    sheet = write_sheet(tmp_path / "nov.xlsx", rows(3))
    out = tmp_path / "dry.xlsx"
    result = batchpay("run", str(sheet), "--dry-run", "--out", str(out))
    assert result.exit_code == 0, result
    assert sandbox_payouts(service.url) == []
    got = results(out)
    assert {r["status"] for r in got} == {"NOT_SENT"}
    for r in got:
        assert r["rate"] > 0 and r["fee"] >= 0 and r["delivered_amount"] > 0
        assert r["total_debit"] == pytest.approx(r["amount"] + r["fee"])
    set_wallet(service.url, "NGN", 1000)
    short = batchpay("run", str(sheet), "--dry-run", "--out", str(out), "--overwrite")
    assert short.exit_code == 1, short
    assert "SHORTFALL NGN" in short.stderr


def test_formula_like_text_stays_text(service: Any, tmp_path: Path) -> None:
    names = ['=HYPERLINK("http://example.com","x")', "+86 1234", "-1", "@SUM(A1)"]
    sheet = write_sheet(tmp_path / "nov.xlsx", [row(n * 2 + 1, recipient_name=name)
                                                for n, name in enumerate(names)])
    out = tmp_path / "r.xlsx"
    assert batchpay("run", str(sheet), "--out", str(out), "--wait", "10").exit_code == 0
    import openpyxl

    wb = openpyxl.load_workbook(out)
    formulas = [c for ws in wb for r in ws.iter_rows() for c in r if c.data_type == "f"]
    assert formulas == []
    assert sorted(r["recipient_name"] for r in results(out)) == sorted(names)


def test_a_mistyped_service_url_does_not_claim_the_journal(service: Any, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch,
                                                           no_backoff: None) -> None:
    sheet = write_sheet(tmp_path / "nov.xlsx", rows(2))
    monkeypatch.setenv("BATCHPAY_BASE_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("BATCHPAY_API_KEY", "sandbox-key")
    down = batchpay("run", str(sheet))
    assert down.exit_code == 2 and "Could not reach" in down.stderr, down
    monkeypatch.setenv("BATCHPAY_BASE_URL", service.url)
    result = batchpay("run", str(sheet), "--wait", "10")
    assert result.exit_code == 0, result
    assert len(sandbox_payouts(service.url)) == 2


def test_what_was_read_before_paying_is_kept_out_of_the_collector_while_paying(
        service: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A full garbage collection walks every object (the libraries, the sheet, its
    validation) and stalls every request in flight: while paying, those are frozen."""
    import gc

    from batchpay.engine.sending import Sender

    frozen: list[int] = []
    send = Sender.send

    async def counting_send(self: Sender, job: Any, **options: Any) -> str:
        frozen.append(gc.get_freeze_count())
        return await send(self, job, **options)

    monkeypatch.setattr(Sender, "send", counting_send)
    sheet = write_sheet(tmp_path / "nov.xlsx", rows(3))
    result = batchpay("run", str(sheet), "--wait", "0", "--out", str(tmp_path / "r.xlsx"))
    assert result.exit_code == 0, result
    assert len(frozen) == 3 and min(frozen) > 10_000
    assert gc.get_freeze_count() == 0  # the process is as it was afterwards
    assert len(sandbox_payouts(service.url)) == 3
