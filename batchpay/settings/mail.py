"""The `[mail]` settings table: the SMTP server remittance advices go through.

It is read from the user's own settings file (a folder's file may not set it: the payees'
names, and the password from the environment, would go to the server it names) and holds
no password: that is BATCHPAY_MAIL_PASSWORD, read where a mail is sent
(`mail_password`), so no file on a shared drive ever carries it.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

from batchpay.errors import ConfigError
from batchpay.settings.model import _SECRETS, Mail, is_loopback_host
from batchpay.settings.rules import check_known

MAIL_PASSWORD_ENV = "BATCHPAY_MAIL_PASSWORD"  # the mail password: environment only
_MAIL_KIND = {int: "whole number", float: "number", str: "text"}


def mail_password(env: dict[str, str] | None = None) -> str | None:
    """The SMTP password, from the environment only; kept out of every message (`scrub`)."""
    password = (dict(os.environ) if env is None else env).get(MAIL_PASSWORD_ENV) or None
    if password is not None:
        _SECRETS.add(password)
    return password


def mail_table(value: Any) -> Mail:
    """`[mail]` from a settings file: its names checked, no password, security known."""
    if not isinstance(value, dict):
        raise ConfigError("Setting mail must be a table: [mail] with host and from.",
                          hint="See Remittance advice in the README.")
    table = dict(value)
    if "password" in table:
        raise ConfigError("[mail] holds a password: batchpay reads the mail password from "
                          f"the environment only ({MAIL_PASSWORD_ENV}).",
                          hint="Take the password out of the file and set "
                          f"{MAIL_PASSWORD_ENV} where batchpay runs.")
    if "from" in table:
        table["sender"] = table.pop("from")
    fields = {f.name: f.type for f in dataclasses.fields(Mail)}
    check_known({f"mail.{k}" for k in value},
                {"mail.from", *(f"mail.{k}" for k in fields if k != "sender")})
    for name, given in table.items():
        kind = str(fields[name])
        if "float" in kind and isinstance(given, int) and not isinstance(given, bool):
            table[name] = given = float(given)
        wanted = int if "int" in kind else float if "float" in kind else str
        if not isinstance(given, wanted) or isinstance(given, bool):
            raise ConfigError(f"[mail] {'from' if name == 'sender' else name} = {given!r} "
                              f"is not a valid {_MAIL_KIND[wanted]}.",
                              hint="See Remittance advice in the README.")
    if "font" in table:
        table["font"] = Path(table["font"]).expanduser()
    try:
        mail = Mail(**table)
    except TypeError:
        raise ConfigError("[mail] needs at least host and from (host = \"smtp.example.com\", "
                          "from = \"payments@example.com\").",
                          hint="See Remittance advice in the README.") from None
    if mail.security not in ("starttls", "ssl", "none"):
        raise ConfigError(f"[mail] security = {mail.security!r}: use starttls, ssl or none.",
                          hint="starttls on port 587, ssl on port 465.")
    if mail.security == "none" and not is_loopback_host(mail.host):
        raise ConfigError(f"[mail] security = \"none\" sends mail and password in clear text "
                          f"to {mail.host}.", hint="Use starttls or ssl; none is for a mail "
                          "server on this machine (127.0.0.1, localhost) only.")
    if not (0 < mail.port < 65536) or mail.attempts < 1 or not mail.timeout > 0:
        raise ConfigError("[mail] port, attempts or timeout is out of range.",
                          hint="port 1 to 65535, attempts at least 1, timeout above 0.")
    return mail
