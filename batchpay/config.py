"""Settings: defaults, then ``batchpay.toml``, then environment variables.

The file is looked for in the current directory, then in the user config directory
(platformdirs). Environment variables override it. The API key is never a command-line
option and never printed: ``fingerprint`` is what messages, logs and workbooks show.
The key may live in the file only when the file is readable by its owner alone.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import stat
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from batchpay.errors import ConfigError

SETTINGS_FILE = "batchpay.toml"

ENV = {
    "base_url": "BATCHPAY_BASE_URL",
    "api_key": "BATCHPAY_API_KEY",
    "webhook_secret": "BATCHPAY_WEBHOOK_SECRET",
    "journal": "BATCHPAY_JOURNAL",
}


@dataclass(frozen=True)
class Paths:
    """Endpoint paths; provider.md's values are the defaults, a real account may differ."""

    bank: str = "/v1/bank"
    quote: str = "/v1/quote"
    quote_item: str = "/v1/quote/{id}"
    payout: str = "/v2/payout"
    transaction: str = "/v1/transaction/{id}"
    transactions: str = "/v1/transaction"
    wallet: str = "/v1/wallet"


@dataclass(frozen=True)
class Headers:
    api_key: str = "X-API-KEY"
    sandbox: str = "X-Batchpay-Sandbox"
    signature_sha512: str = "X-Signature"
    signature_sha256: str = "X-meCash-Signature"


@dataclass(frozen=True)
class Settings:
    base_url: str | None = None  # None: the embedded sandbox
    api_key: str | None = field(default=None, repr=False)
    webhook_secret: str | None = field(default=None, repr=False)
    journal: Path = Path(".batchpay/journal.sqlite3")
    paths: Paths = field(default_factory=Paths)
    headers: Headers = field(default_factory=Headers)
    # accepted webhook signature algorithms, strongest first
    signature_algorithms: tuple[str, ...] = ("sha512", "sha256")
    # the provider's documented windows, kept client-side for a service that is not the sandbox
    rate_limit: str = "100/min,1000/hour,10000/day"
    concurrency: int = 4
    max_rps: float = 0.0
    wait_seconds: float = 60.0
    connect_timeout: float = 5.0
    read_timeout: float = 30.0
    retry_attempts: int = 6
    retry_seconds: float = 60.0
    max_file_mb: float = 50.0
    sync_max_pages: int = 200
    listen_host: str = "127.0.0.1"
    listen_port: int = 8788
    source_countries: dict[str, str] = field(
        default_factory=lambda: {
            "NGN": "NG", "USD": "US", "MWK": "MW", "GBP": "GB", "EUR": "DE",
            "KES": "KE", "GHS": "GH", "ZAR": "ZA", "XOF": "SN", "XAF": "CM",
            "UGX": "UG", "TZS": "TZ", "RWF": "RW", "ZMW": "ZM", "EGP": "EG",
        }
    )
    source: str = "defaults"  # where the settings came from, for `batchpay config`

    @property
    def embedded(self) -> bool:
        return not self.base_url

    @property
    def key_fingerprint(self) -> str:
        return fingerprint(self.api_key)

    def with_options(self, **overrides: Any) -> Settings:
        """A copy with the command-line options that were given (None means not given)."""
        given = {k: v for k, v in overrides.items() if v is not None}
        if "journal" in given:
            given["journal"] = Path(given["journal"])
        return dataclasses.replace(self, **given)

    def public_items(self) -> list[tuple[str, str]]:
        """Every effective setting as text, the key and secret as fingerprints only."""
        items: list[tuple[str, str]] = [
            ("base_url", self.base_url or "embedded sandbox"),
            ("api_key", self.key_fingerprint),
            ("webhook_secret", fingerprint(self.webhook_secret)),
            ("journal", str(self.journal)),
        ]
        for f in dataclasses.fields(self):
            if f.name in {"base_url", "api_key", "webhook_secret", "journal", "source"}:
                continue
            value = getattr(self, f.name)
            if dataclasses.is_dataclass(value):
                for sub in dataclasses.fields(value):
                    items.append((f"{f.name}.{sub.name}", str(getattr(value, sub.name))))
            elif isinstance(value, dict):
                items.append((f.name, ", ".join(f"{k}={v}" for k, v in value.items())))
            elif isinstance(value, tuple):
                items.append((f.name, ", ".join(value)))
            else:
                items.append((f.name, str(value)))
        items.append(("loaded_from", self.source))
        return items


def fingerprint(secret: str | None) -> str:
    """A short, stable, non-reversible name for a secret: safe to print and to file."""
    if not secret:
        return "(not set)"
    return "sha256:" + hashlib.sha256(secret.encode()).hexdigest()[:12]


def settings_files() -> list[Path]:
    from platformdirs import user_config_dir

    return [Path.cwd() / SETTINGS_FILE, Path(user_config_dir("batchpay")) / SETTINGS_FILE]


def load_settings(env: dict[str, str] | None = None, files: list[Path] | None = None) -> Settings:
    """Defaults, overridden by the first settings file found, overridden by the environment."""
    env = dict(os.environ) if env is None else env
    values: dict[str, Any] = {}
    source = "defaults"
    for path in settings_files() if files is None else files:
        if path.is_file():
            values = _read_file(path)
            source = str(path)
            break
    from_env = {name: env[var] for name, var in ENV.items() if env.get(var)}
    if from_env:
        values.update(from_env)
        source = f"{source} + environment"
    return _build(values, source)


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


def _build(values: dict[str, Any], source: str) -> Settings:
    known = {f.name for f in dataclasses.fields(Settings)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise ConfigError(
            f"Unknown setting(s): {', '.join(unknown)}.",
            hint="See `batchpay config` for the names batchpay knows.",
        )
    kwargs: dict[str, Any] = {"source": source}
    try:
        for name, value in values.items():
            if name == "paths":
                kwargs[name] = Paths(**value)
            elif name == "headers":
                kwargs[name] = Headers(**value)
            elif name == "journal":
                kwargs[name] = Path(value)
            elif name == "signature_algorithms":
                kwargs[name] = tuple(str(v).lower() for v in value)
            elif name == "source_countries":
                kwargs[name] = {**Settings().source_countries, **value}
            else:
                kwargs[name] = _checked(name, value)
        settings = Settings(**kwargs)
    except TypeError as exc:
        raise ConfigError(f"A setting has the wrong shape: {exc}.",
                          hint="Compare with the names and values `batchpay config` prints.",
                          ) from None
    for algo in settings.signature_algorithms:
        if algo not in {"sha512", "sha256"}:
            raise ConfigError(f"Unknown signature algorithm {algo!r}: use sha512 and/or sha256.")
    if settings.base_url and not settings.base_url.startswith(("http://", "https://")):
        raise ConfigError(f"base_url must start with https:// (got {settings.base_url!r}).",
                          hint="Set it to the service's address, e.g. https://api.example.com.")
    return settings


_DEFAULTS = Settings()


def _checked(name: str, value: Any) -> Any:
    """A number where a number belongs: `concurrency = "four"` is refused here, not mid-run."""
    default = getattr(_DEFAULTS, name)
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
        raise ConfigError(f"Setting {name} = {value!r} is not a valid {_KIND.get(kind, kind)}.",
                          hint=f"Fix {name} in batchpay.toml (default: {default}).")
    return value


_KIND = {"int": "whole number", "float": "number", "str": "text"}
