"""Notifications from the command line: a run on a sandbox served for real queues "payment
ended" in the journal's outbox; `notify send` delivers it to a real HTTP receiver and a real
SMTP server. A receiver that is down changes nothing of the payment and is tried again."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from batchpay.errors import ConfigError
from batchpay.settings.load import load_settings
from tests.support.e2e import batchpay, own_settings, sandbox_payouts
from tests.support.receivers import HookServer, SmtpServer
from tests.support.sheets import rows, write_sheet


def outbox() -> list[dict[str, Any]]:
    listed = batchpay("notify", "list", "--json")
    assert listed.exit_code == 0, listed
    return list(json.loads(listed.stdout))


def test_a_receiver_down_never_changes_the_payment_and_gets_it_when_back(
        cli_sandbox: Any, tmp_path: Path) -> None:
    running = cli_sandbox(settle_seconds=0.05)
    hook = HookServer()  # its port chosen, nothing listening yet: the receiver is down
    own_settings(f'notify = ["{hook.url}"]\n')
    sheet = write_sheet(tmp_path / "five.xlsx", rows(5))

    paid = batchpay("run", str(sheet), "--yes", "--wait", "20", "--json")
    assert paid.exit_code == 0, paid
    statuses = [r["status"] for r in json.loads(paid.stdout)["rows"]]
    assert statuses == ["COMPLETED"] * 5
    assert len(sandbox_payouts(running.url)) == 5
    [queued] = outbox()
    assert queued["state"] == "queued" and queued["attempts"] == 0
    assert queued["title"] == "Payment ended: five.xlsx: COMPLETED 5"

    down = batchpay("notify", "send")
    assert down.exit_code == 1, down
    assert "1 to try again later" in down.stdout
    [waiting] = outbox()
    assert waiting["state"] == "queued" and waiting["attempts"] == 1
    assert waiting["last_error"] and waiting["due_at"] > waiting["created_at"]
    assert hook.posts == []
    # the payment is as it was: the same payouts, nothing sent again by the retries
    assert len(sandbox_payouts(running.url)) == 5

    hook.start()
    try:
        not_due = batchpay("notify", "send")  # its next try is not due yet
        assert not_due.exit_code == 0 and hook.posts == [], not_due
        back = batchpay("notify", "send", "--now")
        assert back.exit_code == 0, back
        assert hook.titles() == ["Payment ended: five.xlsx: COMPLETED 5"]
        assert "COMPLETED: 5" in hook.posts[0]["message"]
        again = batchpay("notify", "send", "--now")
        assert again.exit_code == 0 and len(hook.posts) == 1  # delivered once
    finally:
        hook.stop()
    [sent] = outbox()
    assert sent["state"] == "sent" and sent["attempts"] == 2 and sent["last_error"] == ""


def test_held_payees_and_the_end_go_to_everyone_by_mail(cli_sandbox: Any, tmp_path: Path
                                                          ) -> None:
    cli_sandbox(settle_seconds=0.05)
    smtp = SmtpServer().start()
    try:
        own_settings(f'hold_new_payees = true\nnotify = ["{smtp.url("team@acme.example")}",\n'
                     f'  "approver={smtp.url("cfo@acme.example")}"]\n')
        sheet = write_sheet(tmp_path / "三月.xlsx", rows(3))
        paid = batchpay("run", str(sheet), "--yes", "--wait", "10")
        assert paid.exit_code != 0, paid  # every payee is new: every row HELD
        sent = batchpay("notify", "send")
        assert sent.exit_code == 0, sent
        team = [smtp.inbox.text(m) for m in smtp.inbox.to("team@acme.example")]
        assert len(team) == 2, team
        ended = next(t for t in team if t.startswith("Payment ended"))
        assert "Payment ended: 三月.xlsx: HELD 3" in ended and "HELD: 3" in ended
        held = next(t for t in team if t.startswith("Payee held"))
        assert "T-00001" in held and "T-00003" in held
        # a receiver for approvers gets what is for everyone too
        assert len(smtp.inbox.to("cfo@acme.example")) == 2
    finally:
        smtp.stop()


def test_a_bad_notify_url_is_refused_at_start(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('notify = ["mailto//cfo@acme.example"]\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="Setting notify"):
        load_settings(env={}, files=[bad])
    bad.write_text('notify = ["payer=json://127.0.0.1/hook"]\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="payer is not who"):
        load_settings(env={}, files=[bad])
    own_settings('notify = ["nonsense://x"]\n')
    refused = batchpay("notify", "send")
    assert refused.exit_code == 2 and "Setting notify" in refused.stderr, refused
    assert "Traceback" not in refused.stderr


def test_config_shows_receivers_without_their_password(tmp_path: Path) -> None:
    own_settings('notify = ["approver=mailtos://ops:s3cretPass@smtp.acme.example?'
                 'to=cfo@acme.example"]\n')
    shown = batchpay("config")
    assert shown.exit_code == 0, shown
    assert "s3cretPass" not in shown.stdout + shown.stderr
    assert "notify" in shown.stdout and "approver=mailtos://" in shown.stdout
