"""The Payees page: every payee paid before, and those held until someone confirms them.

    GET  /payees               the payees; a maker sees each held payee's details before
                               and after side by side, to read back on the phone
    POST /payees/confirm       a held payee confirmed: how (phone, email, in person), the new
                               account's last four digits, a note (maker)

What the page shows is `read_back`'s (IDs masked but for that maker); the confirmation is
`batchpay payees confirm`, through `work`.
"""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from batchpay.console import read_back, work
from batchpay.console.batches import BatchRefused
from batchpay.console.page import Caller, Console, form_text, render, require


async def payees(request: Request, console: Console, caller: Caller) -> Response:
    found = await run_in_threadpool(read_back.payees_page, console.settings,
                                    caller.user.may("maker"))
    return render(console, request, "payees.html", caller, confirmed=None, **found)


async def confirm_payee(request: Request, console: Console, caller: Caller) -> Response:
    require(caller, "maker")
    form = request.state.form
    method = form_text(form.get("method"))
    if method not in ("phone", "email", "in-person"):
        raise BatchRefused("Say how the payee confirmed: phone, email or in person.")
    done = await run_in_threadpool(
        work.confirm_payee, console.settings, form_text(form.get("payee")),
        form_text(form.get("last4")), caller.user.name, method, form_text(form.get("note")))
    found = await run_in_threadpool(read_back.payees_page, console.settings,
                                    caller.user.may("maker"))
    return render(console, request, "payees.html", caller, confirmed=done, **found)
