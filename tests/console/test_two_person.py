"""One person cannot pass the console: each recipe of a maker, an approver or the owner
getting a batch paid alone, replayed over HTTP with real sessions against a sandbox served
for real; the payouts are counted at the sandbox.

- the owner administers (users, settings) and approves, makes and pays nothing;
- whoever changed what a batch pays (its review, a repeat released, a payee confirmation a
  row is paid on) is one of its makers: the page refuses their approval, and so do
  `batchpay approve` and `run --plan` reading the plan;
- Approve, Reject and Pay act on the plan the page showed: a batch reviewed again meanwhile
  is refused (409); Approve asks for the short code, Pay for a second yes to its totals;
- a user changed or removed loses their sessions at once;
- with an approver among the users, approval is on unless the user's own file says no."""

from __future__ import annotations

import json
import re
from decimal import Decimal
from pathlib import Path
from typing import Any

import openpyxl
import pytest
from click.testing import CliRunner

from batchpay.controls.masking import masked_id
from tests.console.conftest import PASSWORD, SAMPLES, Desk, Signed, batch_id
from tests.console.test_month import wait_final
from tests.support.e2e import sandbox_payouts

pytestmark = pytest.mark.slow

NEW_ACCOUNT = "6222020000099998888"


def paid(desk: Desk) -> int:
    return len(sandbox_payouts(desk.sandbox.url))


def november_paid(desk: Desk, maker: Signed) -> None:
    """The November sample reviewed, approved by abe and paid: 25 payouts."""
    first = batch_id(maker.upload("november-payouts.xlsx"))
    assert maker.post(f"/batches/{first}/review").status_code == 303
    assert desk.client("abe").press(first, "approve").status_code == 303
    assert maker.press(first, "pay").status_code == 303
    assert dict(wait_final(maker, first)["counts"]) == {"COMPLETED": 25}


def december(tmp_path: Path, second: str) -> tuple[Path, str]:
    """November's first row paid to a new account (DEC26-001), and its second row either
    again unchanged ("repeat": a possible duplicate, held) or for one naira more ("new").
    Returns the sheet and the first row's payee (its company_id)."""
    book = openpyxl.load_workbook(SAMPLES / "november-payouts.xlsx")
    sheet = book["Payouts"]
    header = [c.value for c in sheet[1]]
    sheet.delete_rows(4, sheet.max_row)
    column = {name: header.index(name) + 1 for name in header}
    sheet.cell(row=2, column=column["account_number"]).value = NEW_ACCOUNT
    sheet.cell(row=2, column=column["payout_ref"]).value = "DEC26-001"
    sheet.cell(row=3, column=column["payout_ref"]).value = "DEC26-002"
    if second == "new":
        amount = sheet.cell(row=3, column=column["amount"])
        amount.value = float(Decimal(str(amount.value)) + 1)
    path = tmp_path / f"december-{second}.xlsx"
    book.save(path)
    return path, str(sheet.cell(row=2, column=column["company_id"]).value)


def shown_plan(page: str) -> tuple[str, str]:
    """The plan id in the page's forms and the short code it shows."""
    plan = re.search(r'name="plan" value="([0-9a-f]{64})"', page)
    code = re.search(r"short code <strong>([0-9A-Z-]+)</strong>", page)
    assert plan and code, page[:3000]
    return plan.group(1), code.group(1)


def plan_of(desk: Desk, batch: str) -> dict[str, Any]:
    stored = desk.app.state.console.batches.get(batch)
    return dict(json.loads(stored.plan_files.plan.read_text()))


def approvals_of(desk: Desk, batch: str) -> list[Path]:
    from batchpay.controls.plan_file import signature_paths

    return signature_paths(desk.app.state.console.batches.get(batch).plan_files.plan)


# --------------------------------------------------------------------------- the owner


def test_the_owner_administers_and_makes_approves_and_pays_nothing(desk_factory: Any) -> None:
    from batchpay.console import signing
    from batchpay.controls.plan_checks import PlanRefused

    desk: Desk = desk_factory(require_approval=True)
    maker, owner = desk.client("mia"), desk.client("owner")
    batch = batch_id(maker.upload("november-payouts.xlsx"))
    assert maker.post(f"/batches/{batch}/review").status_code == 303
    page = owner.http.get(f"/batches/{batch}").text
    assert "Cost per currency" in page  # the owner reads the batch...
    assert ">Approve<" not in page and ">Pay<" not in page  # ...and is offered nothing
    assert owner.press(batch, "approve").status_code == 403
    assert owner.press(batch, "reject", reason="no").status_code == 403
    assert owner.post(f"/batches/{batch}/review").status_code == 403
    assert owner.upload("november-payouts.xlsx").status_code == 403
    assert desk.client("abe").press(batch, "approve").status_code == 303
    assert owner.press(batch, "pay").status_code == 403
    console = desk.app.state.console
    # in no approvers list, and the library refuses the owner's key for an approval
    listed = (console.accounts.folder / "approvers").read_text()
    assert "abe " in listed and "owner" not in listed
    stored = console.batches.get(batch)
    with pytest.raises(PlanRefused, match="cannot sign in batchpay-plan-v1"):
        signing.approve(stored, console.accounts, "owner", desk.settings,
                        stored.meta["review"]["plan_id"])
    assert len(approvals_of(desk, batch)) == 1 and console.batches.get(batch).stage == "approved"
    # what the owner does: the users and the settings
    users = owner.http.get("/users")
    assert users.status_code == 200
    assert re.search(r"<td>max</td><td>maker, approver</td>", users.text)
    assert re.search(r"<td>owner</td><td>owner</td>\s*<td>the one-time link only</td>",
                     users.text)
    assert "<td>require_approval</td><td>True</td>" in users.text
    assert maker.http.get("/users").status_code == 403
    assert paid(desk) == 0


def test_an_owner_made_with_every_role_is_reduced_to_administering(desk: Desk) -> None:
    """An earlier batchpay made the owner with every role: serve takes them away, and its
    sessions end with them."""
    from batchpay.console.server import ServeOptions, prepare
    from batchpay.console.signing import signer_line

    console = desk.app.state.console
    owner = desk.client("owner")
    users = json.loads(console.accounts.path.read_text())
    users["users"]["owner"]["roles"] = ["maker", "approver", "auditor"]
    console.accounts.path.write_text(json.dumps(users))
    assert signer_line(console.accounts, "owner") == ""  # even so: in no approvers list
    prepare(desk.settings, ServeOptions(user="mia"), 8765)  # whoever the link signs in
    assert console.accounts.get("owner").roles == ("owner",)
    assert owner.http.get("/", follow_redirects=False).headers["location"] == "/login"


# --------------------------------------------------------------------------- actors


def test_whoever_changed_what_a_batch_pays_cannot_approve_it(desk_factory: Any,
                                                             tmp_path: Path) -> None:
    """max (maker and approver) confirms a payee's new account, tries to review mia's batch
    again releasing a repeat, then to approve it: refused by the page, by `batchpay
    approve`'s library and by `run --plan`; nothing is paid."""
    from batchpay import sshsig
    from batchpay.console import signing
    from batchpay.controls import approval, plan_file
    from batchpay.controls.plan_checks import PlanRefused

    desk: Desk = desk_factory(require_approval=True, payee_confirmed_by_other=True)
    mia, max_ = desk.client("mia"), desk.client("max")
    november_paid(desk, mia)
    sheet, payee = december(tmp_path, "repeat")
    batch = batch_id(mia.upload(sheet))
    assert mia.post(f"/batches/{batch}/review").status_code == 303
    page = mia.http.get(f"/batches/{batch}").text
    assert "Rows held" in page and 'name="release" value="DEC26-002"' in page

    assert max_.post("/payees/confirm", payee=payee, last4="8888", method="phone",
                     note="").status_code == 200
    # another maker's Review again (with a release) is refused, and changes nothing
    refused = max_.post(f"/batches/{batch}/review", release="DEC26-002")
    assert refused.status_code == 403 and "only they review it" in refused.text
    page = max_.http.get(f"/batches/{batch}").text
    assert ">Review again<" not in page  # no button; the held row's words name the maker
    assert "maker ticks “pay anyway”" in page
    assert desk.app.state.console.batches.get(batch).meta["review"]["released"] == {}

    # mia, the maker, reviews again: the plan relies on max's confirmation and says so
    assert mia.post(f"/batches/{batch}/review", release="DEC26-002").status_code == 303
    document = plan_of(desk, batch)
    assert [r["payout_ref"] for r in document["rows"]] == ["DEC26-001", "DEC26-002"]
    assert document["actors"] == [
        {"user": "mia", "action": "review", "subject": ""},
        {"user": "mia", "action": "release", "subject": "DEC26-002"},
        {"user": "max", "action": "payee confirmation", "subject": payee}]
    page = max_.http.get(f"/batches/{batch}").text
    # in the approver's summary, the payee (its USCC) by its last four as on every page
    assert f"max confirmed payee {masked_id(payee)}" in page and payee not in page

    answer = max_.press(batch, "approve")
    assert answer.status_code == 403 and "You changed what this batch pays" in answer.text
    assert approvals_of(desk, batch) == []
    console = desk.app.state.console
    stored = console.batches.get(batch)
    plan_id = stored.meta["review"]["plan_id"]
    with pytest.raises(PlanRefused, match=f"max, who confirmed payee {payee}"):
        signing.approve(stored, console.accounts, "max", desk.settings, plan_id)
    # max's signature slipped in beside the plan: `run --plan` refuses it
    path = stored.plan_files.plan
    path.with_name(path.name + ".sig").write_text(sshsig.sign(
        console.accounts.signing_key("max"), path.read_bytes(), plan_file.NAMESPACE))
    release = signing.release_settings(desk.settings, console.accounts)
    with pytest.raises(PlanRefused, match="whoever changed what a plan pays"):
        approval.check_release(plan_file.read_plan(path), release)
    path.with_name(path.name + ".sig").unlink()
    # a plan that leaves max out of its actors is not a plan batchpay reads
    hidden = {**document, "actors": document["actors"][:2]}
    copy = tmp_path / "hidden.plan.json"
    copy.write_bytes(plan_file.canonical_bytes(hidden))
    with pytest.raises(PlanRefused, match="payee confirmations its actors made"):
        plan_file.read_plan(copy)
    assert max_.press(batch, "pay").status_code == 409  # not approved
    assert paid(desk) == 25  # November only: nothing of December

    # someone who neither made nor changed it approves it
    assert desk.client("abe").press(batch, "approve").status_code == 303


# --------------------------------------------------------------------------- the page's plan


def test_approve_reject_and_pay_act_on_the_plan_the_page_showed(desk_factory: Any,
                                                                 tmp_path: Path) -> None:
    """abe opens the batch (one row; the changed account held); mia confirms the payee and
    reviews again (two rows); abe's Approve and Reject of the page he read are refused, as
    is a wrong short code; Pay asks for the plan it showed and a second yes."""
    desk: Desk = desk_factory(require_approval=True)
    mia, abe = desk.client("mia"), desk.client("abe")
    november_paid(desk, mia)
    sheet, payee = december(tmp_path, "new")
    batch = batch_id(mia.upload(sheet))
    assert mia.post(f"/batches/{batch}/review").status_code == 303
    assert [r["payout_ref"] for r in plan_of(desk, batch)["rows"]] == ["DEC26-002"]
    old_plan, old_code = shown_plan(abe.http.get(f"/batches/{batch}").text)

    assert mia.post("/payees/confirm", payee=payee, last4="8888", method="phone",
                    note="").status_code == 200
    assert mia.post(f"/batches/{batch}/review").status_code == 303
    assert len(plan_of(desk, batch)["rows"]) == 2

    stale = abe.post(f"/batches/{batch}/approve", plan=old_plan, code=old_code)
    assert stale.status_code == 409
    assert "The batch changed since you opened it: review the new plan" in stale.text
    assert abe.post(f"/batches/{batch}/reject", plan=old_plan,
                    reason="not what I read").status_code == 409
    assert approvals_of(desk, batch) == []
    assert desk.app.state.console.batches.get(batch).meta["stage"] == "reviewed"

    plan, code = shown_plan(abe.http.get(f"/batches/{batch}").text)
    assert plan != old_plan
    wrong = abe.post(f"/batches/{batch}/approve", plan=plan, code=old_code)
    assert wrong.status_code == 409 and "The short code you typed is not this plan" in wrong.text
    assert abe.post(f"/batches/{batch}/approve", plan=plan).status_code == 409  # none typed
    assert approvals_of(desk, batch) == []
    assert mia.press(batch, "pay").status_code == 409  # not approved
    assert paid(desk) == 25

    # the code typed as read out: lower case, spaces for hyphens
    typed = code.lower().replace("-", " ")
    assert abe.post(f"/batches/{batch}/approve", plan=plan, code=typed).status_code == 303
    page = mia.http.get(f"/batches/{batch}").text
    assert 'aria-label="To pay"' in page and re.search(r"Yes, pay [\d,.]+ NGN", page)
    assert mia.post(f"/batches/{batch}/pay", plan=old_plan, confirm="yes").status_code == 409
    unconfirmed = mia.post(f"/batches/{batch}/pay", plan=plan)
    assert unconfirmed.status_code == 409 and "once more" in unconfirmed.text
    assert paid(desk) == 25 and desk.app.state.console.batches.get(batch).stage == "approved"
    assert mia.post(f"/batches/{batch}/pay", plan=plan, confirm="yes").status_code == 303
    assert dict(wait_final(mia, batch)["counts"]) == {"COMPLETED": 2}
    assert [p["accountNumber"] for p in sandbox_payouts(desk.sandbox.url)].count(
        NEW_ACCOUNT) == 1


# --------------------------------------------------------------------------- sessions


def users_cli(desk: Desk, *args: str, password: str | None = None) -> Any:
    from batchpay.cli import cli

    return CliRunner().invoke(cli, ["users", *args, "--journal", str(desk.settings.journal)],
                              input=None if password is None else password + "\n")


def test_a_changed_or_removed_user_loses_their_sessions_at_once(desk: Desk) -> None:
    abe, max_, mia = desk.client("abe"), desk.client("max"), desk.client("mia")
    ada = desk.client("ada")
    for signed in (abe, max_, mia, ada):
        assert signed.http.get("/", follow_redirects=False).status_code == 200

    # a new password (same roles): abe's session ends; the new password signs in
    new = "another long password"
    changed = users_cli(desk, "add", "abe", "--role", "approver", "--replace",
                        "--password-stdin", password=new)
    assert changed.exit_code == 0, changed.output
    assert "sessions have ended" in changed.output
    assert abe.http.get("/", follow_redirects=False).headers["location"] == "/login"
    assert abe.post("/payees/confirm", payee="x", last4="1234", method="phone",
                    note="").status_code == 403
    assert abe.http.post("/login", data={"name": "abe", "password": PASSWORD}).status_code == 401
    assert abe.http.post("/login", data={"name": "abe", "password": new},
                         follow_redirects=False).status_code == 303

    # a role taken away: max's session (maker and approver) ends
    assert users_cli(desk, "add", "max", "--role", "maker", "--replace", "--password-stdin",
                     password=PASSWORD).exit_code == 0
    refused = max_.upload("november-payouts.xlsx")
    assert refused.status_code == 403 and len(desk.app.state.console.batches.all()) == 0

    # removed: mia's session ends, her key is gone, she cannot sign in
    removed = users_cli(desk, "remove", "mia")
    assert removed.exit_code == 0 and "Removed mia" in removed.output
    assert mia.http.get("/", follow_redirects=False).headers["location"] == "/login"
    assert not desk.app.state.console.accounts.key_path("mia").exists()
    assert mia.http.post("/login", data={"name": "mia", "password": PASSWORD}).status_code == 401
    assert users_cli(desk, "remove", "mia").exit_code == 2  # no such user now

    # the others' sessions go on
    assert ada.http.get("/", follow_redirects=False).status_code == 200
    refused_owner = users_cli(desk, "add", "owner", "--role", "maker", "--password-stdin",
                              password=PASSWORD)
    assert refused_owner.exit_code == 2 and "administrator" in refused_owner.output


# --------------------------------------------------------------------------- the mode


def test_a_console_with_approvers_requires_approval_unless_the_users_own_file_says_no(
        desk_factory: Any) -> None:
    """The README's team setup, with no require_approval in any settings file: approval is
    on; every page says so; Pay of an unapproved batch is refused and nothing is paid."""
    desk: Desk = desk_factory(own_settings="")
    mia = desk.client("mia")
    for path in ("/", "/history", "/payees", "/login"):
        assert "Two-person approval on" in mia.http.get(path).text, path
    batch = batch_id(mia.upload("november-payouts.xlsx"))
    assert mia.post(f"/batches/{batch}/review").status_code == 303
    page = mia.http.get(f"/batches/{batch}").text
    assert "Two-person approval on" in page and ">Pay<" not in page
    refused = mia.press(batch, "pay", confirm="yes",
                        plan=desk.app.state.console.batches.get(batch).meta["review"][
                            "plan_id"])
    assert refused.status_code == 409 and "Approval is required" in refused.text
    assert paid(desk) == 0

    # with no approver among the users any more, approval is off (and said so)
    for name in ("abe", "max"):
        desk.app.state.console.accounts.remove(name)
    off = mia.http.get(f"/batches/{batch}").text
    assert "Two-person approval off" in off and "no console user is an approver" in off
    assert ">Pay<" in off


def test_the_users_own_file_turns_approval_off(desk: Desk) -> None:
    mia = desk.client("mia")
    page = mia.http.get("/").text
    assert "Two-person approval off" in page and "in your own settings file" in page
