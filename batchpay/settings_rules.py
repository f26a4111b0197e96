"""What a setting may be: the range of every number, and the controls that a settings file in
the current folder may only tighten.

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

import math
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

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


def trusted_journal(before: Settings, after: Settings) -> Path:
    """The journal the user chose: in the user's file, else the default of the service."""
    from batchpay.config import default_journal

    return before.journal if before.journal_from == "file" else default_journal(after.base_url)


def same_path(a: Path | None, b: Path | None) -> bool:
    if a is None or b is None:
        return a is b
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
