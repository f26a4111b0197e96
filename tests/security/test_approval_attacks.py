"""Two-person approval tried as one person who wants to pay alone would try it, each attack
run at the sandbox over real HTTP and judged by the payouts the sandbox holds: none extra.

The attacker knows the file formats and holds their own keys; they do not hold anyone
else's private key. Only the CLI and the plan file are used, as an attacker would.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest

from batchpay import sshsig
from batchpay.controls.approval import NAMESPACE
from batchpay.controls.plan_file import canonical_bytes, plan_id, short_code
from tests.support.e2e import batchpay, by_ref, own_settings, sandbox_payouts
from tests.support.sheets import HEADERS, rows, write_sheet

MAKER_NAMESPACE = "batchpay-plan-maker-v1"
MAYA, LI_WEI = {"LOGNAME": "maya"}, {"LOGNAME": "li.wei"}

needs_ssh_keygen = pytest.mark.skipif(shutil.which("ssh-keygen") is None,
                                      reason="ssh-keygen is not installed")


@pytest.fixture
def service(cli_sandbox: Any) -> Any:
    return cli_sandbox(settle_seconds=0.05)


def key(tmp_path: Path, name: str, *, default: bool = False) -> tuple[Path, str]:
    """`batchpay keys new`: the private key and its approvers-file line. `default`: in the
    user's keys folder, where `plan` and `approve` find it without --key."""
    folder = tmp_path / "keys"
    taken = len(list(folder.iterdir())) if folder.exists() else 0
    out = [] if default else ["--out", str(folder / f"{taken}_ed25519")]
    made = batchpay("keys", "new", "--name", name, *out)
    assert made.exit_code == 0, made
    path = Path(made.stdout.split("Private key: ")[1].split(" (mode")[0])
    return path, made.stdout.strip().splitlines()[-1]


def settings(tmp_path: Path, *lines: str, required: int = 1) -> None:
    (tmp_path / "approvers").write_text("".join(f"{line}\n" for line in lines))
    listed = tmp_path / "approvers"  # in your own settings file: only yours names them
    own_settings(f'approvers_file = "{listed}"\nrequire_approval = true\n'
                 f"approvals_required = {required}\n")


def maker_and_approver(tmp_path: Path) -> tuple[Path, Path]:
    """Maya makes plans, Li Wei approves them: their keys, both listed."""
    maya_key, maya_line = key(tmp_path, "Maya")
    li_key, li_line = key(tmp_path, "Li Wei")
    settings(tmp_path, maya_line, li_line)
    return maya_key, li_key


def plan(tmp_path: Path, sheet_rows: list[dict[str, Any]], *, env: dict[str, str],
         maker_key: Path | None = None, name: str = "nov",
         headers: list[str] = HEADERS) -> Path:
    sheet = write_sheet(tmp_path / f"{name}.xlsx", sheet_rows, headers)
    made = batchpay("plan", str(sheet), *(["--key", str(maker_key)] if maker_key else []),
                    env=env)
    assert made.exit_code == 0, made
    return sheet.with_name(f"{name}.plan.json")


def code_of(path: Path) -> str:
    return short_code(plan_id(path.read_bytes()))


def approve(path: Path, signing_key: Path | None, env: dict[str, str],
            code: str | None = None) -> Any:
    return batchpay("approve", str(path), *(["--key", str(signing_key)] if signing_key else []),
                    "--short-code", code or code_of(path), "--yes", env=env)


def sign(path: Path, signing_key: Path, namespace: str = NAMESPACE, suffix: str = ".sig") -> None:
    """A signature made outside batchpay (as `ssh-keygen -Y sign` makes it)."""
    signature = sshsig.sign(sshsig.load_private(signing_key), path.read_bytes(), namespace)
    path.with_name(path.name + suffix).write_text(signature)


def rewrite(path: Path, edit: Any, maker_key: Path) -> None:
    """Edit the plan, write it back as canonical JSON, and sign it again as its maker would
    (with `maker_key`: the attacker's own) where the plan has a maker's signature."""
    document = json.loads(path.read_bytes())
    edit(document)
    path.write_bytes(canonical_bytes(document))
    if path.with_name(path.name + ".maker.sig").exists():
        sign(path, maker_key, MAKER_NAMESPACE, ".maker.sig")


def run(path: Path, out: str = "r.xlsx", **env: str) -> Any:
    return batchpay("run", "--plan", str(path), "--wait", "5", "--concurrency", "1",
                    "--out", str(path.with_name(out)), env=env or None)


# --------------------------------------------------------------------------- 1


@pytest.mark.parametrize("attack", ["maker renamed", "signed with ssh-keygen",
                                    "one principal, two keys"])
def test_1_one_person_cannot_make_and_approve_a_plan(service: Any, tmp_path: Path,
                                                      attack: str) -> None:
    maya_key, maya_line = key(tmp_path, "Maya")
    if attack == "one principal, two keys":
        first, first_line = key(tmp_path, "Li Wei")
        second, second_line = key(tmp_path, "Li Wei")
        settings(tmp_path, maya_line, first_line, second_line, required=2)
        path = plan(tmp_path, rows(3), env=MAYA, maker_key=maya_key)
        assert approve(path, first, LI_WEI).exit_code == 0
        again = approve(path, second, LI_WEI)  # the same person, with their second key
        sign(path, second, suffix=".2.sig")  # and outside batchpay
        refused = run(path)
        assert sandbox_payouts(service.url) == []
        assert "Already approved" in again.stdout, again
        assert refused.exit_code == 2 and "2 are required" in refused.stderr, refused
    else:
        # Li Wei, an approver, makes the plan himself (no --key: his own key is found)
        own, own_line = key(tmp_path, "Li Wei", default=True)
        settings(tmp_path, maya_line, own_line)
        path = plan(tmp_path, rows(3), env=LI_WEI)
        if attack == "maker renamed":
            maya_print = sshsig.fingerprint(sshsig.load_private(maya_key).public_key())

            def as_maya(document: dict[str, Any]) -> None:
                document["maker"]["user"] = "maya"
                if document["maker"].get("key"):
                    document["maker"]["key"] = maya_print
                if "principals" in document["maker"]:
                    document["maker"]["principals"] = ["Maya"]
                document["maker"].setdefault("key", "")
                for actor in document.get("actors", []):  # the maker's review renamed too
                    if actor["action"] == "review":
                        actor["user"] = "maya"

            rewrite(path, as_maya, own)
            approve(path, own, LI_WEI)  # refused now; whatever it says, he signs anyway:
            sign(path, own)
        else:
            subprocess.run(["ssh-keygen", "-q", "-Y", "sign", "-n", NAMESPACE, "-f", str(own),
                            str(path)], check=True, capture_output=True)
        refused = run(path)
        assert sandbox_payouts(service.url) == []
        why = "not by the maker's key" if attack == "maker renamed" else "maker's own signature"
        assert refused.exit_code == 2 and why in refused.stderr, refused


# --------------------------------------------------------------------------- 2


@pytest.mark.parametrize("attack", ["a sixth row under the stated totals",
                                    "expiry a year away", "new payees not said"])
def test_2_the_approver_sees_figures_recomputed_from_the_rows(service: Any, tmp_path: Path,
                                                               attack: str) -> None:
    maya_key, li_key = maker_and_approver(tmp_path)
    path = plan(tmp_path, rows(5), env=MAYA, maker_key=maya_key)

    def sixth_row(document: dict[str, Any]) -> None:
        last = document["rows"][-1]
        fee = Decimal(last["total_debit"]) - Decimal(last["amount"])
        document["rows"].append(dict(
            last, row=last["row"] + 1, payout_ref="T-09999", amount="5000.50",
            total_debit=format(Decimal("5000.50") + fee, "f"),
            values=dict(last["values"], payout_ref="T-09999", amount="5000.50",
                        account_number="6222000000000099999")))
        # the stated totals stay those of five rows: what the approver was shown

    def a_year(document: dict[str, Any]) -> None:
        later = datetime.now(UTC).replace(microsecond=0) + timedelta(days=365)
        document["expires_at"] = later.isoformat().replace("+00:00", "Z")

    def unsaid(document: dict[str, Any]) -> None:
        assert document["payee_changes"]  # five payees never paid before
        document["payee_changes"] = []

    edits = {"a sixth row under the stated totals": sixth_row, "expiry a year away": a_year,
             "new payees not said": unsaid}
    rewrite(path, edits[attack], maya_key)
    approved = approve(path, li_key, LI_WEI)
    sign(path, li_key)  # an approver who signs without reading: the run checks again
    refused = run(path)
    assert sandbox_payouts(service.url) == []
    why = {"a sixth row under the stated totals": "stated totals",
           "expiry a year away": "longer than plan_hours",
           "new payees not said": "does not state"}[attack]
    assert approved.exit_code == 2 and why in approved.stderr, approved
    assert "NGN: 5 row(s), amounts" not in approved.stderr  # never shown the stale totals
    assert refused.exit_code == 2 and why in refused.stderr, refused


# --------------------------------------------------------------------------- 3


def test_3_the_ceiling_holds_across_every_run_of_a_plan(service: Any, tmp_path: Path) -> None:
    maya_key, li_key = maker_and_approver(tmp_path)
    invoices = rows(6, amount=None, target_amount=Decimal("2000.00"), currency="CNY")
    path = plan(tmp_path, invoices, env=MAYA, maker_key=maya_key,
                headers=[*HEADERS, "target_amount", "currency"])
    assert approve(path, li_key, LI_WEI).exit_code == 0
    ceiling = Decimal(json.loads(path.read_text())["currencies"]["NGN"]["ceiling"])
    httpx.put(f"{service.url}/_sandbox/rate", timeout=10,
              json={"source": "NGN", "target": "CNY", "moved": 0.4}).raise_for_status()
    first = run(path, "r1.xlsx")
    assert first.exit_code == 1, first
    paid = sandbox_payouts(service.url)
    assert len(paid) == 4  # 4 x 1.4 = 5.6 of 6 x 1.02 = 6.12: the 5th and 6th stop
    stopped = [r for r in by_ref(path.with_name("r1.xlsx")).values()
               if r["status"] == "NOT_SENT"]
    assert stopped and all("ceiling" in r["error"] for r in stopped)
    second = run(path, "r2.xlsx")
    assert len(sandbox_payouts(service.url)) == len(paid)  # 0 more: the ceiling is spent
    assert second.exit_code == 1, second
    debits = [r["total_debit"] for r in by_ref(path.with_name("r2.xlsx")).values()
              if r["status"] != "NOT_SENT"]
    assert sum((Decimal(str(d)) for d in debits), Decimal(0)) <= ceiling


# --------------------------------------------------------------------------- 4


@pytest.mark.parametrize("options", ['namespaces="git"', 'valid-before="20200101Z"',
                                     'valid-after="20990101Z"', "cert-authority"])
def test_4_an_approvers_line_counts_only_as_openssh_reads_it(service: Any, tmp_path: Path,
                                                             options: str) -> None:
    maya_key, maya_line = key(tmp_path, "Maya")
    li_key, li_line = key(tmp_path, "Li Wei")
    principal, rest = li_line.split(" ssh-ed25519 ")
    settings(tmp_path, maya_line, f"{principal} {options} ssh-ed25519 {rest}")
    path = plan(tmp_path, rows(2), env=MAYA, maker_key=maya_key)
    sign(path, li_key)  # a key for git only, expired, not yet valid, or a CA key
    refused = run(path)
    assert sandbox_payouts(service.url) == []
    why = {'namespaces="git"': "only for namespaces", 'valid-before="20200101Z"': "only before",
           'valid-after="20990101Z"': "only after", "cert-authority": "cert-authority"}[options]
    assert refused.exit_code == 2 and why in refused.stderr, refused


LINES = {  # options -> whether `ssh-keygen -Y verify -n batchpay-plan-v1` accepts the key
    "": True, 'namespaces="batchpay-plan-v1"': True, 'namespaces="git,batchpay-*"': True,
    'namespaces="git"': False, 'namespaces="*,!batchpay-plan-v1"': False,
    'namespaces="batchpay-plan-v1",valid-before="20991231Z"': True,
    'valid-before="20200101Z"': False, 'valid-after="20990101"': False,
    'valid-after="20200101",valid-before="20991231235959Z"': True,
    'VALID-AFTER="202001011200Z"': True, "cert-authority": False,
    'cert-authority,namespaces="batchpay-plan-v1"': False,
    'nonsense="1"': False, 'namespaces="git",namespaces="batchpay-plan-v1"': False,
    'valid-after="2020"': False, 'valid-after="20990101Z",valid-before="20200101Z"': False,
}


@needs_ssh_keygen
@pytest.mark.parametrize("options", sorted(LINES))
def test_4_allowed_signers_read_as_ssh_keygen_verify_reads_them(tmp_path: Path,
                                                                 options: str) -> None:
    message = tmp_path / "plan.json"
    message.write_bytes(b'{"rows":[]}\n')
    private = tmp_path / "id_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(private)],
                   check=True)
    sign(message, private)
    public = (tmp_path / "id_ed25519.pub").read_text().split()[:2]
    allowed = tmp_path / "allowed"
    allowed.write_text(f'"Li Wei" {options} {" ".join(public)}\n'.replace("  ", " "))
    theirs = subprocess.run(
        ["ssh-keygen", "-Y", "verify", "-f", str(allowed), "-I", "Li Wei", "-n", NAMESPACE,
         "-s", str(tmp_path / "plan.json.sig")], stdin=message.open("rb"),
        capture_output=True).returncode == 0
    try:
        names, _ = sshsig.principals_of(sshsig.allowed_signers(allowed),
                                        sshsig.load_private(private).public_key(), NAMESPACE,
                                        datetime.now(UTC))
        ours = "Li Wei" in names
    except sshsig.SignatureError:  # a line ssh-keygen cannot read: the file is refused
        ours = False
    assert (ours, theirs) == (LINES[options], LINES[options])


# --------------------------------------------------------------------------- 5


def test_5_the_short_code_is_long_and_no_unchecked_field_varies_it(
        service: Any, tmp_path: Path) -> None:
    maya_key, li_key = maker_and_approver(tmp_path)
    path = plan(tmp_path, rows(2), env=MAYA, maker_key=maya_key)
    outcomes = []
    for field, value in (("sha256", "made on my laptop, try 1234567"), ("note", "try 1234567")):
        def nonce(document: dict[str, Any], field: str = field, value: str = value) -> None:
            (document["sheet"] if field == "sha256" else document)[field] = value

        tried = path.with_name(f"{field}.plan.json")
        shutil.copy(path, tried)
        if path.with_name(path.name + ".maker.sig").exists():
            shutil.copy(path.with_name(path.name + ".maker.sig"),
                        tried.with_name(tried.name + ".maker.sig"))
        rewrite(tried, nonce, maya_key)
        outcomes.append(approve(tried, li_key, LI_WEI).exit_code)
        sign(tried, li_key)
        outcomes.append(run(tried, f"{field}.xlsx").exit_code)
    assert sandbox_payouts(service.url) == []
    assert outcomes == [2, 2, 2, 2]  # approve and run refuse each
    code = code_of(path).replace("-", "")
    alphabet = set("0123456789ABCDEFGHJKMNPQRSTVWXYZ")
    assert set(code) <= alphabet and len(code) * 5 >= 80  # Crockford base32: 5 bits a letter


def test_5_the_code_is_typed_without_hyphens_case_or_look_alikes_and_once(
        service: Any, tmp_path: Path) -> None:
    maya_key, li_key = maker_and_approver(tmp_path)
    path = plan(tmp_path, rows(2), env=MAYA, maker_key=maya_key)
    typed = code_of(path).replace("-", "").lower().replace("0", "o").replace("1", "i")
    first = approve(path, li_key, LI_WEI, code=typed)
    assert first.exit_code == 0, first
    again = approve(path, li_key, LI_WEI, code=typed)
    assert again.exit_code == 0 and "Already approved" in again.stdout, again
    assert not path.with_name(path.name + ".2.sig").exists()
    assert run(path).exit_code == 0
    assert len(sandbox_payouts(service.url)) == 2


# --------------------------------------------------------------------------- 6


def test_6_a_plan_named_with_brackets_runs(service: Any, tmp_path: Path) -> None:
    maya_key, li_key = maker_and_approver(tmp_path)
    path = plan(tmp_path, rows(3), env=MAYA, maker_key=maya_key, name="nov [final]*")
    assert approve(path, li_key, LI_WEI).exit_code == 0
    paid = run(path)
    assert paid.exit_code == 0, paid
    again = run(path, "r2.xlsx")
    assert again.exit_code == 0, again
    assert sorted(p["accountNumber"] for p in sandbox_payouts(service.url)) == sorted(
        r["account_number"] for r in rows(3))
