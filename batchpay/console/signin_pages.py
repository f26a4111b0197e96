"""Signing in and out: the pages that answer before there is a session.

    GET  /login, POST /login   name and password; a name is paused after too many wrong
                               passwords (429, Retry-After)
    GET  /login/TOKEN          the one-time login link `batchpay serve` gives
    POST /logout               ends the session (its form token checked)

A session is a `__Host-` cookie (sessions.py); every other page needs one (page.page).
"""

from __future__ import annotations

import math

from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from batchpay.console.page import Console, form_text, render
from batchpay.console.sessions import COOKIE, Session


def signed_in(console: Console, session: Session, to: str = "/") -> Response:
    response = RedirectResponse(to, status_code=303)
    response.set_cookie(COOKIE, session.id, httponly=True, secure=True, samesite="strict",
                        path="/")
    return response


async def login_page(request: Request) -> Response:
    console: Console = request.app.state.console
    if request.method == "GET":
        return render(console, request, "login.html", None, failed=False)
    form = await request.form(max_files=0, max_fields=5)
    name = form_text(form.get("name"))
    if console.sign_ins.wait(name):
        return paused(console, request, name)
    user = await run_in_threadpool(console.accounts.authenticate, name,
                                   form_text(form.get("password")))
    if user is None:
        console.sign_ins.failed(name)
        if console.sign_ins.wait(name):  # that was the last try before the pause
            return paused(console, request, name)
        return render(console, request, "login.html", None, failed=True, status_code=401)
    console.sign_ins.succeeded(name)
    return signed_in(console, console.sessions.start(user.name, user.generation))


def paused(console: Console, request: Request, name: str) -> Response:
    """Sign-in for this name is paused after too many wrong passwords (429, Retry-After)."""
    seconds = math.ceil(console.sign_ins.wait(name))
    response = render(console, request, "login.html", None, failed=True,
                      paused_minutes=math.ceil(seconds / 60), status_code=429)
    response.headers["Retry-After"] = str(seconds)
    return response


async def link_login(request: Request) -> Response:
    console: Console = request.app.state.console
    session = console.sessions.redeem(request.path_params["token"], lambda name: (
        user.generation if (user := console.accounts.get(name)) is not None else None))
    if session is None:
        raise HTTPException(403, "This login link was used already or has expired: "
                                 "restart `batchpay serve` for a new one, or sign in.")
    return signed_in(console, session)


async def logout(request: Request) -> Response:
    console: Console = request.app.state.console
    session = console.sessions.get(request.cookies.get(COOKIE))
    if session is not None:
        form = await request.form(max_files=0, max_fields=5)
        if not session.token_matches(form_text(form.get("csrf"))):
            raise HTTPException(403, "This form is stale: reload the page.")
        console.sessions.end(session.id)
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(COOKIE, path="/", secure=True, httponly=True, samesite="strict")
    return response
