"""Serving the console: where it may listen, over what, and the login link it gives.

On loopback (127.0.0.1, ::1, localhost) it serves plain HTTP to this machine only. Any other
address is refused unless a TLS certificate and key are given and at least one user with a
password exists: a team's console is reached over HTTPS by named users, never by a link
that crossed a network in clear.

The one-time login link (the owner's, or --user's) signs in whoever holds it. For one person
on their own machine it is printed. A team's console (users with passwords, or listening
beyond loopback) usually runs as a service whose output a log keeps: there the link is
written to `console/login-link` beside the journal (0600, readable by whoever runs the
console only) and never printed.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from batchpay.console.accounts import OWNER, Accounts
from batchpay.console.guard import allowed_hosts
from batchpay.console.state import open_accounts
from batchpay.errors import UsageError
from batchpay.files import PRIVATE_FILE_MODE, private_dir, replaced_atomically
from batchpay.settings.model import Settings, is_loopback_host

if TYPE_CHECKING:
    from starlette.applications import Starlette

    from batchpay.console.batches import Batch

LINK_FILE = "login-link"  # in console/: where a team's console leaves its login link


@dataclass
class ServeOptions:
    host: str = "127.0.0.1"
    port: int = 8765
    tls_cert: Path | None = None
    tls_key: Path | None = None
    server_name: str | None = None
    user: str | None = None


def prepare(settings: Settings, options: ServeOptions, port: int
            ) -> tuple[Starlette, str, Accounts]:
    """The app and the login user, once the binding is allowed (UsageError otherwise);
    `port` is the one bound (a free one when --port 0)."""
    from batchpay.console.app import create_app

    https = options.tls_cert is not None
    if (options.tls_cert is None) != (options.tls_key is None):
        raise UsageError("Give both --tls-cert and --tls-key, or neither.")
    for path in (options.tls_cert, options.tls_key):
        if path is not None and not path.is_file():
            raise UsageError(f"No file {path}.")
    accounts = open_accounts(settings)
    if not is_loopback_host(options.host):
        if not https:
            raise UsageError(
                f"The console listens on {options.host} only over HTTPS: give --tls-cert "
                "and --tls-key.", hint="Or leave --host at 127.0.0.1 to use it from this "
                "machine only.")
        if options.host in ("0.0.0.0", "::") and not options.server_name:
            raise UsageError(f"Listening on {options.host}, the console needs the name users "
                             "type to reach it: give --server-name (e.g. "
                             "payouts.example.com); other Host headers are refused.")
        if not any(u.password for u in accounts.users()):
            raise UsageError("A console others can reach needs user accounts: add them with "
                             "`batchpay users add NAME --role maker` (and approver, auditor).")
    login = options.user or OWNER
    if options.user is not None and accounts.get(options.user) is None:
        raise UsageError(f"No console user {options.user}.",
                         hint="`batchpay users list` shows them.")
    accounts.ensure_owner()  # administers only; signs in by the link only
    app = create_app(settings, allowed_hosts=allowed_hosts(
        options.host, port, options.server_name), https=https)
    return app, login, accounts


def serve(settings: Settings, options: ServeOptions, say: Callable[[str], None]) -> None:
    """Serve until Ctrl-C, after printing the one-time login link."""
    from batchpay.serving import bind

    prepare(settings, options, options.port)  # refusals before the port is taken
    sock = bind(options.host, options.port, "console")
    port = sock.getsockname()[1]
    try:
        app, login, _accounts = prepare(settings, options, port)
    except BaseException:
        sock.close()
        raise
    scheme = "https" if options.tls_cert else "http"
    name = options.server_name or options.host
    shown = f"[{name}]" if ":" in name else name
    token = app.state.console.sessions.login_link(login)
    link = f"{scheme}://{shown}:{port}/login/{token}"
    say(f"batchpay console for the journal {settings.journal_name}")
    for batch in stopped_payments(app):
        say(f"The payment of batch {batch.id} ({batch.meta.get('uploaded_name', '')}) stopped "
            "before it ended: its page offers Resume payment (nothing is paid twice).")
    accounts = app.state.console.accounts
    if team_mode(options, accounts):
        path = write_link(accounts.folder, link)
        say(f"Sign in as {login}: the one-time link (valid 15 minutes) is in {path}, readable "
            "by you only (a team's console never prints it, where a log would keep it).")
    else:
        say(f"Sign in as {login} (one-time link, valid 15 minutes): {link}")
    say("Ctrl-C stops the console; a payment under way stops with it, and Resume payment on "
        "its page goes on with it (nothing is paid twice).")
    _run(app, sock, options)


def team_mode(options: ServeOptions, accounts: Accounts) -> bool:
    """A console others reach: users with passwords, or listening beyond loopback."""
    return not is_loopback_host(options.host) or any(u.password for u in accounts.users())


def write_link(folder: Path, link: str) -> Path:
    """The login link in console/login-link, 0600 from its first byte (replacing the last)."""
    path = private_dir(folder) / LINK_FILE
    with replaced_atomically(path) as partial:
        fd = os.open(partial, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, PRIVATE_FILE_MODE)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(link + "\n")
    return path


def stopped_payments(app: Starlette) -> list[Batch]:
    """The batches whose payment stopped with an earlier console (the index lists them too)."""
    from batchpay.console.payment import stopped

    console = app.state.console
    return stopped(console.settings, console.batches)


def _run(app: Starlette, sock: socket.socket, options: ServeOptions) -> None:
    from batchpay.serving import serve_foreground

    tls = ({"ssl_certfile": str(options.tls_cert), "ssl_keyfile": str(options.tls_key)}
           if options.tls_cert is not None else {})
    serve_foreground(app, sock, **tls)
