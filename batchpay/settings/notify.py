"""The `notify` setting: where notifications go, each receiver a URL of the apprise library
(mail, Slack, WeCom, DingTalk, a JSON web hook and the others apprise knows).

A receiver may name who it is for, in apprise's own tag form `approver=URL` or
`maker,approver=URL`: `approver` gets "a batch waits for you", `maker` gets "your batch was
approved / rejected"; everyone gets "a payment ended" and "a payee is held". A URL with no
names gets every notification. Each URL is checked when the settings are read, so that a
mistyped one is refused at start, not found out when a payment has ended.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

from batchpay.errors import ConfigError

AUDIENCES = ("maker", "approver")  # who a receiver may be for; none named: everyone
_NAMED = re.compile(r"^\s*([A-Za-z][A-Za-z ,]*?)\s*=\s*([A-Za-z][A-Za-z0-9+.-]*://.*)$")
_HINT = ("Each entry of notify is a URL apprise knows (mailto://, mailtos://, json://, "
         "form://, slack://, wecombot://, dingtalk:// ...), optionally after who it is for: "
         '"approver=mailto://...". See Notifications in the README.')


@dataclass(frozen=True)
class Receiver:
    """One receiver of notifications: its URL (which may hold a password) and who it is for."""

    url: str
    audiences: frozenset[str]  # empty: every notification

    @property
    def key(self) -> str:
        """The receiver's name in the journal: a hash of its URL, never the URL itself."""
        return hashlib.sha256(self.url.encode()).hexdigest()[:16]

    @property
    def shown(self) -> str:
        """The URL as it may be printed: apprise's own form without passwords or tokens."""
        service = _instantiate(self.url)
        return service.url(privacy=True) if service is not None else "(not a notify URL)"

    def gets(self, audience: str) -> bool:
        """Whether a notification for `audience` ("" for everyone) goes to this receiver."""
        return not self.audiences or not audience or audience in self.audiences


def _instantiate(url: str) -> Any:
    import apprise

    return apprise.Apprise.instantiate(url, suppress_exceptions=True)


def receiver(entry: str) -> Receiver:
    """One entry of the setting, checked: its names known and its URL one apprise can use."""
    match = _NAMED.match(entry)
    url, names = (match.group(2).strip(), match.group(1)) if match else (entry.strip(), "")
    audiences = frozenset(n.strip().lower() for n in names.split(",") if n.strip())
    unknown = sorted(audiences - set(AUDIENCES))
    if unknown:
        raise ConfigError(f"Setting notify: {', '.join(unknown)} is not who a notification is "
                          f"for (one of {', '.join(AUDIENCES)}, or none for everyone).",
                          hint=_HINT)
    if _instantiate(url) is None:
        scheme = url.split("://", 1)[0] if "://" in url else url[:20]
        raise ConfigError(f"Setting notify: {scheme}:// ... is not a notification URL apprise "
                          "can use (an unknown scheme, or a required part missing).",
                          hint=_HINT)
    return Receiver(url, audiences)


def notify_list(value: Any) -> tuple[str, ...]:
    """The setting as a file gives it (a list of strings, or one string), each entry checked."""
    entries = [value] if isinstance(value, str) else value
    if not isinstance(entries, list) or not all(isinstance(e, str) for e in entries):
        raise ConfigError("Setting notify must be a list of URLs (strings).", hint=_HINT)
    for entry in entries:
        receiver(entry)
    return tuple(e.strip() for e in entries if e.strip())


def receivers(entries: tuple[str, ...]) -> list[Receiver]:
    return [receiver(e) for e in entries]


def shown_notify(entries: tuple[str, ...]) -> str:
    """The setting as `batchpay config` prints it: without passwords."""
    if not entries:
        return "(none)"
    shown = []
    for r in receivers(entries):
        names = ",".join(sorted(r.audiences))
        shown.append(f"{names}={r.shown}" if names else r.shown)
    return ", ".join(shown)
