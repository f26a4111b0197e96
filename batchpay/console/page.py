"""What every page and form of the console stands on: shared by the handlers of each area
and by the app that assembles them (app.py), so that no handler module needs the app or
another area's module.

    Console    what the handlers share: settings, users, sessions, batches, the templates
    Caller     who is asking: their session and their user
    page       a handler made a page: a signed-in user only, a form with its form token
    render     a template with what every page says (user, form token, two-person approval)
    require    the role rule: 403 unless the caller has the role (`batch_for` with the batch)

A handler checks who is asking, calls one function of `work` (or of `payment`, `statement`,
`books`, `read_back`), and renders what comes back. No rule about money or rows lives in a
handler.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from jinja2 import Environment
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from batchpay.console.accounts import Accounts, User
from batchpay.console.batches import Batch, Batches, BatchRefused
from batchpay.console.sessions import COOKIE, Session, Sessions, SignInThrottle
from batchpay.console.wording import for_page
from batchpay.errors import BatchpayError
from batchpay.settings.model import Settings


@dataclass
class Console:
    """What the handlers share: settings, users, sessions, batches, the page templates."""

    loaded: Settings  # as loaded; `settings` is what the console works under
    accounts: Accounts
    sessions: Sessions
    batches: Batches
    templates: Environment
    max_upload_bytes: int
    approval_off_by_user: bool = False  # the user's own file says require_approval = false
    sign_ins: SignInThrottle = field(default_factory=SignInThrottle)

    @property
    def settings(self) -> Settings:
        """The settings, with two-person approval on once any console user may approve
        (a team), unless the user's own settings file turned it off: a team's console is
        never left with approval optional by default. Read at every request, so a user added
        with `batchpay users add` while the console runs counts at once."""
        if self.loaded.require_approval or self.approval_off_by_user:
            return self.loaded
        if any(u.may("approver") for u in self.accounts.users()):
            return dataclasses.replace(self.loaded, require_approval=True)
        return self.loaded


@dataclass
class Caller:
    session: Session
    user: User


Handler = Callable[[Request, Console, Caller], Awaitable[Response]]


def page(console: Console, handler: Handler, *, write: bool = False
         ) -> Callable[[Request], Awaitable[Response]]:
    """The handler, for a signed-in user only; a form that changes something must carry the
    session's form token (403 otherwise)."""

    async def endpoint(request: Request) -> Response:
        session = console.sessions.get(request.cookies.get(COOKIE))
        user = console.accounts.get(session.user) if session else None
        if session is not None and (user is None or user.generation != session.generation):
            # the user was removed, or given a new password or roles: the session is over
            console.sessions.end(session.id)
            session = None
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
            if not session.token_matches(form_text(form.get("csrf"))):
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
                      message=for_page(exc.message), hint=for_page(exc.hint or ""),
                      back=request.headers.get("referer") or "/")
    except BatchpayError as exc:
        return render(console, request, "refused.html", caller, status_code=409,
                      message=for_page(exc.message), hint=for_page(exc.hint or ""), back="/")


def form_text(value: Any) -> str:
    """A form field as text: "" when it is missing or a file."""
    return value if isinstance(value, str) else ""


def render(console: Console, request: Request, name: str, caller: Caller | None,
           status_code: int = 200, **context: Any) -> HTMLResponse:
    settings = console.settings
    text = console.templates.get_template(name).render(
        user=caller.user if caller else None,
        csrf=caller.session.form_token if caller else "",
        two_person=settings.require_approval,
        approval_off_by_user=console.approval_off_by_user,
        sandbox=settings.embedded,
        service=settings.base_url or "embedded sandbox", **context)
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


def attachment(name: str) -> str:
    """Content-Disposition with an ASCII `filename` for old clients and the name itself as
    `filename*` (RFC 6266, RFC 8187), which every current browser takes."""
    from urllib.parse import quote

    fallback = "".join(c if 32 <= ord(c) < 127 and c not in '"\\;' else "_" for c in name)
    return f"attachment; filename=\"{fallback}\"; filename*=UTF-8''{quote(name, safe='')}"
