"""Sign-in and sessions, kept in the server's memory only (with the journal in PostgreSQL,
in its database, by their hashes: state_postgres.TeamSessions).

A session is a random 128-bit id in a `__Host-` cookie (Secure, HttpOnly, SameSite=Strict,
Path=/, no Domain): the browser sends it to this origin only and no script can read it.
Signing out, or restarting the server, ends every session held. Each session carries its
own form token: a page's forms post it back, so a form on another site cannot act in it.

The login link `serve` gives carries a one-time token of 128 bits: opened once, it becomes
a session and is spent.

A session remembers its user's generation (accounts.py) when it started: once the user is
changed (`users add --replace`: a new password or new roles) or removed, every session of
theirs is refused and ended at its next request, in whichever console process holds it.

Passwords cannot be guessed at the server's speed: after SIGN_IN_TRIES wrong passwords for
one user name within SIGN_IN_PAUSE seconds, that name's sign-in is paused for SIGN_IN_PAUSE
seconds, the right password included (`SignInThrottle`).
"""

from __future__ import annotations

import hmac
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

COOKIE = "__Host-batchpay-session"
IDLE_SECONDS = 8 * 3600  # a session unused for a working day ends
LINK_SECONDS = 15 * 60  # a login link not opened within 15 minutes is void
SIGN_IN_TRIES = 5  # wrong passwords for one user name within SIGN_IN_PAUSE...
SIGN_IN_PAUSE = 15 * 60  # ...pause that name's sign-in this long


def new_secret() -> str:
    """128 random bits, URL-safe."""
    return secrets.token_urlsafe(16)


@dataclass
class Session:
    id: str
    user: str
    form_token: str
    generation: str = ""  # the user's generation when the session started
    started: float = field(default_factory=time.monotonic)
    seen: float = field(default_factory=time.monotonic)

    def token_matches(self, given: str | None) -> bool:
        return bool(given) and hmac.compare_digest(str(given), self.form_token)


class Sessions:
    def __init__(self) -> None:
        self._sessions: dict[str, Session] = {}
        self._links: dict[str, tuple[str, float]] = {}  # token → (user, made at)
        self._lock = threading.Lock()

    def login_link(self, user: str) -> str:
        """A one-time token that signs `user` in (see `redeem`)."""
        token = new_secret()
        with self._lock:
            self._links[token] = (user, time.monotonic())
        return token

    def redeem(self, token: str, generation_of: Callable[[str], str | None]) -> Session | None:
        """The link's session, once; a spent, unknown or stale token, or one whose user is
        gone (`generation_of` gives None), gives None."""
        with self._lock:
            found = self._links.pop(token, None)
        if found is None or time.monotonic() - found[1] > LINK_SECONDS:
            return None
        generation = generation_of(found[0])
        return None if generation is None else self.start(found[0], generation)

    def start(self, user: str, generation: str) -> Session:
        session = Session(new_secret(), user, new_secret(), generation)
        with self._lock:
            self._sessions[session.id] = session
        return session

    def get(self, session_id: str | None) -> Session | None:
        if not session_id:
            return None
        with self._lock:
            session = self._sessions.get(session_id)
            if session is None:
                return None
            now = time.monotonic()
            if now - session.seen > IDLE_SECONDS:
                del self._sessions[session_id]
                return None
            session.seen = now
            return session

    def end(self, session_id: str) -> None:
        with self._lock:
            self._sessions.pop(session_id, None)

    def count(self, user: str, generation: str) -> int:
        """The user's sessions held now, of their current generation (the owner's page)."""
        with self._lock:
            return sum(1 for s in self._sessions.values()
                       if s.user == user and s.generation == generation)


class SignInThrottle:
    """Wrong passwords counted per user name (as typed, case and spaces aside): the
    SIGN_IN_TRIES-th within `pause` seconds pauses sign-in for that name for `pause` seconds.
    Per name, not per address: behind a proxy every address is the same, and a guesser can
    change address. A name no user has is counted alike, so the answer tells no one which
    names exist. A paused user can still use the one-time link `batchpay serve` prints."""

    def __init__(self, tries: int = SIGN_IN_TRIES, pause: float = SIGN_IN_PAUSE,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.tries, self.pause, self._clock = tries, pause, clock
        self._failures: dict[str, list[float]] = {}  # name → times of its recent failures
        self._paused: dict[str, float] = {}  # name → when its pause ends
        self._lock = threading.Lock()

    def wait(self, name: str) -> float:
        """Seconds until `name` may try again (0: now)."""
        with self._lock:
            return max(0.0, self._paused.get(_key(name), 0.0) - self._clock())

    def failed(self, name: str) -> None:
        now = self._clock()
        with self._lock:
            self._forget(now)
            recent = self._failures.setdefault(_key(name), [])
            recent.append(now)
            if len(recent) >= self.tries:
                self._paused[_key(name)] = now + self.pause
                del self._failures[_key(name)]

    def succeeded(self, name: str) -> None:
        with self._lock:
            self._failures.pop(_key(name), None)

    def _forget(self, now: float) -> None:
        """Drop the failures and pauses that no longer count (the tables stay small)."""
        for name, times in list(self._failures.items()):
            recent = [at for at in times if now - at < self.pause]
            if recent:
                self._failures[name] = recent
            else:
                del self._failures[name]
        for name in [n for n, until in self._paused.items() if until <= now]:
            del self._paused[name]


def _key(name: str) -> str:
    return name.strip().casefold()
