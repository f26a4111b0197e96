"""Two-person approval: the maker plans, a second, named person signs, and `run --plan`
pays exactly the plan; every way around it is refused before a single request."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest

from batchpay import sshsig
from batchpay.controls.approval import NAMESPACE
from batchpay.controls.plan_file import canonical_bytes
from tests.support.e2e import batchpay, by_ref, own_settings, sandbox_payouts, sandbox_stats
from tests.support.sheets import HEADERS, rows, write_sheet

MAKER, CHECKER, OTHER = {"LOGNAME": "maya"}, {"LOGNAME": "li.wei"}, {"LOGNAME": "chen"}


@pytest.fixture
def service(cli_sandbox: Any) -> Any:
    return cli_sandbox(settle_seconds=0.05)


def new_key(tmp_path: Path, name: str) -> tuple[Path, str]:
    """`batchpay keys new`: the private key's path and its approvers-file line."""
    path = tmp_path / "keys" / f"{name.lower().replace(' ', '-')}_ed25519"
    made = batchpay("keys", "new", "--name", name, "--out", str(path))
    assert made.exit_code == 0, made
    assert path.stat().st_mode & 0o777 == 0o600
    return path, made.stdout.strip().splitlines()[-1]


def approvers(tmp_path: Path, *lines: str, required: int = 1, extra: str = "") -> None:
    (tmp_path / "approvers").write_text("".join(f"{line}\n" for line in lines))
    listed = tmp_path / "approvers"  # in your own settings file: only yours names them
    own_settings(f'approvers_file = "{listed}"\nrequire_approval = true\n'
                 f"approvals_required = {required}\n{extra}")


def make_plan(tmp_path: Path, sheet_rows: list[dict[str, Any]], name: str = "nov",
              headers: list[str] = HEADERS, maker_key: Path | None = None) -> tuple[Path, str]:
    """`batchpay plan` by the maker (LOGNAME maya), signed with `maker_key`, else with Maya's
    key, made and listed in the approvers file on first use."""
    sheet = write_sheet(tmp_path / f"{name}.xlsx", sheet_rows, headers)
    made = batchpay("plan", str(sheet), "--json", "--key", str(maker_key or maya(tmp_path)),
                    env=MAKER)
    assert made.exit_code == 0, made
    document = json.loads(made.stdout)
    return tmp_path / f"{name}.plan.json", document["short_code"]


def maya_line(tmp_path: Path) -> str:
    return next(line for line in (tmp_path / "approvers").read_text().splitlines()
                if line.startswith("Maya "))


def maya(tmp_path: Path) -> Path:
    """The maker's key, listed in the approvers file (a maker signs every plan)."""
    path = tmp_path / "keys" / "maya_ed25519"
    if not path.exists():
        path, line = new_key(tmp_path, "Maya")
        with (tmp_path / "approvers").open("a") as handle:
            handle.write(line + "\n")
    return path


def approve(plan: Path, code: str, key: Path, env: dict[str, str] = CHECKER) -> Any:
    return batchpay("approve", str(plan), "--key", str(key), "--short-code", code, "--yes",
                    env=env)


def requests(url: str) -> int:
    return sum(sandbox_stats(url)["requests"].values())


def approved_plan(tmp_path: Path, count: int = 3) -> tuple[Path, str, Path, Path]:
    checker_key, checker_line = new_key(tmp_path, "Li Wei")
    approvers(tmp_path, checker_line)
    maker_key = maya(tmp_path)
    plan, code = make_plan(tmp_path, rows(count), maker_key=maker_key)
    assert approve(plan, code, checker_key).exit_code == 0
    return plan, code, checker_key, maker_key


def test_maker_plans_checker_approves_run_pays_exactly_the_plan(
        service: Any, tmp_path: Path) -> None:
    plan, code, _, _ = approved_plan(tmp_path, count=4)
    document = json.loads(plan.read_text())
    assert [r["payout_ref"] for r in document["rows"]] == [f"T-{n:05d}" for n in range(1, 5)]
    assert document["currencies"]["NGN"]["NbOfTxs"] == 4
    assert Decimal(document["currencies"]["NGN"]["CtrlSum"]) == sum(
        (r["amount"] for r in rows(4)), Decimal(0))
    # the workbook for a person: the dry run's rows and a Plan sheet with what to approve
    plan_sheet = {r["field"]: r["value"] for r in _sheet(plan.with_name("nov.plan.xlsx"), "Plan")
                  if r["field"]}
    assert plan_sheet["short code"] == code
    assert plan_sheet["plan id"] == hashlib.sha256(plan.read_bytes()).hexdigest()
    lines = [r["value"] for r in _sheet(plan.with_name("nov.plan.xlsx"), "Plan")]
    assert any("largest rows" in str(v) for v in lines)
    assert any("NGN: 4 row(s)" in str(v) for v in lines)
    assert sandbox_payouts(service.url) == []  # planning pays nothing

    # the sheet changes after approval: the run pays the plan, never the sheet read again
    write_sheet(tmp_path / "nov.xlsx", rows(4, amount=Decimal("999999.00")))
    paid = batchpay("run", "--plan", str(plan), "--wait", "5", "--out", str(tmp_path / "r.xlsx"))
    assert paid.exit_code == 0, paid
    payouts = sandbox_payouts(service.url)
    assert sorted(p["accountNumber"] for p in payouts) == sorted(
        r["account_number"] for r in rows(4))
    assert sorted(Decimal(str(p["sourceAmount"])) for p in payouts) == sorted(
        r["amount"] for r in rows(4))
    run_sheet = {r["field"]: r["value"] for r in _sheet(tmp_path / "r.xlsx", "Run")}
    assert run_sheet["approved plan"] == hashlib.sha256(plan.read_bytes()).hexdigest()
    assert "Li Wei" in run_sheet["plan approved by"] and "maya" in run_sheet["plan made by"]
    # a second run of the same plan sends nothing more
    again = batchpay("run", "--plan", str(plan), "--wait", "1", "--out", str(tmp_path / "r2.xlsx"))
    assert again.exit_code == 0, again
    assert len(sandbox_payouts(service.url)) == 4
    assert batchpay("verify").exit_code == 0


def _sheet(path: Path, name: str) -> list[dict[str, Any]]:
    from tests.support.e2e import results

    return results(path, name)


def test_without_a_plan_nothing_runs_when_approval_is_required(
        service: Any, tmp_path: Path) -> None:
    approvers(tmp_path)
    sheet = write_sheet(tmp_path / "nov.xlsx", rows(2))
    refused = batchpay("run", str(sheet))
    assert refused.exit_code == 2 and "Approval is required" in refused.stderr
    assert requests(service.url) == 0
    dry = batchpay("run", str(sheet), "--dry-run", "--out", str(tmp_path / "dry.xlsx"))
    assert dry.exit_code == 0, dry  # a dry run pays nothing: allowed
    assert sandbox_payouts(service.url) == []


def _tampered(tmp_path: Path, plan: Path, name: str, edit: Any = None,
              keep_signature: bool = True) -> Path:
    """A copy of the plan (and its signature) in a folder of its own, `edit`ed."""
    folder = tmp_path / name
    folder.mkdir()
    copy = folder / plan.name
    document = json.loads(plan.read_bytes())
    if edit is None:
        copy.write_bytes(plan.read_bytes())
    else:
        edit(document)
        copy.write_bytes(canonical_bytes(document))
    shutil.copy(plan.with_name(plan.name + ".maker.sig"), copy.with_name(copy.name + ".maker.sig"))
    if keep_signature:
        shutil.copy(plan.with_name(plan.name + ".sig"), copy.with_name(copy.name + ".sig"))
    return copy


def test_every_tampered_or_unapproved_plan_is_refused_before_any_request(
        service: Any, tmp_path: Path) -> None:
    plan, _, checker_key, maker_key = approved_plan(tmp_path)
    other_plan, other_code = make_plan(tmp_path, rows(2, start=7), name="other")
    assert approve(other_plan, other_code, checker_key).exit_code == 0

    def cell(document: dict[str, Any]) -> None:
        document["rows"][0]["values"]["account_number"] = "6217000000000099999"

    def added(document: dict[str, Any]) -> None:
        first = document["rows"][0]
        document["rows"].append(dict(first, payout_ref="T-99999", row=99, values=dict(
            first["values"], payout_ref="T-99999")))

    def removed(document: dict[str, Any]) -> None:
        document["rows"].pop()

    def reordered(document: dict[str, Any]) -> None:
        document["rows"].reverse()

    cases: dict[str, tuple[Path, str]] = {
        "no signature": (_tampered(tmp_path, plan, "none", keep_signature=False),
                         "0 approval(s)"),
        "cell edited": (_tampered(tmp_path, plan, "cell", cell), "does not match"),
        "row added": (_tampered(tmp_path, plan, "added", added), "stated totals"),
        "row removed": (_tampered(tmp_path, plan, "removed", removed), "stated totals"),
        "rows reordered": (_tampered(tmp_path, plan, "reordered", reordered), "does not match"),
    }
    hand = _tampered(tmp_path, plan, "hand")
    hand.write_text(hand.read_text().replace('"T-00001"', '"T-00001" '))
    cases["edited by hand"] = (hand, "changed after it was made")
    foreign = _tampered(tmp_path, plan, "foreign", keep_signature=False)
    shutil.copy(other_plan.with_name(other_plan.name + ".sig"),
                foreign.with_name(foreign.name + ".sig"))
    cases["another plan's signature"] = (foreign, "does not match")
    stranger_key, _ = new_key(tmp_path, "Chen")
    stranger = _tampered(tmp_path, plan, "stranger", keep_signature=False)
    _sign(stranger, stranger_key)
    cases["a key not in the approvers file"] = (stranger, "does not list")
    own = _tampered(tmp_path, plan, "own", keep_signature=False)
    _sign(own, maker_key)
    cases["the maker's own signature"] = (own, "maker's own signature")
    namespace = _tampered(tmp_path, plan, "namespace", keep_signature=False)
    _sign(namespace, checker_key, namespace="file")
    cases["the wrong namespace"] = (namespace, "namespace")

    before = requests(service.url)
    for what, (path, message) in cases.items():
        refused = batchpay("run", "--plan", str(path), "--out", str(path.with_suffix(".xlsx")))
        assert refused.exit_code == 2, (what, refused)
        assert message in refused.stderr, (what, refused.stderr)
    assert requests(service.url) == before  # not one request for any of them
    assert sandbox_payouts(service.url) == []


def test_the_makers_key_listed_as_approver_still_cannot_approve(
        service: Any, tmp_path: Path) -> None:
    maker_key, maker_line = new_key(tmp_path, "Maya")
    approvers(tmp_path, maker_line)
    plan, code = make_plan(tmp_path, rows(1), maker_key=maker_key)
    refused = approve(plan, code, maker_key, env=OTHER)
    assert refused.exit_code == 2 and "cannot approve" in refused.stderr
    same_user = approve(plan, code, maker_key, env=MAKER)
    assert same_user.exit_code == 2
    _sign(plan, maker_key)  # signed outside batchpay
    run = batchpay("run", "--plan", str(plan))
    assert run.exit_code == 2 and "maker's own signature" in run.stderr
    assert sandbox_payouts(service.url) == []


def test_wrong_short_code_signs_nothing(service: Any, tmp_path: Path) -> None:
    checker_key, line = new_key(tmp_path, "Li Wei")
    approvers(tmp_path, line)
    plan, _ = make_plan(tmp_path, rows(1))
    wrong = approve(plan, "AAAA-AAAA", checker_key)
    assert wrong.exit_code == 2 and "not this plan's" in wrong.stderr
    assert not plan.with_name(plan.name + ".sig").exists()


def test_two_approvals_required_and_an_expired_plan(service: Any, tmp_path: Path) -> None:
    first_key, first = new_key(tmp_path, "Li Wei")
    second_key, second = new_key(tmp_path, "Chen Jing")
    approvers(tmp_path, first, second, required=2)
    plan, code = make_plan(tmp_path, rows(2))
    assert approve(plan, code, first_key).exit_code == 0
    one = batchpay("run", "--plan", str(plan))
    assert one.exit_code == 2 and "2 are required" in one.stderr
    same_again = approve(plan, code, first_key)  # one approver twice is still one approval
    assert same_again.exit_code == 0
    assert batchpay("run", "--plan", str(plan)).exit_code == 2
    assert approve(plan, code, second_key, env=OTHER).exit_code == 0
    assert sandbox_payouts(service.url) == []
    paid = batchpay("run", "--plan", str(plan), "--wait", "5", "--out", str(tmp_path / "r.xlsx"))
    assert paid.exit_code == 0, paid
    assert len(sandbox_payouts(service.url)) == 2

    approvers(tmp_path, first, maya_line(tmp_path),
              extra="plan_hours = 0.001\n")  # expires in 4 s
    late, late_code = make_plan(tmp_path, rows(1, start=5), name="late")
    assert approve(late, late_code, first_key).exit_code == 0
    import time

    time.sleep(4.1)
    expired = batchpay("run", "--plan", str(late))
    assert expired.exit_code == 2 and "expired" in expired.stderr
    assert len(sandbox_payouts(service.url)) == 2


def test_a_plan_runs_only_against_its_journal(service: Any, tmp_path: Path) -> None:
    plan, _, _, _ = approved_plan(tmp_path, count=1)
    before = requests(service.url)
    other = batchpay("run", "--plan", str(plan), "--journal", str(tmp_path / "other.sqlite3"))
    assert other.exit_code == 2 and "journal" in other.stderr
    key = batchpay("run", "--plan", str(plan), env={"BATCHPAY_API_KEY": "another-key-0001"})
    assert key.exit_code == 2 and "made for the service" in key.stderr
    assert requests(service.url) == before
    assert sandbox_payouts(service.url) == []


def test_the_ceiling_stops_a_currency_when_rates_move_after_approval(
        service: Any, tmp_path: Path) -> None:
    checker_key, line = new_key(tmp_path, "Li Wei")
    approvers(tmp_path, line)
    invoices = rows(4, amount=None, target_amount=Decimal("2000.00"), currency="CNY")
    headers = [*HEADERS, "target_amount", "currency"]
    plan, code = make_plan(tmp_path, invoices, headers=headers)
    assert approve(plan, code, checker_key).exit_code == 0
    ceiling = Decimal(json.loads(plan.read_text())["currencies"]["NGN"]["ceiling"])
    httpx.put(f"{service.url}/_sandbox/rate",
              json={"source": "NGN", "target": "CNY", "moved": 0.05}).raise_for_status()
    run = batchpay("run", "--plan", str(plan), "--concurrency", "1", "--wait", "5",
                   "--out", str(tmp_path / "r.xlsx"))
    assert run.exit_code == 1, run
    cells = by_ref(tmp_path / "r.xlsx")
    stopped = [r for r in cells.values() if r["status"] == "NOT_SENT"]
    assert stopped and all("ceiling" in r["error"] for r in stopped)
    paid = sandbox_payouts(service.url)
    assert len(paid) == 4 - len(stopped) >= 1
    debit = sum((Decimal(str(r["total_debit"])) for r in cells.values()
                 if r["status"] != "NOT_SENT"), Decimal(0))
    assert debit <= ceiling


def test_a_killed_run_of_a_plan_and_its_second_run_pay_each_row_once(
        cli_sandbox: Any, tmp_path: Path) -> None:
    from tests.support.processes import kill_when, runner_env, start_runner

    service = cli_sandbox(settle_seconds=0.05, latency_ms=30)
    plan, _, _, _ = approved_plan(tmp_path, count=8)
    journal = tmp_path / "journal" / "journal.sqlite3"
    env = runner_env(service.url, journal, key=service.api_key) | {"LOGNAME": "runner"}
    runner = start_runner("run", "--plan", str(plan), "--wait", "0", "--quiet", "--out",
                          str(tmp_path / "killed.xlsx"), env=env, cwd=tmp_path)
    kill_when(runner, journal, intents=3, extra=0.0)
    again = batchpay("run", "--plan", str(plan), "--wait", "5", "--out", str(tmp_path / "r.xlsx"))
    assert again.exit_code in (0, 1), again
    accounts = [p["accountNumber"] for p in sandbox_payouts(service.url)]
    assert sorted(accounts) == sorted(r["account_number"] for r in rows(8))


def _sign(plan: Path, key: Path, namespace: str = NAMESPACE) -> None:
    signature = sshsig.sign(sshsig.load_private(key), plan.read_bytes(), namespace)
    plan.with_name(plan.name + ".sig").write_text(signature)


# --------------------------------------------------------------------------- ssh-keygen

needs_ssh_keygen = pytest.mark.skipif(shutil.which("ssh-keygen") is None,
                                      reason="ssh-keygen is not installed")


@needs_ssh_keygen
def test_ssh_keygen_verifies_batchpays_signature_and_batchpay_verifies_its(
        tmp_path: Path) -> None:
    message = tmp_path / "plan.json"
    message.write_bytes(b'{"rows":[]}\n')
    key = tmp_path / "id_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "li", "-f", str(key)],
                   check=True)
    ours = tmp_path / "ours.sig"
    ours.write_text(sshsig.sign(sshsig.load_private(key), message.read_bytes(), NAMESPACE))
    allowed = tmp_path / "allowed"
    allowed.write_text(f'"Li Wei" {(tmp_path / "id_ed25519.pub").read_text().strip()}\n')
    checked = subprocess.run(["ssh-keygen", "-Y", "verify", "-f", str(allowed), "-I", "Li Wei",
                              "-n", NAMESPACE, "-s", str(ours)], stdin=message.open("rb"),
                             capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr
    subprocess.run(["ssh-keygen", "-Y", "sign", "-n", NAMESPACE, "-f", str(key), str(message)],
                   check=True, capture_output=True)
    theirs = message.with_name("plan.json.sig").read_text()
    signer = sshsig.verify(theirs, message.read_bytes(), NAMESPACE)
    [listed] = sshsig.allowed_signers(allowed)
    assert listed.principals == ("Li Wei",) and listed.fingerprint == sshsig.fingerprint(signer)
    with pytest.raises(sshsig.SignatureError, match="does not match"):
        sshsig.verify(theirs, message.read_bytes() + b" ", NAMESPACE)
    with pytest.raises(sshsig.SignatureError, match="namespace"):
        sshsig.verify(theirs, message.read_bytes(), "file")
