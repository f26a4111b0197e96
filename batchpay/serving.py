"""Serving a Starlette app with uvicorn, in a background thread or in the foreground.

The socket is bound before uvicorn starts, so port 0 gives a free port whose URL is known
at once and that nothing else can take meanwhile.
"""

from __future__ import annotations

import socket
import threading
import time
from types import TracebackType
from typing import Any, Self

from batchpay.errors import UsageError

START_TIMEOUT_SECONDS = 15.0
STOP_TIMEOUT_SECONDS = 10.0


def bind(host: str, port: int, what: str = "server") -> socket.socket:
    """A listening socket on host:port (port 0: any free port)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto IPPROTO_TCP (not 0): accepted sockets inherit it, and asyncio turns Nagle off
    # (TCP_NODELAY) only on sockets that say TCP; with Nagle on, every answer on a kept-alive
    # connection waits ~40 ms for a delayed ACK.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise UsageError(
            f"The {what} cannot listen on {host}:{port}: {exc.strerror or exc}.",
            hint="Pick another --port (0 picks a free one) or stop what is using it.",
        ) from None
    # listening now: a client that reads the printed URL before uvicorn is up waits in the
    # backlog instead of being refused
    sock.listen(2048)
    return sock


def url_of(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def uvicorn_server(app: Any) -> Any:
    import uvicorn

    return uvicorn.Server(uvicorn.Config(
        app, log_level="warning", access_log=False, lifespan="on", loop="asyncio",
        timeout_graceful_shutdown=3,
    ))


class ServerThread:
    """An app served in a daemon thread; stop() (or leaving the `with`) shuts it down."""

    def __init__(self, app: Any, host: str = "127.0.0.1", port: int = 0,
                 what: str = "server") -> None:
        self.app = app
        self._socket = bind(host, port, what)
        self.url = url_of(self._socket)
        self._server = uvicorn_server(app)
        self._thread = threading.Thread(target=self._server.run,
                                        kwargs={"sockets": [self._socket]},
                                        name=f"{what} {self.url}", daemon=True)

    def start(self) -> Self:
        self._thread.start()
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the server did not start on {self.url}")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        if self._thread.is_alive():
            self._thread.join(STOP_TIMEOUT_SECONDS)
        self._socket.close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.stop()


def serve_foreground(app: Any, sock: socket.socket) -> None:
    """Serve on a bound socket until Ctrl-C (or SIGTERM)."""
    server = uvicorn_server(app)
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:  # uvicorn re-raises the Ctrl-C it handled: we are done
        pass
    finally:
        sock.close()
