"""Real receivers of notifications on free ports: an SMTP server (aiosmtpd) whose inbox
parses each message, and an HTTP server that keeps each JSON body posted to it (apprise's
json:// receiver). Either can be started again on the same port after a stop, as a
receiver that was down and came back."""

from __future__ import annotations

import email
import json
import socket
import threading
from email.message import EmailMessage
from email.policy import default
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from aiosmtpd.controller import Controller


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Inbox:
    """What the SMTP server received: one parsed message per DATA, with its envelope."""

    def __init__(self) -> None:
        self.messages: list[tuple[list[str], EmailMessage]] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:  # noqa: N802
        self.messages.append((list(envelope.rcpt_tos),
                              email.message_from_bytes(envelope.content, policy=default)))
        return "250 OK"

    def to(self, address: str) -> list[EmailMessage]:
        return [m for rcpt, m in self.messages if address in rcpt]

    @staticmethod
    def text(message: EmailMessage) -> str:
        part = message.get_body(preferencelist=("plain",))
        return str(message["Subject"]) + "\n" + (part.get_content() if part else "")


class SmtpServer:
    def __init__(self, port: int | None = None) -> None:
        self.port = port or free_port()
        self.inbox = Inbox()
        self._controller: Controller | None = None

    def start(self) -> SmtpServer:
        self._controller = Controller(self.inbox, hostname="127.0.0.1", port=self.port)
        self._controller.start()
        return self

    def stop(self) -> None:
        if self._controller is not None:
            self._controller.stop()
            self._controller = None

    def url(self, to: str) -> str:
        """apprise's URL for plain SMTP (no TLS, no login) to `to` on this server."""
        return (f"mailto://127.0.0.1:{self.port}?from=batchpay@acme.example&to={to}"
                "&mode=insecure")


class HookServer:
    """A JSON web hook: keeps every body posted to it."""

    def __init__(self, port: int | None = None) -> None:
        self.port = port or free_port()
        self.posts: list[dict[str, Any]] = []
        self._server: ThreadingHTTPServer | None = None

    def start(self) -> HookServer:
        posts = self.posts

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                size = int(self.headers.get("Content-Length", "0"))
                posts.append(json.loads(self.rfile.read(size)))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    @property
    def url(self) -> str:
        return f"json://127.0.0.1:{self.port}/hook"

    def titles(self) -> list[str]:
        return [str(p["title"]) for p in self.posts]
