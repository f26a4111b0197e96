"""The console assembled: every route and the handler that answers it, the guard every
request passes first, the templates, the refused page for errors, and the threads that run
while it is served (the follower, the notices' deliverer). The handlers live in modules by
area, each on what `page` gives them all (Console, page, render, the role rule):

    signin_pages     GET /login, POST /login, GET /login/TOKEN, POST /logout
    batch_pages      GET / (batches, the upload form), POST /upload, GET /template,
                     GET /batches/ID (check, review, approvals, payment, results;
                     ?finding=&page=: the table Rows, filtered, a page of it),
                     POST /batches/ID/review | approve | signature | reject
                     | continue (without the invalid rows) | discard,
                     GET /batches/ID/files/KIND (sheet, checked, plan, results...)
    payment_pages    POST /batches/ID/pay | refresh | resume; GET /batches/ID/progress
                     (the payment as the journal holds it, JSON) and /events (the same as
                     server-sent events until the run is final)
    statement_pages  GET /history (?from=&to=), /history.csv; for auditors, approvers and the
                     owner: /statement, /statement/workbook, /statement/books/{format},
                     /statement/reconcile, /statement/reconciliation (?from=&to=)
    payee_pages      GET /payees; POST /payees/confirm
    admin_pages      GET /users (owner, auditor); GET /healthz (200 when the journal, its
                     database, is reachable, else 503; no session needed, nothing else said)

Every page says whether two-person approval is on: with an approver among the console's
users it is, unless the user's own settings file says `require_approval = false`
(`Console.settings`).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from batchpay import clock
from batchpay.console import books, read_back
from batchpay.console import statement as audit
from batchpay.console.admin_pages import healthz, users_page
from batchpay.console.batch_pages import (
    approve,
    batch_page,
    continue_valid,
    discard,
    download,
    index,
    reject,
    review,
    signature,
    template,
    upload,
)
from batchpay.console.follower import FOLLOW_SECONDS, Follower
from batchpay.console.guard import Guard
from batchpay.console.page import Console, http_error, page
from batchpay.console.payee_pages import confirm_payee, payees
from batchpay.console.payment_pages import events, pay, progress, refresh, resume
from batchpay.console.signin_pages import link_login, login_page, logout
from batchpay.console.state import open_state, unreachable
from batchpay.console.statement_pages import (
    books_download,
    history,
    history_download,
    reconcile_download,
    reconcile_page,
    statement_download,
    statement_page,
)
from batchpay.console.wording import for_page
from batchpay.errors import JournalError
from batchpay.money import shown_amount
from batchpay.notify import EVERY as NOTIFY_EVERY
from batchpay.notify import NoticeWorker
from batchpay.settings.load import own_setting
from batchpay.settings.model import Settings

HERE = Path(__file__).parent


def create_app(settings: Settings, *, allowed_hosts: set[str], https: bool,
               max_upload_bytes: int | None = None,
               follow_seconds: float = FOLLOW_SECONDS,
               notify_seconds: float = NOTIFY_EVERY) -> Starlette:
    """The console for `settings`' journal, answering to `allowed_hosts`; while served, its
    follower refreshes paid batches' rows every `follow_seconds` until they are final."""
    limit = max_upload_bytes or int(settings.max_file_mb * 1024 * 1024)
    templates = Environment(loader=FileSystemLoader(HERE / "templates"),
                            autoescape=select_autoescape(default=True, default_for_string=True),
                            finalize=read_back.shown)  # IDs masked on every page
    templates.filters["page_words"] = for_page
    templates.filters["when"] = lambda at, seconds=False: clock.show(at, settings.time_zone,
                                                                    seconds=seconds)
    templates.filters["amount"] = shown_amount
    state = open_state(settings)  # beside the journal file, or in its database
    console = Console(settings, state.accounts, state.sessions, state.batches,
                      templates, limit,
                      approval_off_by_user=own_setting("require_approval") is False)
    console.templates.globals["may_read_statement"] = audit.may_read_statement
    console.templates.globals["export_links"] = books.EXPORT_LINKS
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
        Route("/batches/{id}/resume", page(console, resume, write=True), methods=["POST"]),
        Route("/batches/{id}/continue", page(console, continue_valid, write=True),
              methods=["POST"]),
        Route("/batches/{id}/discard", page(console, discard, write=True), methods=["POST"]),
        Route("/batches/{id}/progress", page(console, progress)),
        Route("/batches/{id}/events", page(console, events)),
        Route("/batches/{id}/files/{kind}", page(console, download)),
        Route("/history", page(console, history)),
        Route("/history.csv", page(console, history_download)),
        Route("/statement", page(console, statement_page)),
        Route("/statement/workbook", page(console, statement_download)),
        Route("/statement/books/{format}", page(console, books_download)),
        Route("/statement/reconcile", page(console, reconcile_page)),
        Route("/statement/reconciliation", page(console, reconcile_download)),
        Route("/payees", page(console, payees)),
        Route("/payees/confirm", page(console, confirm_payee, write=True), methods=["POST"]),
        Route("/users", page(console, users_page)),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
    ]
    follower = Follower(settings, console.batches, follow_seconds)
    deliverer = NoticeWorker(settings.journal, settings.notify, notify_seconds)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        follower.start()
        deliverer.start()
        try:
            yield
        finally:
            await run_in_threadpool(follower.stop)
            await run_in_threadpool(deliverer.stop)

    app = Starlette(routes=routes, max_body_size=limit + 64 * 1024, lifespan=lifespan,
                    middleware=[Middleware(Guard, allowed_hosts=allowed_hosts, https=https)],
                    exception_handlers={HTTPException: http_error,
                                        JournalError: unreachable})
    app.state.console = console
    return app

