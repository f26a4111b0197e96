"""The console's pages and forms: each handler checks who is asking, calls one function of
`work` (or of `payment`), and renders what comes back. No rule about money or rows lives here.

    GET  /login, POST /login, GET /login/TOKEN, POST /logout
    GET  /                     batches, and the upload form (maker)
    POST /upload               upload + check
    GET  /batches/ID           the batch: check, review, approvals, payment, results
    POST /batches/ID/review | approve | signature | reject | pay | refresh
    GET  /batches/ID/progress  the payment as the journal holds it (JSON); /events: the same
                               as server-sent events until the run is final
    GET  /batches/ID/files/KIND  sheet, checked, plan, results
    GET  /history, /payees; POST /payees/confirm; GET /template
    GET  /healthz              200 when the journal (its database) is reachable, else 503;
                               no session needed, nothing else said
"""

from __future__ import annotations

import asyncio
import json
import math
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import (
    FileResponse,
    HTMLResponse,
    JSONResponse,
    RedirectResponse,
    Response,
)
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from batchpay.config import Settings
from batchpay.console import payment, work
from batchpay.console.accounts import Accounts, User, console_folder
from batchpay.console.batches import Batch, Batches, BatchRefused
from batchpay.console.guard import Guard
from batchpay.console.sessions import COOKIE, Session, Sessions, SignInThrottle
from batchpay.errors import BatchpayError

HERE = Path(__file__).parent
EVENT_SECONDS = 1.0  # how often the progress stream reads the journal


@dataclass
class Console:
    """What the handlers share: settings, users, sessions, batches, the page templates."""

    settings: Settings
    accounts: Accounts
    sessions: Sessions
    batches: Batches
    templates: Environment
    max_upload_bytes: int
    sign_ins: SignInThrottle = field(default_factory=SignInThrottle)


@dataclass
class Caller:
    session: Session
    user: User


def create_app(settings: Settings, *, allowed_hosts: set[str], https: bool,
               max_upload_bytes: int | None = None) -> Starlette:
    """The console for `settings`' journal, answering to `allowed_hosts`."""
    folder = console_folder(settings.local_folder)
    limit = max_upload_bytes or int(settings.max_file_mb * 1024 * 1024)
    console = Console(
        settings, Accounts(folder), Sessions(), Batches(folder / "batches"),
        Environment(loader=FileSystemLoader(HERE / "templates"),
                    autoescape=select_autoescape(default=True, default_for_string=True)),
        limit)
    routes = [
        Route("/healthz", healthz),
        Route("/", page(console, index)),
        Route("/login", login_page, methods=["GET", "POST"]),
        Route("/login/{token}", link_login),
        Route("/logout", logout, methods=["POST"]),
        Route("/upload", page(console, upload, write=True), methods=["POST"]),
        Route("/template", page(console, template)),
        Route("/batches/{id}", page(console, batch_page)),
        Route("/batches/{id}/review", page(console, review, write=True), methods=["POST"]),
        Route("/batches/{id}/approve", page(console, approve, write=True), methods=["POST"]),
        Route("/batches/{id}/signature", page(console, signature, write=True),
              methods=["POST"]),
        Route("/batches/{id}/reject", page(console, reject, write=True), methods=["POST"]),
        Route("/batches/{id}/pay", page(console, pay, write=True), methods=["POST"]),
        Route("/batches/{id}/refresh", page(console, refresh, write=True), methods=["POST"]),
        Route("/batches/{id}/progress", page(console, progress)),
        Route("/batches/{id}/events", page(console, events)),
        Route("/batches/{id}/files/{kind}", page(console, download)),
        Route("/history", page(console, history)),
        Route("/payees", page(console, payees)),
        Route("/payees/confirm", page(console, confirm_payee, write=True), methods=["POST"]),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
    ]
    app = Starlette(routes=routes, max_body_size=limit + 64 * 1024,
                    middleware=[Middleware(Guard, allowed_hosts=allowed_hosts, https=https)],
                    exception_handlers={HTTPException: http_error})
    app.state.console = console
    return app


async def healthz(request: Request) -> Response:
    """For a load balancer or a service manager: whether this console can reach its journal
    (its PostgreSQL database, or its file). No session: it says nothing but that."""
    console: Console = request.app.state.console
    ok = await run_in_threadpool(work.journal_reachable, console.settings)
    return JSONResponse({"status": "ok" if ok else "journal unreachable"},
                        status_code=200 if ok else 503,
                        headers={"Cache-Control": "no-store"})


# --------------------------------------------------------------------------- plumbing

Handler = Callable[[Request, Console, Caller], Awaitable[Response]]


def page(console: Console, handler: Handler, *, write: bool = False
         ) -> Callable[[Request], Awaitable[Response]]:
    """The handler, for a signed-in user only; a form that changes something must carry the
    session's form token (403 otherwise)."""

    async def endpoint(request: Request) -> Response:
        session = console.sessions.get(request.cookies.get(COOKIE))
        user = console.accounts.get(session.user) if session else None
        if session is None or user is None:
            if write or request.url.path.endswith(("/events", "/progress")):
                raise HTTPException(403, "Sign in first.")
            return RedirectResponse("/login", status_code=303)
        caller = Caller(session, user)
        if not write:
            return await answer(console, handler, request, caller)
        # the form, an uploaded sheet's spooled file with it, is closed with the request
        async with request.form(max_files=1, max_fields=20) as form:
            request.state.form = form
            if not session.token_matches(_text(form.get("csrf"))):
                raise HTTPException(403, "This form is stale or not from this console: "
                                         "reload the page and try again.")
            return await answer(console, handler, request, caller)

    return endpoint


async def answer(console: Console, handler: Handler, request: Request, caller: Caller
                 ) -> Response:
    """The handler's page, or the refused page saying why nothing was done."""
    try:
        return await handler(request, console, caller)
    except BatchRefused as exc:
        return render(console, request, "refused.html", caller, status_code=exc.status_code,
                      message=exc.message, hint=exc.hint,
                      back=request.headers.get("referer") or "/")
    except BatchpayError as exc:
        return render(console, request, "refused.html", caller, status_code=409,
                      message=exc.message, hint=exc.hint, back="/")


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def render(console: Console, request: Request, name: str, caller: Caller | None,
           status_code: int = 200, **context: Any) -> HTMLResponse:
    text = console.templates.get_template(name).render(
        user=caller.user if caller else None,
        csrf=caller.session.form_token if caller else "",
        sandbox=console.settings.embedded,
        service=console.settings.base_url or "embedded sandbox", **context)
    return HTMLResponse(text, status_code=status_code)


def require(caller: Caller, role: str) -> None:
    if not caller.user.may(role):
        raise HTTPException(403, f"This needs the {role} role; {caller.user.name} has "
                                 f"{', '.join(caller.user.roles)}.")


def get_batch(console: Console, request: Request) -> Batch:
    batch = console.batches.get(request.path_params["id"])
    if batch is None:
        raise HTTPException(404, "No such batch.")
    return batch


def batch_for(console: Console, request: Request, caller: Caller, role: str) -> Batch:
    """The batch a form acts on, for a caller who has the role that acts."""
    require(caller, role)
    return get_batch(console, request)


def back_to(batch: Batch, section: str) -> Response:
    """After a form: the batch's page, at the section the form changed."""
    return RedirectResponse(f"/batches/{batch.id}#{section}", status_code=303)


async def http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    console: Console = request.app.state.console
    return render(console, request, "refused.html", None, status_code=exc.status_code,
                  message=exc.detail, hint="", back="/")


def signed_in(console: Console, session: Session, to: str = "/") -> Response:
    response = RedirectResponse(to, status_code=303)
    response.set_cookie(COOKIE, session.id, httponly=True, secure=True, samesite="strict",
                        path="/")
    return response


# --------------------------------------------------------------------------- sign-in


async def login_page(request: Request) -> Response:
    console: Console = request.app.state.console
    if request.method == "GET":
        return render(console, request, "login.html", None, failed=False)
    form = await request.form(max_files=0, max_fields=5)
    name = _text(form.get("name"))
    if console.sign_ins.wait(name):
        return paused(console, request, name)
    user = await run_in_threadpool(console.accounts.authenticate, name,
                                   _text(form.get("password")))
    if user is None:
        console.sign_ins.failed(name)
        if console.sign_ins.wait(name):  # that was the last try before the pause
            return paused(console, request, name)
        return render(console, request, "login.html", None, failed=True, status_code=401)
    console.sign_ins.succeeded(name)
    return signed_in(console, console.sessions.start(user.name))


def paused(console: Console, request: Request, name: str) -> Response:
    """Sign-in for this name is paused after too many wrong passwords (429, Retry-After)."""
    seconds = math.ceil(console.sign_ins.wait(name))
    response = render(console, request, "login.html", None, failed=True,
                      paused_minutes=math.ceil(seconds / 60), status_code=429)
    response.headers["Retry-After"] = str(seconds)
    return response


async def link_login(request: Request) -> Response:
    console: Console = request.app.state.console
    session = console.sessions.redeem(request.path_params["token"])
    if session is None:
        raise HTTPException(403, "This login link was used already or has expired: "
                                 "restart `batchpay serve` for a new one, or sign in.")
    return signed_in(console, session)


async def logout(request: Request) -> Response:
    console: Console = request.app.state.console
    session = console.sessions.get(request.cookies.get(COOKIE))
    if session is not None:
        form = await request.form(max_files=0, max_fields=5)
        if not session.token_matches(_text(form.get("csrf"))):
            raise HTTPException(403, "This form is stale: reload the page.")
        console.sessions.end(session.id)
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(COOKIE, path="/", secure=True, httponly=True, samesite="strict")
    return response


# --------------------------------------------------------------------------- pages


async def index(request: Request, console: Console, caller: Caller) -> Response:
    return render(console, request, "index.html", caller, batches=console.batches.all()[:50],
                  limit_mb=console.max_upload_bytes / 1024 / 1024,
                  max_rows=console.settings.max_rows,
                  require_approval=console.settings.require_approval)


async def template(request: Request, console: Console, caller: Caller) -> Response:
    from batchpay.sheet.template import write_template

    folder = Path(tempfile.mkdtemp(prefix="batchpay-template-"))
    path = write_template(folder / "payouts-template.xlsx")
    return FileResponse(path, filename="payouts-template.xlsx")


async def upload(request: Request, console: Console, caller: Caller) -> Response:
    require(caller, "maker")
    sheet = request.state.form.get("sheet")
    if sheet is None or isinstance(sheet, str) or not sheet.filename:
        raise BatchRefused("Choose a payout sheet (.xlsx or .csv) to upload.")
    data = await sheet.read()
    if not data:
        raise BatchRefused(f"{sheet.filename} is empty.")
    batch = console.batches.create(sheet.filename, data, caller.user.name)
    await run_in_threadpool(work.check, console.settings, console.batches, batch)
    return RedirectResponse(f"/batches/{batch.id}", status_code=303)


async def batch_page(request: Request, console: Console, caller: Caller) -> Response:
    batch = get_batch(console, request)
    review = await run_in_threadpool(work.review_view, console.settings, batch)
    state = (await run_in_threadpool(payment.progress, console.settings, batch)
             if batch.meta.get("pay") else None)
    return render(console, request, "batch.html", caller, batch=batch,
                  quoting=work.review_progress(batch.id),
                  check=work.saved_check(batch), review=review, progress=state,
                  same=console.batches.same_file(batch),
                  require_approval=console.settings.require_approval)


async def review(request: Request, console: Console, caller: Caller) -> Response:
    batch = batch_for(console, request, caller, "maker")
    release = frozenset(v for v in request.state.form.getlist("release") if isinstance(v, str))
    await run_in_threadpool(work.review, console.settings, console.batches, batch,
                            console.accounts, release=release)
    return back_to(batch, "review")


async def approve(request: Request, console: Console, caller: Caller) -> Response:
    batch = batch_for(console, request, caller, "approver")
    await run_in_threadpool(work.approve, console.settings, console.batches, batch,
                            console.accounts, caller.user.name)
    return back_to(batch, "approvals")


async def signature(request: Request, console: Console, caller: Caller) -> Response:
    batch = batch_for(console, request, caller, "approver")
    upload = request.state.form.get("signature")
    text = _text(request.state.form.get("signature_text"))
    if upload is not None and not isinstance(upload, str):
        text = (await upload.read(64 * 1024)).decode("utf-8", "replace") or text
    await run_in_threadpool(work.approve_with_signature, console.settings, console.batches, batch,
                            console.accounts, caller.user.name, text)
    return back_to(batch, "approvals")


async def reject(request: Request, console: Console, caller: Caller) -> Response:
    batch = batch_for(console, request, caller, "approver")
    work.reject(console.batches, batch, caller.user.name,
                _text(request.state.form.get("reason")))
    return back_to(batch, "approvals")


async def pay(request: Request, console: Console, caller: Caller) -> Response:
    batch = batch_for(console, request, caller, "maker")
    await run_in_threadpool(payment.pay, console.settings, console.batches, batch,
                            console.accounts, caller.user.name)
    return back_to(batch, "progress")


async def refresh(request: Request, console: Console, caller: Caller) -> Response:
    batch = batch_for(console, request, caller, "maker")
    await run_in_threadpool(payment.refresh, console.settings, console.batches, batch)
    return back_to(batch, "progress")


async def progress(request: Request, console: Console, caller: Caller) -> Response:
    batch = get_batch(console, request)
    return JSONResponse(await run_in_threadpool(payment.progress, console.settings, batch))


async def events(request: Request, console: Console, caller: Caller) -> Response:
    """The payment's progress as server-sent events, one per change, until it is final."""
    from sse_starlette import EventSourceResponse

    batch_id = request.path_params["id"]
    get_batch(console, request)

    async def stream() -> AsyncIterator[dict[str, str]]:
        last = None
        while True:
            batch = console.batches.get(batch_id)
            assert batch is not None
            started = time.monotonic()
            state = await run_in_threadpool(payment.progress, console.settings, batch)
            spent = time.monotonic() - started
            text = json.dumps(state, default=str)
            if text != last:
                yield {"event": "progress", "data": text}
                last = text
            if state["finished"] or not batch.meta.get("pay") or await request.is_disconnected():
                return  # final, or no payment to follow (not started, or freed again)
            # a large run takes a while to read: the journal is read at most a third
            # of the time, so pages left open never slow the payment down
            await asyncio.sleep(max(EVENT_SECONDS, 2 * spent))

    return EventSourceResponse(stream(), ping=15)


DOWNLOADS: dict[str, Callable[[Batch], Path]] = {
    "sheet": lambda batch: batch.sheet, "checked": lambda batch: batch.checked,
    "plan": lambda batch: batch.plan_files.workbook,
    "planfile": lambda batch: batch.plan_files.plan,
    "results": lambda batch: batch.latest_results}


async def download(request: Request, console: Console, caller: Caller) -> Response:
    batch = get_batch(console, request)
    kind = request.path_params["kind"]
    if kind == "unpaid":  # written when asked for, from the journal
        path = await run_in_threadpool(payment.write_unpaid, console.settings, batch)
    elif kind in DOWNLOADS:
        path = DOWNLOADS[kind](batch)
    else:
        raise HTTPException(404, "No such file.")
    if path is None or not path.is_file():
        raise HTTPException(404, "This file is not there yet.")
    return FileResponse(path, filename=path.name)


async def history(request: Request, console: Console, caller: Caller) -> Response:
    found = await run_in_threadpool(work.history, console.settings, console.batches)
    return render(console, request, "history.html", caller, **found)


async def payees(request: Request, console: Console, caller: Caller) -> Response:
    found = await run_in_threadpool(work.payees, console.settings)
    return render(console, request, "payees.html", caller, confirmed=None, **found)


async def confirm_payee(request: Request, console: Console, caller: Caller) -> Response:
    require(caller, "maker")
    form = request.state.form
    method = _text(form.get("method"))
    if method not in ("phone", "email", "in-person"):
        raise BatchRefused("Say how the payee confirmed: phone, email or in person.")
    done = await run_in_threadpool(
        work.confirm_payee, console.settings, _text(form.get("payee")),
        _text(form.get("last4")), caller.user.name, method, _text(form.get("note")))
    found = await run_in_threadpool(work.payees, console.settings)
    return render(console, request, "payees.html", caller, confirmed=done, **found)
