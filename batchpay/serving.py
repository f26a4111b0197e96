"""Serving a Starlette app with uvicorn, in a background thread or in the foreground.

The socket is bound before uvicorn starts, so port 0 gives a free port whose URL is known
at once and that nothing else can take meanwhile.

Every server is guarded against connections that hold a slot and say nothing: a
connection has `HEAD_TIMEOUT_SECONDS` to send a complete request head (uvicorn itself
only times out a connection *after* a response), and beyond `MAX_IDLE_CONNECTIONS` the
oldest idle connection is closed to make room, so thousands of idle connections cannot
starve a real delivery (a webhook the service must get answered within 10 s).
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
HEAD_TIMEOUT_SECONDS = 10.0
MAX_IDLE_CONNECTIONS = 256
# connections taken from the kernel's queue at a time: between two batches the oldest idle
# connections are closed, so a flood never holds more than about MAX_IDLE + this many files
ACCEPT_BATCH = 64


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


def guarded_protocol(head_timeout: float, max_idle: int) -> type:
    """uvicorn's h11 protocol with a deadline for each request head and a cap on idle
    connections (one registry per server: the oldest idle connection goes first).

    uvicorn has no public setting for either, so this subclasses its H11Protocol and uses
    its internals (conn, transport, loop, on_response_complete, handle_events): uvicorn is
    pinned in pyproject.toml to the minor release this was checked against."""
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    idle: dict[Any, None] = {}  # insertion order: oldest first

    class GuardedH11Protocol(H11Protocol):
        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._await_head()
            while len(idle) > max_idle:
                oldest = next(iter(idle))
                idle.pop(oldest)
                oldest._close_if_waiting()

        def connection_lost(self, exc: Exception | None) -> None:
            idle.pop(self, None)
            super().connection_lost(exc)

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._await_head()

        _heads_awaited = 0

        def _await_head(self) -> None:
            idle[self] = None
            self._heads_awaited += 1
            self.loop.call_later(head_timeout, self._head_deadline, self._heads_awaited)

        def _head_deadline(self, awaited: int) -> None:
            # a later request on a kept-alive connection has a deadline of its own
            if awaited == self._heads_awaited:
                self._close_if_waiting()

        def _close_if_waiting(self) -> None:
            """Close the connection if it has not sent a complete request head."""
            if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
                idle.pop(self, None)
                self.transport.close()

        def handle_events(self) -> None:
            super().handle_events()
            if self.conn.their_state is not h11.IDLE:
                idle.pop(self, None)  # a request head arrived: busy, not idle

    return GuardedH11Protocol


def uvicorn_server(app: Any, **tls: Any) -> Any:
    """`tls`: uvicorn's ssl_certfile and ssl_keyfile, to serve HTTPS."""
    import uvicorn

    return uvicorn.Server(uvicorn.Config(
        app, log_level="warning", access_log=False, lifespan="on", loop="asyncio",
        timeout_graceful_shutdown=3, backlog=ACCEPT_BATCH,
        http=guarded_protocol(HEAD_TIMEOUT_SECONDS, MAX_IDLE_CONNECTIONS), **tls,
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


def serve_foreground(app: Any, sock: socket.socket, **tls: Any) -> None:
    """Serve on a bound socket until Ctrl-C (or SIGTERM)."""
    server = uvicorn_server(app, **tls)
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:  # uvicorn re-raises the Ctrl-C it handled: we are done
        pass
    finally:
        sock.close()


class Rounds:
    """A round of work (`round`) every `every` seconds in a daemon thread of its own, from
    `start` until `stop`: the console's follower and the notifications' deliverer."""

    name = "rounds"

    def __init__(self, every: float) -> None:
        self.every = every
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def wanted(self) -> bool:
        """Whether this worker has anything to do at all (none: `start` starts nothing)."""
        return True

    def start(self) -> None:
        if self.every <= 0 or self._thread is not None or not self.wanted():
            return
        self._thread = threading.Thread(target=self._loop, name=self.name, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(30)
            self._thread = None

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def _loop(self) -> None:
        while not self._stop.wait(self.every):
            self.round()

    def round(self) -> object:
        raise NotImplementedError
