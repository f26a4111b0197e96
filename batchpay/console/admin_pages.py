"""What the console says of itself: to its owner and auditors, and to the machines that run it.

    GET  /users                the users, their sessions and the settings (owner, auditor)
    GET  /healthz              200 when the journal (its database) is reachable, else 503;
                               no session needed, nothing else said

Users are added, changed and removed with `batchpay users` on the console's machine, never
from a page: nothing here changes anything.
"""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from batchpay.console.accounts import OWNER
from batchpay.console.page import Caller, Console, render
from batchpay.engine import journal_reachable


async def healthz(request: Request) -> Response:
    """For a load balancer or a service manager: whether this console can reach its journal
    (its PostgreSQL database, or its file). No session: it says nothing but that."""
    console: Console = request.app.state.console
    ok = await run_in_threadpool(journal_reachable, console.loaded)  # reads no user
    return JSONResponse({"status": "ok" if ok else "journal unreachable"},
                        status_code=200 if ok else 503,
                        headers={"Cache-Control": "no-store"})


async def users_page(request: Request, console: Console, caller: Caller) -> Response:
    """The owner's page (auditors read it too): who may do what, their sessions, and the
    settings the console works under. Users are added, changed and removed with `batchpay
    users` on the console's machine, never from a page."""
    if not (caller.user.may(OWNER) or caller.user.may("auditor")):
        raise HTTPException(403, "The users and settings are the owner's and auditors' page.")
    found = await run_in_threadpool(console.accounts.users)
    shown = [(u, console.sessions.count(u.name, u.generation)) for u in found]
    return render(console, request, "users.html", caller, users=shown,
                  settings=console.settings.public_items())
