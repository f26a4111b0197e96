"""`make_plan`, the library function behind `batchpay plan`: a dry run written as a plan, or
why none was; quotes and payouts counted at the sandbox."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from batchpay import sshsig
from batchpay.connect import open_service
from batchpay.controls.approval import MAKER_NAMESPACE, maker_of, read_plan
from batchpay.controls.plan_file import plan_id
from batchpay.display import RichReporter
from batchpay.engine.make_plan import PlanFiles, make_plan
from batchpay.engine.runner import RunOptions
from batchpay.settings.load import load_settings
from tests.support.e2e import sandbox_payouts, sandbox_stats, set_wallet
from tests.support.sheets import row, rows, write_sheet


@pytest.mark.parametrize("name, plan", [
    (None, "nov.plan.json"), ("dec", "dec.plan.json"), ("dec.plan", "dec.plan.json"),
    ("dec.plan.json", "dec.plan.json")])
def test_plan_files_are_named_from_out_or_the_sheet(name: str | None, plan: str) -> None:
    files = PlanFiles.named(Path("in/nov.xlsx"), Path("in", name) if name else None)
    assert files.plan == Path("in", plan)
    assert files.workbook == Path("in", plan.removesuffix(".json") + ".xlsx")


def test_a_sheet_named_like_a_plan_keeps_its_name_and_is_never_its_own_workbook() -> None:
    sheet = Path("in/nov.plan.xlsx")
    files = PlanFiles.named(sheet)
    assert files.plan == Path("in/nov.plan.plan.json")
    assert files.workbook == Path("in/nov.plan.plan.xlsx") != sheet


MAKER_KEY = Ed25519PrivateKey.generate()


def _plan(sheet: Path) -> Any:
    """make_plan, signed by a maker the approvers file lists."""
    approvers = sheet.with_name("approvers")
    approvers.write_text(f"Maya {sshsig.public_line(MAKER_KEY.public_key())}\n")
    settings = dataclasses.replace(load_settings(), approvers_file=approvers)
    files = PlanFiles.named(sheet)
    options = RunOptions(sheet=sheet, dry_run=True, out=files.workbook, wait=0)
    return make_plan(settings, options, RichReporter(quiet=True),
                     lambda: open_service(settings), files, maker=maker_of(settings, MAKER_KEY))


def test_a_plan_holds_every_row_to_send_and_its_id_is_its_bytes(
        cli_sandbox: Any, tmp_path: Path) -> None:
    service = cli_sandbox(settle_seconds=0.2)
    made = _plan(write_sheet(tmp_path / "nov.xlsx", rows(3)))
    assert made.refused == "" and made.rows == 3
    data = made.files.plan.read_bytes()
    assert made.identifier == plan_id(data)
    document = json.loads(data)
    assert [r["payout_ref"] for r in document["rows"]] == ["T-00001", "T-00002", "T-00003"]
    assert document["maker"]["key"] == sshsig.fingerprint(MAKER_KEY.public_key())
    assert document["maker"]["principals"] == ["Maya"]
    assert read_plan(made.files.plan).short == made.short_code
    signer = sshsig.verify(made.files.maker_signature.read_text(), data, MAKER_NAMESPACE)
    assert sshsig.fingerprint(signer) == document["maker"]["key"]
    assert made.files.workbook.is_file()
    assert sandbox_payouts(service.url) == []  # planned, never paid
    assert sandbox_stats(service.url)["requests"].get("POST /v1/quote 200", 0) == 3


@pytest.mark.parametrize("case, reason", [
    ("invalid", "no row would be sent."), ("short", "the wallet cannot cover it.")])
def test_no_plan_is_written_when_nothing_would_be_sent_or_the_wallet_is_short(
        cli_sandbox: Any, tmp_path: Path, case: str, reason: str) -> None:
    service = cli_sandbox(settle_seconds=0.2)
    if case == "short":
        set_wallet(service.url, "NGN", 1)
        sheet = write_sheet(tmp_path / "nov.xlsx", rows(2))
    else:
        sheet = write_sheet(tmp_path / "nov.xlsx", [row(1, amount="abc")])
    made = _plan(sheet)
    assert made.refused == reason
    assert made.document is None and not made.files.plan.exists()
    assert sandbox_payouts(service.url) == []


def test_the_engine_itself_refuses_an_unapproved_run_when_approval_is_required(
        cli_sandbox: Any, tmp_path: Path) -> None:
    """Not only the command: run_batch, called as a library, pays nothing without a plan."""
    from batchpay.controls.plan_checks import PlanRefused
    from batchpay.engine.runner import run_batch

    service = cli_sandbox(settle_seconds=0.2)
    settings = dataclasses.replace(load_settings(), require_approval=True)
    sheet = write_sheet(tmp_path / "nov.xlsx", rows(2))
    read: list[Path] = []

    def load() -> Any:
        read.append(sheet)
        raise AssertionError("the sheet is not read before the gate")

    with pytest.raises(PlanRefused, match="Approval is required"):
        run_batch(settings, RunOptions(sheet=sheet), RichReporter(quiet=True), load,
                  lambda: open_service(settings))
    assert read == [] and sandbox_payouts(service.url) == []
    assert sum(sandbox_stats(service.url)["requests"].values()) == 0


def test_a_plan_made_again_drops_the_approvals_of_the_one_it_replaces(
        cli_sandbox: Any, tmp_path: Path) -> None:
    cli_sandbox(settle_seconds=0.2)
    sheet = write_sheet(tmp_path / "nov.xlsx", rows(2))
    first = _plan(sheet)
    stale = [first.files.plan.with_name(f"nov.plan.json{n}.sig") for n in ("", ".2")]
    other = first.files.plan.with_name("nov.plan.json.kept.sig")
    for path in (*stale, other):
        path.write_text("a signature of the first plan\n")
    again = _plan(sheet)
    assert again.identifier != first.identifier  # made again: another time, another id
    assert not any(p.exists() for p in stale) and other.exists()
    assert again.files.maker_signature.is_file()
