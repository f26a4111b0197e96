"""What every request passes before any page sees it, and what every answer carries.

- The Host header must name this server (as bound, or the name given with --server-name):
  a page on another site whose name was pointed at 127.0.0.1 (DNS rebinding) is refused.
- A request that changes something (POST) must come from this origin: a browser says where
  it comes from (Sec-Fetch-Site, Origin), and anything but this origin is refused with 403
  before the form is read. The form token (sessions.py) is the second, independent check.
- Every answer says: no framing, no script or style but this server's, no sniffing of
  content types, no referrer, no caching of pages.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
SAME_SITE = frozenset({"same-origin", "none"})  # "none": typed in the address bar


class Guard:
    def __init__(self, app: ASGIApp, allowed_hosts: Iterable[str], *, https: bool) -> None:
        self.app = app
        self.allowed_hosts = {h.lower() for h in allowed_hosts}
        self.https = https

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1")
                   for k, v in scope["headers"]}
        host = headers.get("host", "").lower()
        refusal = None
        if host not in self.allowed_hosts:
            refusal = (400, "This server does not answer to that host name.")
        elif scope["method"] not in SAFE_METHODS:
            refusal = self._cross_site(headers, host)
        if refusal is not None:
            await _plain(send, *refusal, https=self.https)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = list(message.get("headers", [])) + _security_headers(
                    self.https)
            await send(message)

        await self.app(scope, receive, with_headers)

    def _cross_site(self, headers: dict[str, str], host: str) -> tuple[int, str] | None:
        site = headers.get("sec-fetch-site")
        if site is not None and site not in SAME_SITE:
            return 403, "Refused: this request came from another site."
        origin = headers.get("origin")
        scheme = "https" if self.https else "http"
        if origin is not None and origin.lower() != f"{scheme}://{host}":
            return 403, "Refused: this request came from another origin."
        return None


def _security_headers(https: bool) -> list[tuple[bytes, bytes]]:
    found = [(b"content-security-policy", CSP.encode()),
             (b"x-content-type-options", b"nosniff"),
             (b"x-frame-options", b"DENY"),
             (b"referrer-policy", b"same-origin"),  # no-referrer would make the Origin null
             (b"cross-origin-opener-policy", b"same-origin"),
             (b"cross-origin-resource-policy", b"same-origin"),
             (b"cache-control", b"no-store")]
    if https:
        found.append((b"strict-transport-security", b"max-age=31536000"))
    return found


async def _plain(send: Send, status: int, text: str, *, https: bool) -> None:
    body = (text + "\n").encode()
    headers: list[Any] = [(b"content-type", b"text/plain; charset=utf-8"),
                          (b"content-length", str(len(body)).encode()),
                          *_security_headers(https)]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def allowed_hosts(host: str, port: int, server_name: str | None) -> set[str]:
    """The Host header values this server answers to."""
    from batchpay.settings.model import is_loopback_host

    names = {host} if host not in ("0.0.0.0", "::") else set()
    if server_name:
        names.add(server_name)
    if is_loopback_host(host):
        names |= {"127.0.0.1", "localhost"}
    found = set()
    for name in names:
        shown = f"[{name}]" if ":" in name and not name.startswith("[") else name
        found.add(f"{shown}:{port}".lower())
        if port in (80, 443):
            found.add(shown.lower())
    return found
