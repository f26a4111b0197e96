"""Where the console keeps its state, chosen by the journal's address as the journal's
own store is (batchpay.journal.stores): one interface, two implementations.

- A journal in a file (the default): the console's folder beside it on this host —
  `console/users.json` and `console/keys/` (accounts.Accounts), sessions in this process's
  memory (sessions.Sessions), a folder per batch with its `pay.claim` file
  (batches.Batches).
- A journal in PostgreSQL: the same classes' team versions keep users, signing keys,
  login links, sessions, batches, their files and the Pay claims in that database
  (state_postgres, batches_postgres), so that two `batchpay serve` on two hosts serve one
  team: a batch made on one is reviewed, approved and paid on the other, and paid once.

Accounts, Sessions and Batches are the interface: the page handlers, the library calls
(work, payment, signing) and `batchpay users` use nothing else of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response

from batchpay.console.accounts import Accounts, console_folder
from batchpay.console.batches import Batches
from batchpay.console.sessions import Sessions
from batchpay.errors import JournalError
from batchpay.files import is_database_address
from batchpay.settings.model import Settings

if TYPE_CHECKING:
    from batchpay.console.state_postgres import ConsoleDatabase


@dataclass
class ConsoleState:
    """The console's users, sessions and batches."""

    accounts: Accounts
    sessions: Sessions
    batches: Batches
    shared: bool  # kept in the journal's database, shared by every host serving it


def in_database(settings: Settings) -> bool:
    return is_database_address(settings.journal)


def open_state(settings: Settings) -> ConsoleState:
    """The console's state for `settings`' journal (in a database: its tables made when
    missing, at the first use)."""
    folder = console_folder(settings.local_folder)
    if not in_database(settings):
        return ConsoleState(Accounts(folder), Sessions(), Batches(folder / "batches"), False)
    from batchpay.console.batches_postgres import TeamBatches
    from batchpay.console.state_postgres import TeamAccounts, TeamSessions

    db = _database(str(settings.journal))
    return ConsoleState(TeamAccounts(folder, db), TeamSessions(db),
                        TeamBatches(folder / "batches", db), True)


def open_accounts(settings: Settings) -> Accounts:
    """The users alone (`batchpay users`, and `serve` before it serves)."""
    folder = console_folder(settings.local_folder)
    if not in_database(settings):
        return Accounts(folder)
    from batchpay.console.state_postgres import TeamAccounts

    return TeamAccounts(folder, _database(str(settings.journal)))


def _database(url: str) -> ConsoleDatabase:
    """Its tables are made at its first use (ConsoleDatabase.migrate)."""
    from batchpay.console.state_postgres import ConsoleDatabase

    return ConsoleDatabase(url)


async def unreachable(request: Request, exc: Exception) -> Response:
    """A page asked for while the journal's database cannot be reached (where the users and
    sessions live): 503 and what to do, never a traceback; /healthz says the same to a
    load balancer, which sends the team to the other console meanwhile."""
    assert isinstance(exc, JournalError)
    return PlainTextResponse(f"{exc.message}\n{exc.hint or ''}\n", status_code=503,
                             headers={"Retry-After": "30", "Cache-Control": "no-store"})
