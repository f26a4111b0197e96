"""The [mail] settings of remittance advices: what a file may hold, and who may set it."""

from __future__ import annotations

from pathlib import Path

import pytest

from batchpay.errors import ConfigError
from batchpay.settings.load import load_settings
from batchpay.settings.mail import mail_password
from batchpay.settings.model import scrub

MAIL = ('[mail]\nhost = "smtp.example.com"\nport = 465\nsecurity = "ssl"\n'
        'from = "payments@acme.example"\nuser = "payments@acme.example"\n')

BARE = '[mail]\nhost = "smtp.example.com"\nfrom = "payments@acme.example"\n'


def settings_file(folder: Path, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "batchpay.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_mail_table_is_read(tmp_path: Path) -> None:
    mail = load_settings(env={}, files=[settings_file(tmp_path, MAIL)]).mail
    assert mail is not None
    assert (mail.host, mail.port, mail.security, mail.sender, mail.user) == (
        "smtp.example.com", 465, "ssl", "payments@acme.example", "payments@acme.example")
    assert (mail.attempts, mail.retry_seconds) == (3, 30.0)
    assert load_settings(env={}, files=[]).mail is None  # no [mail]: no advices


@pytest.mark.parametrize(("extra", "said"), [
    ('password = "hunter2-hunter2"\n', "environment only (BATCHPAY_MAIL_PASSWORD)"),
    ("prot = 25\n", "mail.prot (did you mean mail.port?)"),
    ('port = "587"\n', "[mail] port = '587' is not a valid whole number"),
    ('security = "tls"\n', "use starttls, ssl or none"),
])
def test_a_mail_table_that_cannot_work_is_refused(tmp_path: Path, extra: str, said: str) -> None:
    with pytest.raises(ConfigError) as refused:
        load_settings(env={}, files=[settings_file(tmp_path, BARE + extra)])
    assert said in refused.value.message
    assert "hunter2" not in refused.value.message


def test_clear_text_mail_only_to_this_machine(tmp_path: Path) -> None:
    plain = '[mail]\nhost = "smtp.example.com"\nfrom = "a@acme.example"\nsecurity = "none"\n'
    with pytest.raises(ConfigError, match="clear text"):
        load_settings(env={}, files=[settings_file(tmp_path, plain)])
    local = plain.replace("smtp.example.com", "127.0.0.1")
    assert load_settings(env={}, files=[settings_file(tmp_path, local)]).mail is not None


def test_a_folder_file_may_not_point_the_advices_at_another_mail_server(tmp_path: Path) -> None:
    # the payees' names and the password from the environment would go to that server
    user = settings_file(tmp_path / "user", MAIL)
    folder = settings_file(tmp_path / "share", MAIL.replace("smtp.example.com", "mx.evil.example"))
    with pytest.raises(ConfigError, match=r"only your own settings may set: \[mail\]"):
        load_settings(env={}, files=[user, folder])
    # nor set one where the user has none
    with pytest.raises(ConfigError, match=r"only your own settings may set: \[mail\]"):
        load_settings(env={}, files=[settings_file(tmp_path / "u2", ""), folder])


def test_the_mail_password_comes_from_the_environment_and_is_never_shown() -> None:
    password = mail_password({"BATCHPAY_MAIL_PASSWORD": "s3cret-mail-pass"})
    assert password == "s3cret-mail-pass"
    assert scrub("login failed for s3cret-mail-pass") == "login failed for [secret]"
    assert mail_password({}) is None
