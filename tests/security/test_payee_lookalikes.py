"""A look-alike payee is not paid as "new": a payee_id differing only in case, by a character
that shows as nothing or by a Cyrillic letter, or a new payee_id, all with a known company_id;
the ic_number left blank so that the row is matched by name; a BUSINESS paid as an
INDIVIDUAL under the same name; a name with an inner space, a U+202E or a U+3164. Each pays
an account never paid before, and each is HELD: counted at the sandbox over real HTTP, not
one payout more. Noise (full-width, case, a soft hyphen) on the accounts already paid still
pays, and a held look-alike is released by `payees confirm`, one payee at a time."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.e2e import batchpay, by_ref, results, sandbox_payouts
from tests.support.sheets import HEADERS, resident_id, rows, write_sheet

PAYEE_HEADERS = ["payee_id", *HEADERS]
NEW_ACCOUNT = "6217000000000009999"  # never paid to anyone


@pytest.fixture
def service(cli_sandbox: Any) -> Any:
    return cli_sandbox(settle_seconds=0.05)


def october() -> list[dict[str, Any]]:
    """SUP-001 张1 (INDIVIDUAL, ic), SUP-002 a company, SUP-003 张3, SUP-004 a company,
    SUP-005 Zhang San."""
    sheet = rows(5)
    for n, values in enumerate(sheet, start=1):
        values["payee_id"] = f"SUP-{n:03d}"
    sheet[4]["recipient_name"] = "Zhang San"
    return sheet


def pay_october(tmp_path: Path, service: Any) -> list[dict[str, Any]]:
    first = october()
    sheet = write_sheet(tmp_path / "october.xlsx", first, PAYEE_HEADERS)
    outcome = batchpay("run", str(sheet), "--wait", "5", "--out", str(tmp_path / "oct.xlsx"))
    assert outcome.exit_code == 0, outcome
    assert len(sandbox_payouts(service.url)) == 5
    return first


def _as(known: dict[str, Any], **changes: Any) -> dict[str, Any]:
    """A row for a known payee's details paying the new account, under a new payout_ref."""
    return known | {"payout_ref": "NOV-001", "account_number": NEW_ACCOUNT,
                    "amount": known["amount"] + 777} | changes


def _individual(known: dict[str, Any], name: str) -> dict[str, Any]:
    return _as(known, payee_id=None, recipient_type="INDIVIDUAL", recipient_name=name,
               company_name=None, company_id=None, ic_number=None)


# name: (which October row the attack copies, how it changes it, what the error says)
ATTACKS = {
    "payee_id in another case": (1, lambda k: _as(k, payee_id="sup-002"), "changed since"),
    "payee_id with a Hangul filler": (1, lambda k: _as(k, payee_id="SUP\u3164-002"),
                                      "changed since"),
    "payee_id with a soft hyphen": (1, lambda k: _as(k, payee_id="SUP-00\u00ad2"),
                                    "changed since"),
    "payee_id with a Cyrillic letter": (1, lambda k: _as(k, payee_id="SU\u0420-002"),
                                        "payee_id SU<U+0420>-002 is new, but company_id"),
    "a new payee_id, the same company_id": (1, lambda k: _as(k, payee_id="SUP-902"),
                                            "payee_id SUP-902 is new, but company_id"),
    "a new payee_id, the same ic_number": (0, lambda k: _as(k, payee_id="EMP-001"),
                                           "payee_id EMP-001 is new, but ic_number"),
    "ic_number left blank": (0, lambda k: _as(k, payee_id=None, ic_number=None),
                             "look-alike: payee SUP-001 (paid to 6222…0001) has the same recipient name, 张1,"),
    "a new payee_id, no ic_number, the same name": (
        0, lambda k: _as(k, payee_id="EMP-777", ic_number=None),
        "look-alike: payee SUP-001 (paid to 6222…0001) has the same recipient name, 张1,"),
    "BUSINESS paid as INDIVIDUAL under the same name": (
        1, lambda k: _individual(k, k["recipient_name"]) | {"ic_number": resident_id(50)},
        "look-alike: payee SUP-002 (paid to 6222…0002) has the same recipient name"),
    "a name with an inner space": (2, lambda k: _individual(k, "张 3"),
                                   "recipient name 张 3 looks like 张3, the recipient name of payee SUP-003"),
    "a Cyrillic letter in a Latin name": (4, lambda k: _individual(k, "Zh\u0430ng San"),
                                          "Zh<U+0430>ng San looks like Zhang San, the recipient name of payee SUP-005"),
    "a name with U+202E": (2, lambda k: _individual(k, "张\u202e3"),
                           "recipient name 张<U+202E>3 looks like 张3, the recipient name of payee SUP-003"),
    "a name with U+3164": (2, lambda k: _individual(k, "张\u31643"),
                           "recipient name 张<U+3164>3 looks like 张3, the recipient name of payee SUP-003"),
}


@pytest.mark.parametrize("attack", list(ATTACKS))
def test_a_look_alike_payee_is_held_and_nothing_is_paid(
        service: Any, tmp_path: Path, attack: str) -> None:
    known, make, says = ATTACKS[attack]
    first = pay_october(tmp_path, service)
    sheet = write_sheet(tmp_path / "november.xlsx", [make(first[known])], PAYEE_HEADERS)
    out = tmp_path / "nov.xlsx"
    outcome = batchpay("run", str(sheet), "--wait", "2", "--out", str(out))
    assert outcome.exit_code == 1, outcome
    row = by_ref(out)["NOV-001"]
    assert row["status"] == "HELD", (row, outcome)
    assert says in row["error"] and "batchpay payees confirm" in row["error"], row["error"]
    assert len(sandbox_payouts(service.url)) == 5  # not one payout more
    assert NEW_ACCOUNT not in {p["accountNumber"] for p in sandbox_payouts(service.url)}


def test_noise_on_known_accounts_still_pays_and_a_stranger_is_new(
        service: Any, tmp_path: Path) -> None:
    first = pay_october(tmp_path, service)
    noisy = [dict(values, payout_ref=f"NOV-{n:03d}", amount=values["amount"] + 1000)
             for n, values in enumerate(first, start=1)]
    noisy[0]["payee_id"] = "ＳＵＰ－００１"  # full width
    noisy[1]["payee_id"] = "sup-002"
    noisy[2]["recipient_name"] = "张\u00ad3"  # a soft hyphen: shows as nothing
    noisy[3]["company_id"] = noisy[3]["company_id"].lower()
    stranger = rows(1, start=61)[0] | {"payee_id": "SUP-061", "payout_ref": "NOV-061"}
    sheet = write_sheet(tmp_path / "november.xlsx", [*noisy, stranger], PAYEE_HEADERS)
    out = tmp_path / "nov.xlsx"
    outcome = batchpay("run", str(sheet), "--wait", "5", "--out", str(out))
    assert outcome.exit_code == 0, outcome
    assert {r["status"] for r in by_ref(out).values()} == {"COMPLETED"}
    changes = {r["payout_ref"]: r["reason"] for r in results(out, "Payee changes")}
    assert changes == {"NOV-061": "new"}
    assert len(sandbox_payouts(service.url)) == 11


def test_confirming_a_look_alike_pays_it_once(service: Any, tmp_path: Path) -> None:
    first = pay_october(tmp_path, service)
    row = _as(first[0], payee_id=None, ic_number=None)  # 张1, matched by name only
    sheet = write_sheet(tmp_path / "november.xlsx", [row], PAYEE_HEADERS)
    out = tmp_path / "nov.xlsx"
    assert batchpay("run", str(sheet), "--wait", "2", "--out", str(out)).exit_code == 1
    assert by_ref(out)["NOV-001"]["status"] == "HELD"
    assert [r["reason"] for r in results(out, "Payee changes")] == ["look-alike"]
    wrong = batchpay("payees", "confirm", "张1", "--account-last4", "0001")
    assert wrong.exit_code == 2, wrong
    confirmed = batchpay("payees", "confirm", "张1", "--account-last4", "9999")
    assert confirmed.exit_code == 0, confirmed
    again = batchpay("rerun", str(out), "--wait", "5", "--out", str(tmp_path / "nov-2.xlsx"))
    assert by_ref(tmp_path / "nov-2.xlsx")["NOV-001"]["status"] == "COMPLETED", again
    paid = [p["accountNumber"] for p in sandbox_payouts(service.url)]
    assert len(paid) == 6 and paid.count(NEW_ACCOUNT) == 1
