"""Settings: defaults, then the user's ``batchpay.toml``, then the current folder's, then
environment variables.

The user's file (in the user config directory, platformdirs) and the current folder's are
merged in that order. The folder's file may set only what settings.rules.FROM_A_FOLDER
allows it (a few settings freely, the controls only stricter than the user's value): a file
that arrived with a folder never turns approval off, points at another journal or service,
or receives the user's key. Environment variables override both, except that
``BATCHPAY_JOURNAL`` may not name another journal than the user's file does. The API key
is never a command-line option and never printed: ``fingerprint`` is what messages, logs
and workbooks show. The key may live in a file only when the file is readable by its owner
alone (and only in the user's own).

The journal is what makes "never twice" true, so its default does not depend on the
current folder: one journal per user and per service in the user data directory
(``<data>/journals/embedded/`` for the embedded sandbox, ``<data>/journals/<host>-<hash>/``
for a real service). A journal that an older batchpay left in ``./.batchpay/`` of the
current folder is still found and used, and named so that it can be moved.
"""

from __future__ import annotations

import os
import stat
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from batchpay.days import zone
from batchpay.errors import BatchpayError, ConfigError
from batchpay.provider.endpoints import Headers, Paths
from batchpay.provider.pacing import parse_windows
from batchpay.settings.mail import mail_table
from batchpay.settings.model import (
    _SECRETS,
    ENV,
    LEGACY_JOURNAL,
    Books,
    DatabaseURL,
    Settings,
    check_ranges,
    journal_location,
    setting_names,
)
from batchpay.settings.notify import notify_list
from batchpay.settings.rules import (
    SECRET_NAMES,
    books_values,
    check_base_url,
    check_env_journal,
    check_known,
    check_legacy_journal,
    check_secret,
    check_signature_algorithms,
    checked_value,
    not_for_a_folder,
    refuse_folder_file,
    same_path,
    weakened,
)

SETTINGS_FILE = "batchpay.toml"


def settings_files() -> list[Path]:
    """The settings files in the order they are merged: the user's own, then the current
    folder's (which may only tighten a control)."""
    from platformdirs import user_config_dir

    user = Path(user_config_dir("batchpay")) / SETTINGS_FILE
    here = Path.cwd() / SETTINGS_FILE
    return [user] if same_path(user, here) else [user, here]


def own_setting(name: str, files: list[Path] | None = None) -> Any:
    """What the user's own settings file (the first of `files`) says of `name`; None when
    it says nothing. A choice only the user's own file makes (the console's approval mode)
    is read here, never from a folder's file or the defaults."""
    own = (settings_files() if files is None else files)[:1]
    return _read_file(own[0]).get(name) if own and own[0].is_file() else None


def load_settings(env: dict[str, str] | None = None, files: list[Path] | None = None) -> Settings:
    """Defaults, then each settings file found (`files` in merge order: the first is the
    user's, any other a folder's that may only tighten a control), then the environment."""
    values, source, origins = _gather(env, files)
    return _build(values, source, origins)


@dataclass
class _Layer:
    origin: Path | None  # the settings file; None: the environment
    values: dict[str, Any]
    folder: bool = False  # a folder's file: sets only what rules.FROM_A_FOLDER allows


def _layers(env: dict[str, str] | None, files: list[Path]) -> list[_Layer]:
    env = dict(os.environ) if env is None else env
    layers = [_Layer(path, _file_values(path), folder=index > 0)
              for index, path in enumerate(files) if path.is_file()]
    from_env = {name: env[var] for name, var in ENV.items() if env.get(var)}
    if from_env:
        layers.append(_Layer(None, from_env))
    return layers


def _file_values(path: Path) -> dict[str, Any]:
    """A file's raw values; its relative paths are relative to the file's folder."""
    values = _read_file(path)
    for name in ("approvers_file", "journal"):
        if isinstance(values.get(name), str) and not isinstance(
                journal_location(values[name]), DatabaseURL):
            values[name] = path.absolute().parent / Path(values[name]).expanduser()
    if "journal" in values:
        values["journal_from"] = "file"
    return values


def _gather(env: dict[str, str] | None, files: list[Path] | None, known_only: bool = False,
            ) -> tuple[dict[str, Any], str, dict[str, str]]:
    """The merged raw values, where they came from (for `config` and the run banner), and
    which file set each name. A folder's file that sets a setting only the user's own may
    set or loosens a control, or BATCHPAY_JOURNAL naming another journal than the user's
    file, is refused here. `known_only` leaves out
    names batchpay does not know (so that `config` can still show the rest)."""
    files = settings_files() if files is None else files
    values: dict[str, Any] = {}
    origins: dict[str, str] = {}
    sources: list[str] = []
    keep = setting_names() | {"journal_from"}
    for layer in _layers(env, files):
        new = {k: v for k, v in layer.values.items() if not known_only or k in keep}
        if layer.folder and layer.origin is not None:
            refuse_folder_file(layer.origin, not_for_a_folder(set(new) & setting_names()),
                               [], files[0])
            before, after = _build(values, ""), _build(_merged(values, new), "")
            refuse_folder_file(layer.origin, [], weakened(before, after, set(new)), files[0])
        if layer.origin is None:
            if "journal" in new:
                check_env_journal(values, new["journal"], files[0])
                new["journal_from"] = "environment"
            sources.append("environment (" + ", ".join(ENV[n] for n in new if n in ENV) + ")")
        else:
            sources.append(str(layer.origin))
            origins.update({name: str(layer.origin) for name in new})
        values = _merged(values, new)
    if "journal" not in values and (Path.cwd() / LEGACY_JOURNAL).is_file():
        check_legacy_journal(values.get("base_url"))
        values["journal"], values["journal_from"] = Path.cwd() / LEGACY_JOURNAL, "legacy"
    return values, " + ".join(sources) or "defaults", origins


def _merged(values: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """`new` over `values`; a table ([paths], [headers], [source_countries]) key by key."""
    merged = dict(values)
    for name, value in new.items():
        if isinstance(value, dict) and isinstance(merged.get(name), dict):
            merged[name] = {**merged[name], **value}
        else:
            merged[name] = value
    return merged


@dataclass
class SettingsReport:
    """What `batchpay config` shows: the files searched, the settings, and any error in them
    (with unknown names left out, so that the rest can still be shown)."""

    files: list[tuple[Path, str]]  # (path, "loaded" | "not found" | "not used: ...")
    settings: Settings
    error: ConfigError | None = None


def inspect_settings(env: dict[str, str] | None = None) -> SettingsReport:
    files = settings_files()
    listed = [(p, "loaded" if p.is_file() else "not found") for p in files]
    try:
        return SettingsReport(listed, load_settings(env, files))
    except ConfigError as exc:
        error = exc
    # what can still be shown: without unknown names; else without the folder's file;
    # else what the environment gives
    for attempt in (files, files[:1], []):
        try:
            values, source, origins = _gather(env, attempt, known_only=True)
            settings = _build(values, source, origins)
        except ConfigError:
            continue
        listed = [(p, "not used: see the error" if state == "loaded" and p not in attempt
                   else state) for p, state in listed]
        return SettingsReport(listed, settings, error)
    return SettingsReport(listed, Settings(), error)


def _read_file(path: Path) -> dict[str, Any]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(
            f"Cannot read settings file {path}: {exc}",
            hint="Fix the file (TOML syntax) or remove it.",
        ) from None
    if data.get("api_key") and os.name == "posix":
        mode = stat.S_IMODE(path.stat().st_mode)
        if mode & 0o077:
            raise ConfigError(
                f"{path} holds an API key but others can read it (mode {mode:o}).",
                hint=f"Run: chmod 600 {path}   (or set BATCHPAY_API_KEY instead).",
            )
    return data


def _build(values: dict[str, Any], source: str, origins: dict[str, str] | None = None,
           ) -> Settings:
    check_known(set(values) - {"journal_from"}, setting_names())
    kwargs: dict[str, Any] = {"source": source}
    try:
        for name, value in values.items():
            if name == "journal_from":
                kwargs[name] = value
            elif name == "paths":
                kwargs[name] = Paths(**value)
            elif name == "headers":
                kwargs[name] = Headers(**value)
            elif name == "journal":
                kwargs[name] = journal_location(value)
            elif name == "approvers_file":
                kwargs[name] = Path(value).expanduser().absolute()
            elif name == "signature_algorithms":
                kwargs[name] = tuple(str(v).lower() for v in value)
            elif name == "mail":
                kwargs[name] = mail_table(value)
            elif name == "notify":
                kwargs[name] = notify_list(value)
            elif name == "source_countries":
                kwargs[name] = {**Settings().source_countries, **value}
            elif name == "books":
                kwargs[name] = Books(**books_values(value, Books))
            else:
                kwargs[name] = checked_value(name, value)
        settings = Settings(**kwargs)
    except TypeError as exc:
        raise ConfigError(f"A setting has the wrong shape: {exc}.",
                          hint="Compare with the names and values `batchpay config` prints.",
                          ) from None
    check_ranges(settings, origins=origins)
    _check_rate_limit(settings.rate_limit)
    check_signature_algorithms(settings.signature_algorithms)
    zone(settings.time_zone)
    if settings.base_url:
        check_base_url(settings.base_url)
    for name in SECRET_NAMES:
        secret = getattr(settings, name)
        if secret is not None:
            _SECRETS.add(secret)  # first: no message, not even its own refusal, may show it
            check_secret(name, secret)
    return settings


def _check_rate_limit(text: str) -> None:
    try:
        parse_windows(text)
    except BatchpayError as exc:
        raise ConfigError(f"Setting rate_limit: {exc.message}", hint=exc.hint) from None


