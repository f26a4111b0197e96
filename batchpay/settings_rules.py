"""What a setting may be: a name batchpay knows, a value of its kind (a number in its range,
an https address, a key that fits in a header), which journal may be chosen from where, and
the controls that a settings file in the current folder may only tighten.

A `batchpay.toml` in the current folder comes with the folder: a shared drive, an unzipped
archive, a cloned repository. It is merged over the user's own settings file, so that a
project can name its service or its sheet limits, but it may never loosen what keeps a
payout from going twice or to the wrong account (turn approval off, name other approvers,
another journal, shorter repeat window, the service's list read less far back...): such a
file is refused, naming the file and the settings, before anything is read or sent. Only
the user's own file (and, for the journal, an environment variable when the user's file
names no journal) loosens a control.
"""

from __future__ import annotations

import difflib
import functools
import math
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from batchpay.errors import ConfigError

if TYPE_CHECKING:
    from batchpay.config import Settings

# name: (lowest, highest, whether the lowest itself is allowed); None: no bound
_RANGES: dict[str, tuple[float, float | None, bool]] = {
    "concurrency": (1, 32, True),
    "max_rps": (0, None, True),
    "wait_seconds": (0, None, True),
    "connect_timeout": (0, None, False),
    "read_timeout": (0, None, False),
    "retry_attempts": (1, None, True),
    "retry_seconds": (0, None, True),
    "max_file_mb": (0, None, False),
    "max_rows": (1, None, True),
    "max_columns": (1, None, True),
    "max_cells": (1, None, True),
    "sync_max_pages": (1, None, True),
    "repeat_window_days": (0, None, True),
    "service_check_days": (0, None, True),
    "payee_change_hold_hours": (0, None, True),
    "approvals_required": (1, 2, True),
    "plan_hours": (0, None, False),
    "plan_tolerance": (0, 1, True),
    "listen_port": (0, 65535, True),
}


def check_ranges(settings: Settings, names: set[str] | None = None,
                 origins: dict[str, str] | None = None,
                 label: Callable[[str], str] = lambda name: f"Setting {name}") -> None:
    """Refuse a number outside its range (`concurrency = 0` once ran no worker at all and
    left every row NOT_SENT), and any number that is not finite (TOML reads `nan`, `inf`).
    `label` names the setting as the operator typed it (a file's key or an option),
    `origins` the file that set it."""
    for name, (low, high, low_ok) in _RANGES.items():
        if names is not None and name not in names:
            continue
        value = getattr(settings, name)
        shown = f"{label(name)} = {value}" + (f" in {origins[name]}" if origins and name in
                                               origins else "")
        if not math.isfinite(value):
            raise ConfigError(f"{shown} is not a finite number.",
                              hint=_range_text(name, low, high, low_ok))
        if value < low or (value == low and not low_ok) or (high is not None and value > high):
            raise ConfigError(f"{shown} is out of range.",
                              hint=_range_text(name, low, high, low_ok))


def _range_text(name: str, low: float, high: float | None, low_ok: bool) -> str:
    whole = isinstance(getattr(_defaults(), name), int)
    kind = "a whole number" if whole else "a number"
    if high is not None:
        span = f"from {low:g} to {high:g}"
    else:
        span = f"of {low:g} or more" if low_ok else f"above {low:g}"
    return f"{name} takes {kind} {span} (default {getattr(_defaults(), name)})."


@functools.cache
def _defaults() -> Settings:
    from batchpay.config import Settings

    return Settings(journal=Path("journal.sqlite3"))


def _lower(before: Any, after: Any) -> bool:
    return bool(after < before)


def _higher(before: Any, after: Any) -> bool:
    return bool(after > before)


def _turned_off(before: Any, after: Any) -> bool:
    return bool(before) and not after


# a control, and when its value in the folder's file is weaker than the user's (or default)
CONTROLS: dict[str, Callable[[Any, Any], bool]] = {
    "require_approval": _turned_off,
    "approvals_required": _lower,
    "hold_new_payees": _turned_off,
    "repeat_window_days": _lower,
    "service_check_days": _lower,  # 0 turns the service's list check off
    "payee_change_hold_hours": _lower,
    "plan_hours": _higher,  # a plan that stays valid longer
    "plan_tolerance": _higher,  # a higher ceiling over the approved quotes
}


def weakened(before: Settings, after: Settings, given: set[str]) -> list[str]:
    """The controls that the folder's file (which sets the names `given`) loosens, each as
    `name = value (yours: value)`. `before` is what the user's file and the defaults make,
    `after` the same with the folder's file merged over it."""
    found = [(name, getattr(after, name), getattr(before, name))
             for name, weaker in CONTROLS.items()
             if name in given and weaker(getattr(before, name), getattr(after, name))]
    if "approvers_file" in given and not same_path(after.approvers_file,
                                                   before.approvers_file) and (
            before.approvers_file is not None or before.require_approval):
        found.append(("approvers_file", after.approvers_file, before.approvers_file))
    # the journal is what remembers every payout: another file would pay them all again
    if "journal" in given and not same_path(after.journal, trusted_journal(before, after)):
        found.append(("journal", after.journal, trusted_journal(before, after)))
    # the key and the journal follow the service: another address would send the user's key
    # elsewhere, and (even the same service spelt otherwise) start from an empty journal
    if "base_url" in given and (before.base_url or before.api_key) \
            and after.base_url != before.base_url:
        found.append(("base_url", after.base_url, before.base_url))
    return [f"{name} = {_shown(value)} (yours: {_shown(mine)})" for name, value, mine in found]


def trusted_journal(before: Settings, after: Settings) -> Path | str:
    """The journal the user chose: in the user's file, else the default of the service."""
    from batchpay.config import default_journal

    return before.journal if before.journal_from == "file" else default_journal(after.base_url)


def same_path(a: Path | str | None, b: Path | str | None) -> bool:
    """Whether two settings name the same file (or the same database address)."""
    if a is None or b is None:
        return a is b
    if isinstance(a, str) or isinstance(b, str):  # a database address is compared as given
        return str(a) == str(b)
    return Path(a).expanduser().resolve() == Path(b).expanduser().resolve()


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    return "(not set)" if value is None else str(value)


def refuse_weakening(path: Path, changes: list[str], user_file: Path) -> None:
    if changes:
        raise ConfigError(
            f"The settings file {path} in the current folder may only tighten a control, not "
            f"loosen it: {'; '.join(changes)}.",
            hint=f"Take these lines out of {path}; a control is loosened only in your own "
            f"settings file, {user_file}.")


# --------------------------------------------------------------------------- each value

SECRET_NAMES = ("api_key", "webhook_secret")
_KIND = {"int": "whole number", "float": "number", "str": "text"}
SIGNATURE_ALGORITHMS = frozenset({"sha512", "sha256"})


def check_known(names: set[str], known: set[str]) -> None:
    """Refuse a name batchpay does not know, with the known name closest to it."""
    named = []
    for name in sorted(names - known):
        close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.6)
        named.append(f"{name} (did you mean {close[0]}?)" if close else name)
    if named:
        raise ConfigError(
            f"Unknown setting(s): {', '.join(named)}.",
            hint="Fix the name in batchpay.toml; `batchpay config` lists the names batchpay "
            "knows.",
        )


def checked_value(name: str, value: Any) -> Any:
    """A number where a number belongs: `concurrency = "four"` is refused here, not mid-run."""
    default = getattr(_defaults(), name)
    if default is None:  # base_url, api_key, webhook_secret
        ok = isinstance(value, str)
    elif isinstance(value, bool) or isinstance(default, bool):
        ok = isinstance(value, bool) and isinstance(default, bool)
    elif isinstance(default, float) and isinstance(value, int):
        ok, value = True, float(value)
    else:
        ok = isinstance(value, type(default))
    if not ok:
        kind = type(default).__name__ if default is not None else "text"
        shown = "(not shown)" if name in SECRET_NAMES else repr(value)
        raise ConfigError(f"Setting {name} = {shown} is not a valid {_KIND.get(kind, kind)}.",
                          hint=f"Fix {name} in batchpay.toml (default: {default}).")
    return value


def check_signature_algorithms(algorithms: tuple[str, ...]) -> None:
    for algo in algorithms:
        if algo not in SIGNATURE_ALGORITHMS:
            raise ConfigError(f"Unknown signature algorithm {algo!r}: use sha512 and/or sha256.")


def check_base_url(url: str) -> None:
    """https for every service that is not on this machine: the key travels in a header."""
    from batchpay.config import is_loopback_host

    parsed = urlsplit(url)
    host = (parsed.hostname or "").lower()
    loopback = is_loopback_host(host)
    if host and (parsed.scheme == "https" or (parsed.scheme == "http" and loopback)):
        return
    raise ConfigError(f"base_url must start with https:// (got {url!r}); plain http:// is "
                      "accepted only for a service on this machine (127.0.0.1, localhost).",
                      hint="Set it to the service's address, e.g. https://api.example.com.")


def check_secret(name: str, value: str) -> None:
    """A key goes into an HTTP header as it is: one line of printable ASCII. Refused at load,
    without ever echoing it (a key with a trailing newline was once printed in full)."""
    from batchpay.config import ENV

    bad = [i for i, ch in enumerate(value) if not ("!" <= ch <= "~")]
    if bad:
        what = {"\n": "a line break", "\r": "a carriage return", " ": "a space",
                "\t": "a tab"}.get(value[bad[0]], "a character that is not printable ASCII")
        raise ConfigError(
            f"The {name.replace('_', ' ')} ({ENV[name]} or {name} in batchpay.toml) holds "
            f"{what} at position {bad[0] + 1} of {len(value)}: it cannot be sent in a header.",
            hint="Set it again as one line with no spaces around it (the value is not shown).")


# --------------------------------------------------------------------------- the journal


def check_legacy_journal(base_url: str | None) -> None:
    """A journal in ./.batchpay/ comes with the folder, as a folder's settings file does: it
    is used only while the service has no journal of its own yet (an older batchpay's
    journal, not moved), never instead of one (an empty or older copy would pay again)."""
    from batchpay.config import LEGACY_JOURNAL, default_journal

    home = default_journal(base_url)
    if home.is_file():
        raise ConfigError(
            f"Two journals for this service: {home} and {Path.cwd() / LEGACY_JOURNAL} in the "
            "current folder; batchpay does not choose between them.",
            hint="Set BATCHPAY_JOURNAL (or journal in your settings file) to the one that "
            "holds your payouts, and move the other away.")


def check_env_journal(values: dict[str, Any], journal: str, user_file: Path) -> None:
    """BATCHPAY_JOURNAL may choose the journal, but not against the user's file."""
    chosen = values.get("journal")
    from batchpay.config import journal_location

    if values.get("journal_from") == "file" and not same_path(journal_location(journal), chosen):
        raise ConfigError(
            f"BATCHPAY_JOURNAL={journal} names another journal than your settings file "
            f"{user_file} (journal = {chosen}).",
            hint=f"Unset BATCHPAY_JOURNAL, or change journal in {user_file}; `--journal` "
            "picks another journal for one command.")
