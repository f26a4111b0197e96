"""Payee change control: a payee whose bank details changed since its last payout, whose
account was paid to another payee, whose last payout to these details failed, or who is
listed twice with different details is HELD until a person confirms the new details, one
payee at a time; nothing held is ever sent, by any path."""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

import openpyxl
import pytest

from batchpay.controls.payee_register import Register
from batchpay.controls.payees import (
    CHANGED,
    CONFLICT,
    FAILED_BEFORE,
    KNOWN,
    NEW,
    SHARED,
    HoldRules,
    classify,
)
from tests.support.e2e import batchpay, by_ref, edit_results, own_settings, results, sandbox_payouts
from tests.support.sheets import HEADERS, resident_id, rows, write_sheet

PAYEE_HEADERS = ["payee_id", *HEADERS]


@pytest.fixture
def service(cli_sandbox: Any) -> Any:
    return cli_sandbox(settle_seconds=0.05)


def journal_path(tmp_path: Path) -> Path:
    return tmp_path / "journal" / "journal.sqlite3"


def month1(count: int = 8) -> list[dict[str, Any]]:
    sheet = rows(count)
    for n, values in enumerate(sheet, start=1):
        values["payee_id"] = f"SUP-{n:03d}"
    sheet[2]["remark"] = "fail"  # SUP-003's payout ends FAILED, then REFUNDED
    return sheet


def next_month(sheet: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The same payees with new payout_refs and amounts (so no repeat-payment hold)."""
    again = [dict(values) for values in sheet]
    for n, values in enumerate(again, start=1):
        values["payout_ref"] = f"DEC-{n:03d}"
        values["amount"] = values["amount"] + 1000
        values["remark"] = None
    return again


def pay_month1(tmp_path: Path) -> list[dict[str, Any]]:
    first = month1()
    sheet = write_sheet(tmp_path / "november.xlsx", first, PAYEE_HEADERS)
    outcome = batchpay("run", str(sheet), "--wait", "5", "--out", str(tmp_path / "nov.xlsx"))
    assert outcome.exit_code == 1, outcome  # SUP-003 failed
    statuses = {r["payout_ref"]: r["status"] for r in results(tmp_path / "nov.xlsx")}
    assert statuses["T-00003"] in ("FAILED", "REFUNDED"), statuses
    return first


def planted(first: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Month 2 with every case the register must notice, and noise it must not."""
    second = next_month(first)
    second[0]["account_number"] = "6217000000000009876"  # SUP-001: account changed
    second[1]["bank_name"] = "招商银行" if second[1]["bank_name"] != "招商银行" else "交通银行"
    # SUP-003: the details its failed payout went to, unchanged: previously failed
    second[3]["account_number"] = first[4]["account_number"]  # SUP-004 given SUP-005's account
    account = second[4]["account_number"]  # SUP-005: the same account, typed with noise
    second[4]["account_number"] = f"{account[:4]} {account[4:8]}-{account[8:12]} {account[12:]}"
    second[7]["recipient_name"] = f"  {second[7]['recipient_name']} "  # SUP-008: white space
    twice = dict(second[6], payout_ref="DEC-007B", account_number="6228480000000000777")
    new = rows(1, start=9)[0] | {"payee_id": "SUP-009", "payout_ref": "DEC-009"}
    return [*second, twice, new]


def test_month_two_holds_exactly_the_planted_changes(service: Any, tmp_path: Path) -> None:
    first = pay_month1(tmp_path)
    paid_before = len(sandbox_payouts(service.url))
    sheet = write_sheet(tmp_path / "december.xlsx", planted(first), PAYEE_HEADERS)
    out = tmp_path / "dec.xlsx"
    outcome = batchpay("run", str(sheet), "--wait", "5", "--out", str(out), "--json")
    assert outcome.exit_code == 1, outcome
    cells = by_ref(out)
    held = {ref for ref, r in cells.items() if r["status"] == "HELD"}
    assert held == {"DEC-001", "DEC-002", "DEC-003", "DEC-004", "DEC-007", "DEC-007B"}
    assert {ref for ref, r in cells.items() if r["status"] == "COMPLETED"} == {
        "DEC-005", "DEC-006", "DEC-008", "DEC-009"}
    sent = {p["accountNumber"] for p in sandbox_payouts(service.url)[paid_before:]}
    assert len(sent) == 4  # nothing held reached the service
    assert "6217000000000009876" not in sent
    assert cells["DEC-001"]["reference_number"] is None

    error = cells["DEC-001"]["error"]
    assert "changed since" in error and "6222…0001 → 6217…9876" in error
    assert "batchpay payees confirm SUP-001 --account-last4 9876" in error
    assert "bank_name" in cells["DEC-002"]["error"]
    assert "previously failed" in cells["DEC-003"]["error"]
    assert "shared account" in cells["DEC-004"]["error"] and "SUP-005" in cells["DEC-004"]["error"]
    assert "two different sets of bank details" in cells["DEC-007B"]["error"]

    document = json.loads(outcome.stdout)
    reasons = {c["payout_ref"]: c["reason"] for c in document["payee_changes"]}
    assert reasons == {"DEC-001": CHANGED, "DEC-002": CHANGED, "DEC-003": FAILED_BEFORE,
                       "DEC-004": SHARED, "DEC-007": CONFLICT, "DEC-007B": CONFLICT,
                       "DEC-009": NEW}
    assert all("details" not in c for c in document["payee_changes"])  # no full accounts
    assert "Payees" in outcome.stderr and "SUP-001" in outcome.stderr

    sheet_rows = results(out, "Payee changes")
    assert [(r["payee"], r["field"], r["before"], r["after"], r["decision"])
            for r in sheet_rows if r["payout_ref"] == "DEC-001"] == [
        ("SUP-001", "account_number", "6222…0001", "6217…9876", "HELD")]
    assert {r["payout_ref"]: r["decision"] for r in sheet_rows}["DEC-009"] == "pay"
    assert Counter(r["reason"] for r in sheet_rows)[CONFLICT] == 2


def test_an_unchanged_second_month_holds_nothing(service: Any, tmp_path: Path) -> None:
    first = pay_month1(tmp_path)
    second = next_month(first)
    del second[2]  # the failed payee is not paid again this month
    sheet = write_sheet(tmp_path / "december.xlsx", second, PAYEE_HEADERS)
    outcome = batchpay("run", str(sheet), "--wait", "5", "--out", str(tmp_path / "dec.xlsx"))
    assert outcome.exit_code == 0, outcome
    assert {r["status"] for r in results(tmp_path / "dec.xlsx")} == {"COMPLETED"}
    assert "Payee changes" not in openpyxl.load_workbook(tmp_path / "dec.xlsx").sheetnames


def test_confirming_one_payee_pays_just_that_row_and_wrong_digits_trust_nothing(
        service: Any, tmp_path: Path) -> None:
    first = pay_month1(tmp_path)
    sheet = write_sheet(tmp_path / "december.xlsx", planted(first), PAYEE_HEADERS)
    out = tmp_path / "dec.xlsx"
    assert batchpay("run", str(sheet), "--wait", "5", "--out", str(out)).exit_code == 1
    paid_before = len(sandbox_payouts(service.url))

    shown = batchpay("payees", "show", "SUP-001")
    assert shown.exit_code == 0, shown
    assert "6217000000000009876" in shown.stdout  # in full, for the read-back call

    wrong = batchpay("payees", "confirm", "SUP-001", "--account-last4", "0001")
    assert wrong.exit_code == 2, wrong
    assert "do not match" in wrong.stderr
    assert _events(tmp_path, "payee.confirmed") == []
    again = batchpay("rerun", str(out), "--wait", "5", "--out", str(tmp_path / "dec-2.xlsx"))
    assert again.exit_code == 1
    assert by_ref(tmp_path / "dec-2.xlsx")["DEC-001"]["status"] == "HELD"
    assert len(sandbox_payouts(service.url)) == paid_before

    right = batchpay("payees", "confirm", "SUP-001", "--account-last4", "9876",
                     "--method", "phone", "--note", "called +86 755 0000 0001")
    assert right.exit_code == 0, right
    [event] = _events(tmp_path, "payee.confirmed")
    assert event["payee"] == "SUP-001" and event["method"] == "phone"
    assert event["details"]["account_number"] == "6217000000000009876"
    assert event["before"]["account_number"] == "6222000000000000001"
    assert event["by"]

    paid = batchpay("rerun", str(tmp_path / "dec-2.xlsx"), "--wait", "5",
                    "--out", str(tmp_path / "dec-3.xlsx"))
    cells = by_ref(tmp_path / "dec-3.xlsx")
    assert cells["DEC-001"]["status"] == "COMPLETED", paid
    assert {ref for ref, r in cells.items() if r["status"] == "HELD"} == {
        "DEC-002", "DEC-003", "DEC-004", "DEC-007", "DEC-007B"}
    new = sandbox_payouts(service.url)[paid_before:]
    assert [p["accountNumber"] for p in new] == ["6217000000000009876"]
    run_sheet = {r["field"]: r["value"] for r in results(tmp_path / "dec-3.xlsx", "Run")}
    assert "SUP-001" in run_sheet["payee confirmation relied on"]

    listed = batchpay("payees", "--json")
    lines = [line for line in json.loads(listed.stdout) if line["payee"] == "SUP-001"]
    assert [(line["account"], line["payouts"]) for line in lines] == [
        ("6222…0001", 1), ("6217…9876", 1)]


def test_no_path_pays_a_held_row(service: Any, tmp_path: Path) -> None:
    first = pay_month1(tmp_path)
    sheet = write_sheet(tmp_path / "december.xlsx", planted(first), PAYEE_HEADERS)
    out = tmp_path / "dec.xlsx"
    assert batchpay("run", str(sheet), "--wait", "5", "--out", str(out)).exit_code == 1
    paid_before = len(sandbox_payouts(service.url))
    # the operator marks the held row as not sent in the workbook and reruns it
    edit_results(out, "DEC-001", status="NOT_SENT", error=None)
    rerun = batchpay("rerun", str(out), "--wait", "2", "--out", str(tmp_path / "dec-2.xlsx"))
    assert rerun.exit_code == 1
    assert by_ref(tmp_path / "dec-2.xlsx")["DEC-001"]["status"] == "HELD"
    # the same sheet run again, and a sync of the run
    assert batchpay("run", str(sheet), "--wait", "2",
                    "--out", str(tmp_path / "dec-3.xlsx")).exit_code == 1
    assert batchpay("sync", "--out", str(tmp_path / "synced.xlsx")).exit_code in (0, 1)
    assert by_ref(tmp_path / "synced.xlsx")["DEC-001"]["status"] == "HELD"
    assert len(sandbox_payouts(service.url)) == paid_before


def test_validate_and_dry_run_show_the_findings(service: Any, tmp_path: Path) -> None:
    first = pay_month1(tmp_path)
    sheet = write_sheet(tmp_path / "december.xlsx", planted(first), PAYEE_HEADERS)
    checked = batchpay("validate", str(sheet), "--no-bank-check", "--json")
    assert checked.exit_code == 0, checked  # every row is valid; the holds are the run's
    reasons = {c["payout_ref"]: c["reason"] for c in json.loads(checked.stdout)["payee_changes"]}
    assert reasons["DEC-001"] == CHANGED and reasons["DEC-004"] == SHARED
    paid_before = len(sandbox_payouts(service.url))
    dry = batchpay("run", str(sheet), "--dry-run", "--out", str(tmp_path / "dry.xlsx"))
    assert dry.exit_code == 1, dry
    assert by_ref(tmp_path / "dry.xlsx")["DEC-001"]["status"] == "HELD"
    assert len(sandbox_payouts(service.url)) == paid_before


def test_verify_finds_an_edited_confirmation(service: Any, tmp_path: Path) -> None:
    first = pay_month1(tmp_path)
    sheet = write_sheet(tmp_path / "december.xlsx", planted(first), PAYEE_HEADERS)
    assert batchpay("run", str(sheet), "--wait", "2",
                    "--out", str(tmp_path / "dec.xlsx")).exit_code == 1
    assert batchpay("payees", "confirm", "SUP-001", "--account-last4", "9876").exit_code == 0
    assert batchpay("verify").exit_code == 0
    with sqlite3.connect(journal_path(tmp_path)) as db:
        data = json.loads(db.execute(
            "SELECT data FROM events WHERE kind = 'payee.confirmed'").fetchone()[0])
        data["details"]["account_number"] = "6217000000000005555"
        db.execute("UPDATE events SET data = ? WHERE kind = 'payee.confirmed'",
                   (json.dumps(data),))
    checked = batchpay("verify")
    assert checked.exit_code == 1, checked
    assert "chain is broken" in checked.stderr


def test_a_sheet_that_starts_carrying_payee_id_finds_its_payees_by_natural_key(
        service: Any, tmp_path: Path) -> None:
    first = rows(4)  # no payee_id column
    sheet = write_sheet(tmp_path / "november.xlsx", first)
    assert batchpay("run", str(sheet), "--wait", "5",
                    "--out", str(tmp_path / "nov.xlsx")).exit_code == 0
    second = next_month(first)
    for n, values in enumerate(second, start=1):
        values["payee_id"] = f"SUP-{n:03d}"
    second[1]["account_number"] = "6217000000000002222"  # a BUSINESS, found by company_id
    second[2]["account_number"] = "6217000000000003333"  # an INDIVIDUAL, found by ic_number
    sheet = write_sheet(tmp_path / "december.xlsx", second, PAYEE_HEADERS)
    outcome = batchpay("run", str(sheet), "--wait", "5", "--out", str(tmp_path / "dec.xlsx"))
    assert outcome.exit_code == 1, outcome
    statuses = {ref: r["status"] for ref, r in by_ref(tmp_path / "dec.xlsx").items()}
    assert statuses == {"DEC-001": "COMPLETED", "DEC-002": "HELD", "DEC-003": "HELD",
                        "DEC-004": "COMPLETED"}
    # confirmed by its payee_id, the row is paid; the register now knows the payee by both
    assert batchpay("payees", "confirm", "SUP-002", "--account-last4", "2222").exit_code == 0
    again = batchpay("rerun", str(tmp_path / "dec.xlsx"), "--wait", "5",
                     "--out", str(tmp_path / "dec-2.xlsx"))
    statuses = {ref: r["status"] for ref, r in by_ref(tmp_path / "dec-2.xlsx").items()}
    assert statuses["DEC-002"] == "COMPLETED" and statuses["DEC-003"] == "HELD", again
    listed = json.loads(batchpay("payees", "--json").stdout)
    # paid with a payee_id, a payee is listed by it; SUP-003 (held) still by its ic_number
    assert {line["payee"] for line in listed} == {"SUP-001", "SUP-002", "SUP-004",
                                                   first[2]["ic_number"]}


def test_a_known_payee_id_with_another_company_is_invalid(service: Any, tmp_path: Path) -> None:
    first = pay_month1(tmp_path)
    second = next_month(first)
    second[1]["company_id"] = first[3]["company_id"]  # SUP-002 given SUP-004's company
    del second[3]
    sheet = write_sheet(tmp_path / "december.xlsx", second, PAYEE_HEADERS)
    paid_before = len(sandbox_payouts(service.url))
    outcome = batchpay("run", str(sheet), "--wait", "2", "--out", str(tmp_path / "dec.xlsx"))
    assert outcome.exit_code == 1, outcome
    cells = by_ref(tmp_path / "dec.xlsx")
    assert cells["DEC-002"]["status"] == "INVALID"
    assert "payee_id SUP-002 was paid as company" in cells["DEC-002"]["error"]
    assert len(sandbox_payouts(service.url)) == paid_before  # an invalid row blocks the sheet


def test_hold_new_payees_and_the_cooling_off_period(service: Any, tmp_path: Path) -> None:
    own_settings("hold_new_payees = true\n"
                                            "payee_change_hold_hours = 24\n")
    sheet = write_sheet(tmp_path / "november.xlsx", rows(1))
    out = tmp_path / "nov.xlsx"
    assert batchpay("run", str(sheet), "--wait", "2", "--out", str(out)).exit_code == 1
    assert by_ref(out)["T-00001"]["status"] == "HELD"
    assert "hold_new_payees" in by_ref(out)["T-00001"]["error"]
    # a payee without payee_id is named by its natural key: here its ic_number
    assert f"payees confirm {resident_id(1)} --account-last4 0001" in by_ref(out)["T-00001"]["error"]
    confirmed = batchpay("payees", "confirm", resident_id(1), "--account-last4", "0001")
    assert confirmed.exit_code == 0, confirmed
    again = batchpay("rerun", str(out), "--wait", "2", "--out", str(tmp_path / "nov-2.xlsx"))
    assert again.exit_code == 1, again
    error = by_ref(tmp_path / "nov-2.xlsx")["T-00001"]["error"]
    assert "held until" in error and "payee_change_hold_hours" in error
    assert sandbox_payouts(service.url) == []


def _events(tmp_path: Path, kind: str) -> list[dict[str, Any]]:
    with sqlite3.connect(journal_path(tmp_path)) as db:
        return [json.loads(data) for (data,) in db.execute(
            "SELECT data FROM events WHERE kind = ? ORDER BY seq", (kind,))]


# --------------------------------------------------------------------------- no service


class _Ledger:
    """A journal's ledger as Register.load reads it, without a journal."""

    def __init__(self, paid: list[tuple[dict[str, Any], str]]) -> None:
        self.paid = paid

    def sent_since(self, since: str, states: Any) -> list[tuple[str, str, str, str, str]]:
        return [(f"R-{n}", json.dumps(values), status, "run-1", f"2026-10-{n + 1:02d}T00:00:00Z")
                for n, (values, status) in enumerate(self.paid)]

    def events_of(self, kind: str) -> list[dict[str, Any]]:
        return []

    def entries(self) -> dict[str, Any]:
        return {}


def _values(**overrides: Any) -> dict[str, Any]:
    values = {"recipient_type": "INDIVIDUAL", "recipient_name": "Li Wei", "ic_number": "",
              "company_id": "", "account_number": "6222000011112222", "bank_name": "中国银行",
              "bank_city": "深圳", "sort_code": "", "amount": "100", "source_currency": "NGN"}
    return values | overrides


def _reasons(paid: list[tuple[dict[str, Any], str]], sheet: list[dict[str, Any]]) -> list[str]:
    register = Register.load(_Ledger(paid))  # type: ignore[arg-type]
    return [f.reason for f in classify(register, ((n, n + 2, f"X-{n}", v)
                                                  for n, v in enumerate(sheet)), HoldRules())]


def test_spreadsheet_noise_is_never_a_change() -> None:
    paid = [(_values(), "COMPLETED")]
    noisy = _values(account_number="6222-0000 1111-2222", recipient_name="  li  WEI ",
                    bank_name=" 中国银行 ")
    assert _reasons(paid, [noisy]) == [KNOWN]


def test_each_reason_from_the_ledger() -> None:
    paid = [(_values(), "COMPLETED"),
            (_values(recipient_name="Wang Fang", account_number="6222000033334444"), "FAILED")]
    assert _reasons(paid, [
        _values(account_number="6222000055556666"),  # Li Wei's account changed
        _values(recipient_name="Wang Fang", account_number="6222000033334444"),
        _values(recipient_name="Zhao Lei", account_number="6222000011112222"),
        _values(recipient_name="Chen Jing", account_number="6222000077778888"),
    ]) == [CHANGED, FAILED_BEFORE, SHARED, NEW]


def test_a_run_killed_mid_way_and_run_again_still_pays_no_held_row(
        cli_sandbox: Any, tmp_path: Path) -> None:
    from tests.support.processes import kill_when, runner_env, start_runner

    service = cli_sandbox(settle_seconds=0.05, latency_ms=40)
    first = pay_month1(tmp_path)
    paid_before = len(sandbox_payouts(service.url))
    sheet = write_sheet(tmp_path / "december.xlsx", planted(first), PAYEE_HEADERS)
    journal = journal_path(tmp_path)
    runner = start_runner("run", str(sheet), "--wait", "0", "--quiet", "--out",
                          str(tmp_path / "killed.xlsx"),
                          env=runner_env(service.url, journal, key=service.api_key),
                          cwd=tmp_path)
    killed = kill_when(runner, journal, intents=paid_before + 1, extra=0.0)
    again = batchpay("run", str(sheet), "--wait", "5", "--out", str(tmp_path / "dec.xlsx"))
    assert again.exit_code == 1, (killed, again)
    cells = by_ref(tmp_path / "dec.xlsx")
    assert {ref for ref, r in cells.items() if r["status"] == "HELD"} == {
        "DEC-001", "DEC-002", "DEC-003", "DEC-004", "DEC-007", "DEC-007B"}
    new = [p["accountNumber"] for p in sandbox_payouts(service.url)[paid_before:]]
    assert len(new) == 4 and len(set(new)) == 4, new  # the four unheld rows, once each


def test_ids_and_names_fold_case_width_and_what_shows_nothing() -> None:
    from batchpay.controls.payee_keys import fold, skeleton

    for typed in ("sup-001", "ＳＵＰ－００１", "SUP\u3164-001", "SUP-00\u00ad1", " SUP-001\u200b ",
                  "SUP\u202e-001", "SUP\uffa0-001"):
        assert fold(typed) == fold("SUP-001"), typed
    assert fold("Li \u3000 Wei") == "li wei" and fold("张\u115f3") == "张3"
    assert fold("SU\u0420-001") != fold("SUP-001")  # a Cyrillic Р is another id...
    assert skeleton("SU\u0420-001") == skeleton("SUP-001")  # ...that looks the same
    assert skeleton("Zh\u0430ng  S\u0430n") == skeleton("zhangsan") == skeleton("Zhang-San")
    assert skeleton("李四") != skeleton("李三")


def test_a_known_company_or_ic_number_is_its_payee_whatever_payee_id_the_row_gives() -> None:
    paid = [(_values(payee_id="SUP-001"), "COMPLETED"),
            (_values(payee_id="SUP-002", recipient_type="BUSINESS", recipient_name="深圳甲公司",
                     company_id="91440300MA00000021", ic_number="",
                     account_number="6222000099990000"), "COMPLETED")]
    paid[0][0]["ic_number"] = "440305198001011234"
    register = Register.load(_Ledger(paid))  # type: ignore[arg-type]
    rows_ = [_values(payee_id="EMP-9", ic_number="440305198001011234",
                     account_number="6217000011110000"),
             _values(payee_id="sup-001", ic_number="440305198001011234",
                     account_number="6217000011110000"),
             _values(payee_id="NEW-2", recipient_type="BUSINESS", recipient_name="深圳甲公司",
                     company_id="91440300ma00000021", account_number="6217000022220000"),
             _values(payee_id="NEW-2B", recipient_type="BUSINESS", recipient_name="深圳甲公司",
                     company_id="91440300MA00000021", account_number="6222000099990000")]
    found = [f for sheet in (rows_[:3], rows_[3:]) for f in classify(
        register, ((n, n + 2, f"X-{n}", v) for n, v in enumerate(sheet)), HoldRules())]
    assert [(f.reason, f.payee, f.held) for f in found] == [
        (CHANGED, "SUP-001", True), (CHANGED, "SUP-001", True), (CHANGED, "SUP-002", True),
        (KNOWN, "SUP-002", False)]  # a new id on the account already paid: the same payee
    assert found[0].message.startswith(
        "payee_id EMP-9 is new, but ic_number 440305198001011234 was paid as payee SUP-001")


def test_a_new_payee_with_a_known_name_is_held_as_a_look_alike() -> None:
    from batchpay.controls.payees import LOOKALIKE

    paid = [(_values(ic_number="440305198001011234"), "COMPLETED")]  # Li Wei
    sheet = [_values(account_number="6217000011110000"),  # no ic: matched by name only
             _values(recipient_name="Li\u202eWei", ic_number="440305198502021234",
                     account_number="6217000011110000"),
             _values(recipient_name="Chen Jing", account_number="6217000033330000"),
             _values(recipient_name="Li  Wei", ic_number="440305198001011234")]  # the same
    register = Register.load(_Ledger(paid))  # type: ignore[arg-type]
    found = classify(register, ((n, n + 2, f"X-{n}", v) for n, v in enumerate(sheet)),
                     HoldRules())
    assert [f.reason for f in found] == [LOOKALIKE, LOOKALIKE, NEW, KNOWN]
    assert "has the same recipient name, Li Wei" in found[0].message
    assert "`batchpay payees confirm 'li wei' --account-last4 0000`" in found[0].message
    assert "Li<U+202E>Wei looks like Li Wei" in found[1].message


def test_a_new_payee_id_that_looks_like_a_known_one_is_held() -> None:
    from batchpay.controls.payees import LOOKALIKE

    paid = [(_values(payee_id="SUP-001", ic_number="440305198001011234"), "COMPLETED")]
    register = Register.load(_Ledger(paid))  # type: ignore[arg-type]
    sheet = [_values(payee_id="SU\u0420-0O1", recipient_name="Wang Fang",
                     account_number="6217000011110000"),
             _values(payee_id="SUP-002", recipient_name="Wang Fang",
                     account_number="6217000022220000")]
    found = classify(register, ((n, n + 2, f"X-{n}", v) for n, v in enumerate(sheet)),
                     HoldRules())
    assert [f.reason for f in found] == [LOOKALIKE, NEW]
    assert "payee_id SU<U+0420>-0O1 looks like SUP-001, the payee_id of payee SUP-001" in (
        found[0].message)
