"""Remittance advices end to end: a real run on the sandbox, a real SMTP server (aiosmtpd)
on a free port, the PDF read back with pdftotext, the outbox read from the journal."""

from __future__ import annotations

import email
import json
import shutil
import socket
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from email.message import EmailMessage
from email.policy import default
from pathlib import Path
from typing import Any

import pytest
from aiosmtpd.controller import Controller

from batchpay.journal.store import Journal
from tests.support.e2e import batchpay, by_ref, sandbox_payouts
from tests.support.sheets import HEADERS, row, write_sheet

pytestmark = pytest.mark.skipif(shutil.which("pdftotext") is None, reason="needs pdftotext")

NAME_A = "深圳市华强𠀾电子有限公司"  # a character outside the BMP too: kept exactly


class Inbox:
    """What the SMTP server received: one parsed message per DATA."""

    def __init__(self) -> None:
        self.messages: list[EmailMessage] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:  # noqa: N802
        self.messages.append(email.message_from_bytes(envelope.content, policy=default))
        return "250 OK"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def smtp_port() -> int:
    return free_port()


@pytest.fixture
def inbox() -> Inbox:
    return Inbox()


def start_smtp(inbox: Inbox, port: int) -> Controller:
    controller = Controller(inbox, hostname="127.0.0.1", port=port)
    controller.start()
    return controller


@pytest.fixture
def smtp(inbox: Inbox, smtp_port: int) -> Iterator[Inbox]:
    controller = start_smtp(inbox, smtp_port)
    yield inbox
    controller.stop()


@pytest.fixture
def service(cli_sandbox: Any, tmp_path: Path, smtp_port: int) -> Any:
    running = cli_sandbox(settle_seconds=0.05)
    user = tmp_path / "config" / "batchpay"
    user.mkdir(parents=True)
    (user / "batchpay.toml").write_text(
        f'[mail]\nhost = "127.0.0.1"\nport = {smtp_port}\nsecurity = "none"\n'
        'from = "payments@acme.example"\npayer = "Acme Trading Ltd 艾克美贸易"\n'
        "attempts = 2\nretry_seconds = 5\ntimeout = 5\n", encoding="utf-8")
    return running


HEADERS_MAIL = [*HEADERS, "payee_email"]


def sheet_rows() -> list[dict[str, Any]]:
    """Payee A: two rows (one company); payee B: one row that ends FAILED; payee C: paid,
    no e-mail; payee D: one row."""
    a = {"recipient_name": NAME_A, "company_name": NAME_A, "payee_email": "ap@huaqiang.example.cn"}
    return [
        row(2, remark="Invoice 7", **a),
        row(4, remark="Invoice 8", **a, company_id=row(2)["company_id"],
            account_number=row(2)["account_number"], bank_name=row(2)["bank_name"]),
        row(5, remark="fail", payee_email="b@example.cn"),
        row(7),
        row(9, remark="Salary 11", payee_email="d@example.cn"),
    ]


def pay(tmp_path: Path) -> tuple[Any, str]:
    sheet = write_sheet(tmp_path / "nov.xlsx", sheet_rows(), headers=HEADERS_MAIL)
    result = batchpay("run", str(sheet), "--out", str(tmp_path / "out.xlsx"), "--wait", "10",
                      "--json")
    assert result.stdout, result
    return result, json.loads(result.stdout)["run_id"]


def pdf_text(message: EmailMessage, tmp_path: Path) -> str:
    (part,) = [p for p in message.iter_attachments() if p.get_content_type() == "application/pdf"]
    path = tmp_path / "advice.pdf"
    path.write_bytes(part.get_content())
    return subprocess.run(["pdftotext", "-enc", "UTF-8", str(path), "-"], capture_output=True,
                          text=True, check=True).stdout


def outbox(tmp_path: Path) -> list[Any]:
    with Journal(tmp_path / "journal" / "journal.sqlite3") as j:
        return j.advices()


def test_a_run_mails_each_paid_payee_one_advice_with_the_pdf(
        service: Any, smtp: Inbox, tmp_path: Path) -> None:
    result, run_id = pay(tmp_path)
    assert result.exit_code == 1, result  # the FAILED row; the advices change nothing of it
    assert len(sandbox_payouts(service.url)) == 5
    got = by_ref(tmp_path / "out.xlsx")
    assert got["T-00005"]["status"] in {"FAILED", "REFUNDED"}
    assert {got[r]["status"] for r in ("T-00002", "T-00004", "T-00007", "T-00009")} == {
        "COMPLETED"}
    # A (two rows, one advice) and D; not B (FAILED), not C (no payee_email)
    assert sorted(m["To"] for m in smtp.messages) == ["ap@huaqiang.example.cn", "d@example.cn"]
    assert "Remittance advices of run" in result.stderr and "2 sent now" in result.stderr
    assert "no payee_email" in result.stderr
    to_a = next(m for m in smtp.messages if m["To"] == "ap@huaqiang.example.cn")
    assert to_a["From"] == "payments@acme.example"
    text = pdf_text(to_a, tmp_path)
    assert NAME_A in text  # the Chinese name exactly as paid
    paid = {p["remark"].split("ref:")[-1]: p for p in sandbox_payouts(service.url)}
    for ref in ("T-00002", "T-00004"):
        assert ref in text
        assert paid[ref]["referenceNumber"] in text
        assert f"{paid[ref]['targetAmount']:,.2f}" in text
    assert "Invoice 7" in text and "Invoice 8" in text
    assert "**** " + row(2)["account_number"][-4:] in text
    assert row(2)["account_number"] not in text  # masked: the last four digits only
    assert "Acme Trading Ltd 艾克美贸易" in text and "付款通知" in text
    assert "T-00009" not in text and "T-00005" not in text
    [record_a, record_d] = sorted(outbox(tmp_path), key=lambda r: r.payee_name != NAME_A)
    assert record_a.payout_refs == ("T-00002", "T-00004") and record_a.state == "sent"
    assert record_a.attempts == 1 and record_a.sent_at and record_a.run_id == run_id
    assert record_d.payout_refs == ("T-00009",)
    # advise again: the outbox says they went; nothing is sent twice
    again = batchpay("advise", run_id)
    assert again.exit_code == 0, again
    assert "0 sent now, 2 sent before" in again.stdout
    listed = batchpay("advise", run_id, "--json")
    assert listed.exit_code == 0, listed
    document = json.loads(listed.stdout)
    assert document["run_id"] == run_id
    assert [(a["payout_refs"], a["state"], a["attempts"]) for a in document["advices"]] == [
        (["T-00002", "T-00004"], "sent", 1), (["T-00009"], "sent", 1)]
    assert len(smtp.messages) == 2


def test_with_the_mail_server_down_the_run_pays_the_same_and_advise_sends_later_once(
        service: Any, inbox: Inbox, smtp_port: int, tmp_path: Path, no_backoff: None) -> None:
    result, run_id = pay(tmp_path)  # nothing listens on smtp_port
    assert result.exit_code == 1, result  # the same as with mail: the FAILED row only
    assert len(sandbox_payouts(service.url)) == 5
    assert "Remittance advices" in result.stderr and "could not reach the mail server" in \
        result.stderr
    records = outbox(tmp_path)
    assert [r.state for r in records] == ["queued", "queued"]
    assert records[0].attempts == 2 and "could not reach" in records[0].last_error
    assert records[1].attempts == 0  # the server is down: the next advice is not tried
    down = batchpay("advise", run_id)
    assert down.exit_code == 1, down
    assert "0 sent now" in down.stdout and "waiting to be sent" in down.stdout
    controller = start_smtp(inbox, smtp_port)
    try:
        later = batchpay("advise", run_id)
        assert later.exit_code == 0, later
        assert "2 sent now" in later.stdout
        assert sorted(m["To"] for m in inbox.messages) == [
            "ap@huaqiang.example.cn", "d@example.cn"]
        assert batchpay("advise", run_id).exit_code == 0
        assert len(inbox.messages) == 2  # a second advise sends 0
    finally:
        controller.stop()
    assert len(sandbox_payouts(service.url)) == 5  # mail never touched a payout
    assert {r.state for r in outbox(tmp_path)} == {"sent"}


def test_advise_without_mail_settings_says_what_to_set(cli_sandbox: Any, tmp_path: Path) -> None:
    cli_sandbox(settle_seconds=0.05)
    sheet = write_sheet(tmp_path / "nov.xlsx", [row(9, payee_email="d@example.cn")],
                        headers=HEADERS_MAIL)
    paid = batchpay("run", str(sheet), "--wait", "10", "--json")
    assert paid.exit_code == 0, paid
    assert "Remittance" not in paid.stderr  # no [mail]: a run mails nothing
    result = batchpay("advise", json.loads(paid.stdout)["run_id"])
    assert result.exit_code == 2
    assert "[mail]" in result.stderr and "Traceback" not in result.stderr


def test_the_outbox_is_a_table_of_the_journal(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite3"
    Journal(path).close()
    columns = {r[1] for r in sqlite3.connect(path).execute("PRAGMA table_info(advices)")}
    assert {"run_id", "payee", "recipients", "payout_refs", "state", "attempts",
            "last_error", "sent_at"} <= columns


class RefusingInbox(Inbox):
    """A server that refuses one address for good (550), as for an address it has no
    mailbox for."""

    async def handle_RCPT(self, server: Any, session: Any, envelope: Any, address: str,  # noqa: N802
                          rcpt_options: list[str]) -> str:
        if address == "d@example.cn":
            return "550 5.1.1 no such user"
        envelope.rcpt_tos.append(address)
        return "250 OK"


def test_an_address_the_server_refuses_fails_that_advice_only(
        service: Any, smtp_port: int, tmp_path: Path) -> None:
    refusing = RefusingInbox()
    controller = start_smtp(refusing, smtp_port)
    try:
        result, run_id = pay(tmp_path)
        assert result.exit_code == 1, result  # the FAILED row, as without mail
        assert [m["To"] for m in refusing.messages] == ["ap@huaqiang.example.cn"]
        states = {r.recipients: (r.state, r.attempts) for r in outbox(tmp_path)}
        assert states[("d@example.cn",)] == ("failed", 1)  # refused for good: not retried
        assert "refused" in result.stderr and "no such user" in result.stderr
        again = batchpay("advise", run_id)
        assert again.exit_code == 1 and "1 refused" in again.stdout  # named, not resent
        assert len(refusing.messages) == 1
    finally:
        controller.stop()


def test_no_chinese_font_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          ) -> None:
    from batchpay.engine.advice_pdf import find_cjk_font
    from batchpay.errors import AdviceError

    chosen = find_cjk_font()  # fonts-noto-cjk: the simplified-Chinese face, regular weight
    assert "Bold" not in chosen.path.name and chosen.path.is_file()
    with pytest.raises(AdviceError, match="does not exist") as named:
        find_cjk_font(tmp_path / "missing.ttf")
    assert named.value.hint and "fonts-noto-cjk" in named.value.hint
    monkeypatch.setenv("PATH", str(tmp_path))  # no fc-list: no font can be found
    with pytest.raises(AdviceError, match="No Chinese"):
        find_cjk_font()


def test_an_advice_cut_off_while_sending_is_named_and_not_sent_again(
        service: Any, inbox: Inbox, smtp_port: int, tmp_path: Path, no_backoff: None) -> None:
    _, run_id = pay(tmp_path)  # the mail server is down: both advices stay queued
    journal_path = tmp_path / "journal" / "journal.sqlite3"
    with Journal(journal_path) as j:  # as a process killed mid-send leaves it
        first = j.advices(run_id)[0]
        assert j.take_advice(run_id, first.payee)
    controller = start_smtp(inbox, smtp_port)
    try:
        result = batchpay("advise", run_id)
        assert result.exit_code == 1, result
        assert "1 sent now" in result.stdout and "may have gone" in result.stdout
        assert len(inbox.messages) == 1 and inbox.messages[0]["To"] not in first.recipients
        assert batchpay("advise", run_id).exit_code == 1
        assert len(inbox.messages) == 1
    finally:
        controller.stop()


def test_a_payee_with_rows_still_pending_waits_for_them(
        cli_sandbox: Any, smtp: Inbox, smtp_port: int, tmp_path: Path) -> None:
    cli_sandbox(settle_seconds=2)
    user = tmp_path / "config" / "batchpay"
    user.mkdir(parents=True)
    (user / "batchpay.toml").write_text(
        f'[mail]\nhost = "127.0.0.1"\nport = {smtp_port}\nsecurity = "none"\n'
        'from = "payments@acme.example"\n', encoding="utf-8")
    sheet = write_sheet(tmp_path / "nov.xlsx", [row(9, payee_email="d@example.cn")],
                        headers=HEADERS_MAIL)
    paid = batchpay("run", str(sheet), "--wait", "0", "--json")
    assert paid.exit_code == 0, paid  # PENDING: accepted, on its way
    run_id = json.loads(paid.stdout)["run_id"]
    assert "1 payee(s) wait for rows not final yet" in paid.stderr
    assert smtp.messages == [] and outbox(tmp_path) == []  # nothing queued for a PENDING row
    time.sleep(2.5)
    assert batchpay("sync", "--run", run_id).exit_code == 0
    later = batchpay("advise", run_id)
    assert later.exit_code == 0 and "1 sent now" in later.stdout, later
    assert [m["To"] for m in smtp.messages] == ["d@example.cn"]
