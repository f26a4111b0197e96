"""Commands only: parse options, call one library function, map errors to messages and exit codes.

`base` holds what every command shares (the group, errors, common options); the commands
are in `paying` (validate, run, rerun, runs, sync, report, verify), `controls` (payees,
keys, plan, approve), `tools` (banks, sandbox, listen, template, config), `books` (export,
reconcile), `advice` (advise), `notify` (notify send, notify list) and `console` (serve,
users).
"""

from __future__ import annotations

from batchpay.cli import advice, books, console, controls, notify, paying, tools
from batchpay.cli.base import cli

__all__ = ["advice", "books", "cli", "console", "controls", "main", "notify", "paying",
           "tools"]


def main() -> None:
    cli(prog_name="batchpay")
