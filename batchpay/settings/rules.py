"""What a setting may be: a name batchpay knows, a value of its kind (a number in its range,
an https address, a key that fits in a header), which journal may be chosen from where, and
what a settings file in the current folder may set.

A `batchpay.toml` in the current folder comes with the folder: a shared drive, an unzipped
archive, a cloned repository. Whoever made the folder chose what it says, so it is read by
a list of what it may do (`FROM_A_FOLDER`), never by a list of what it may not: a few
settings it may set freely (how fast a run goes), the controls it may only make stricter
than the user's own value (approval, holds, how far the service's list is read, how long an
answer may take, the largest sheet read...), and nothing else. Where requests go, with which
key and headers, which journal remembers the payouts, who approves and who may post
webhooks are the user's own file's, the environment's or an option's alone; a folder's
file naming one is refused, naming the file and the settings, before anything is read or
sent. A setting added to `Settings` and not classified there is the user's alone.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from batchpay.errors import ConfigError
from batchpay.settings.model import (
    ENV,
    LEGACY_JOURNAL,
    TABLES,
    Settings,
    _defaults,
    default_journal,
    is_loopback_host,
    journal_location,
)


# when the folder's value (`after`) is weaker than the user's (`before`)
def _lowered(before: Any, after: Any) -> bool:
    return bool(after < before)


def _raised(before: Any, after: Any) -> bool:
    return bool(after > before)


def _turned_off(before: Any, after: Any) -> bool:
    return bool(before) and not after


def _more_algorithms(before: Any, after: Any) -> bool:
    return not set(after) <= set(before)


@dataclass(frozen=True)
class FolderRule:
    """What a folder's `batchpay.toml` may do with one setting: set it freely (`free`), make
    it stricter than the user's value only (`weaker` says when the folder's value is not),
    or nothing at all (`user`: the user's own file, the environment or an option only)."""

    kind: Literal["free", "tighten", "user"]
    weaker: Callable[[Any, Any], bool] | None = None


FREE = FolderRule("free")
USER_ONLY = FolderRule("user")


def tighten_only(weaker: Callable[[Any, Any], bool]) -> FolderRule:
    return FolderRule("tighten", weaker)


# Every setting, and what a folder's file may do with it: one line each. A setting missing
# here is the user's only (and tests/security/test_settings_files.py fails until it is
# classified). `free` is kept to settings that decide neither what is paid, nor where a
# request goes, nor how a payout in doubt is settled: how fast a run goes and how long it
# waits for answers.
FROM_A_FOLDER: dict[str, FolderRule] = {
    "concurrency": FREE,
    "max_rps": FREE,
    "wait_seconds": FREE,
    # stricter only, compared with the user's value (or the default)
    "require_approval": tighten_only(_turned_off),
    "approvals_required": tighten_only(_lowered),
    "hold_new_payees": tighten_only(_turned_off),
    "payee_confirmed_by_other": tighten_only(_turned_off),
    "repeat_window_days": tighten_only(_lowered),
    "service_check_days": tighten_only(_lowered),  # 0 turns the service's list check off
    "sync_max_pages": tighten_only(_lowered),  # a scan cut short proves nothing absent
    "payee_change_hold_hours": tighten_only(_lowered),
    "plan_hours": tighten_only(_raised),  # a plan that stays valid longer
    "plan_tolerance": tighten_only(_raised),  # a higher ceiling over the approved quotes
    # how long an answer may take: a shorter one proves a request "never received" too soon
    "read_timeout": tighten_only(_lowered),
    "max_file_mb": tighten_only(_raised),  # the largest sheet read, before it is parsed
    "max_rows": tighten_only(_raised),
    "max_columns": tighten_only(_raised),
    "max_cells": tighten_only(_raised),
    "signature_algorithms": tighten_only(_more_algorithms),  # fewer is stricter
    # where requests go, with which key, what they carry, and which journal remembers them
    "base_url": USER_ONLY,
    "api_key": USER_ONLY,
    "paths": USER_ONLY,
    "headers": USER_ONLY,
    "source_countries": USER_ONLY,
    "journal": USER_ONLY,
    # who approves, and who may post webhooks that change payout states
    "approvers_file": USER_ONLY,
    "webhook_secret": USER_ONLY,
    "listen_host": USER_ONLY,
    "listen_port": USER_ONLY,
    # the request budget against the service's limits
    "rate_limit": USER_ONLY,
    "rate_budget": USER_ONLY,
    "retry_attempts": USER_ONLY,
    "retry_seconds": USER_ONLY,
    "connect_timeout": USER_ONLY,
    # the books: which days a statement or an export counts, and the ledger's accounts
    "time_zone": USER_ONLY,
    "books": USER_ONLY,
    # the mail server receives the payees' names and the mail password from the environment
    "mail": USER_ONLY,
    # a receiver of notifications learns of every batch and payment, and its URL may hold
    # a password: a folder's file may not send them elsewhere
    "notify": USER_ONLY,
}


def folder_rule(name: str) -> FolderRule:
    return FROM_A_FOLDER.get(name, USER_ONLY)


def not_for_a_folder(given: set[str]) -> list[str]:
    """The names a folder's file sets that only the user's own settings may set (a table
    as `[paths]`)."""
    return [f"[{name}]" if name in TABLES else name
            for name in sorted(given) if folder_rule(name).kind == "user"]


def weakened(before: Settings, after: Settings, given: set[str]) -> list[str]:
    """The tighten-only settings that the folder's file (which sets the names `given`)
    loosens, each as `name = value (yours: value)`. `before` is what the user's file and
    the defaults make, `after` the same with the folder's file merged over it."""
    found = []
    for name in sorted(given):
        rule = folder_rule(name)
        mine, theirs = getattr(before, name), getattr(after, name)
        if rule.weaker is not None and rule.weaker(mine, theirs):
            found.append(f"{name} = {_shown(theirs)} (yours: {_shown(mine)})")
    return found


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
    if isinstance(value, tuple):
        return "[" + ", ".join(str(v) for v in value) + "]"
    return "(not set)" if value is None else str(value)


def refuse_folder_file(path: Path, only_yours: list[str], loosened: list[str],
                       user_file: Path) -> None:
    """A folder's file that sets a setting only the user's own settings set, or loosens a
    tighten-only one, is refused (exit 2), naming each."""
    if only_yours:
        raise ConfigError(
            f"The settings file {path} in the current folder sets what only your own "
            f"settings may set: {', '.join(only_yours)}.",
            hint=f"Take these lines out of {path}; set them in your own settings file, "
            f"{user_file}, or the environment.")
    if loosened:
        raise ConfigError(
            f"The settings file {path} in the current folder may only tighten a control, not "
            f"loosen it: {'; '.join(loosened)}.",
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


VOUCHER_PER = ("payout", "run")
BOOK_TABLES = ("wallet", "reason", "payee")


def books_values(value: Any, books: type) -> dict[str, Any]:
    """The `[books]` table, checked: known names, text accounts, tables of text accounts,
    one of the voucher layouts; currency codes upper-case. `books`: the dataclass it fills."""
    if not isinstance(value, dict):
        raise ConfigError("Setting books must be a table ([books]).",
                          hint="See the README's \"Close the books\" section.")
    known = {f.name for f in dataclasses.fields(books)}
    check_known({f"books.{k}" for k in value}, {f"books.{k}" for k in known})
    for name, item in value.items():
        if name in BOOK_TABLES:
            if not isinstance(item, dict) or not all(
                    isinstance(v, str) and v.strip() for v in item.values()):
                raise ConfigError(f"Setting books.{name} must be a table of account codes "
                                  "(text), e.g. NGN = \"1002.01\".")
        elif not isinstance(item, str) or not item.strip():
            raise ConfigError(f"Setting books.{name} = {item!r} must be text (an account "
                              "code or a name).")
    if value.get("voucher_per", "payout") not in VOUCHER_PER:
        raise ConfigError(f"Setting books.voucher_per = {value['voucher_per']!r} is not one "
                          f"of {', '.join(VOUCHER_PER)}.")
    given: dict[str, Any] = {k: ({str(a).strip(): str(b).strip() for a, b in v.items()}
                                 if isinstance(v, dict) else v.strip())
                             for k, v in value.items()}
    if "base_currency" in given:
        given["base_currency"] = given["base_currency"].upper()
    if "wallet" in given:
        given["wallet"] = {c.upper(): a for c, a in given["wallet"].items()}
    return given


def check_signature_algorithms(algorithms: tuple[str, ...]) -> None:
    for algo in algorithms:
        if algo not in SIGNATURE_ALGORITHMS:
            raise ConfigError(f"Unknown signature algorithm {algo!r}: use sha512 and/or sha256.")


def check_base_url(url: str) -> None:
    """https for every service that is not on this machine: the key travels in a header."""
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
    if values.get("journal_from") == "file" and not same_path(journal_location(journal), chosen):
        raise ConfigError(
            f"BATCHPAY_JOURNAL={journal} names another journal than your settings file "
            f"{user_file} (journal = {chosen}).",
            hint=f"Unset BATCHPAY_JOURNAL, or change journal in {user_file}; `--journal` "
            "picks another journal for one command.")
