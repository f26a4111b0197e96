"""Settings: defaults, then the user's ``batchpay.toml``, then the current folder's, then
environment variables.

The user's file (in the user config directory, platformdirs) and the current folder's are
merged in that order. The folder's file may set only what settings_rules.FROM_A_FOLDER
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

import dataclasses
import hashlib
import ipaddress
import os
import re
import stat
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from batchpay.days import machine_zone, zone
from batchpay.errors import BatchpayError, ConfigError
from batchpay.files import is_database_address, shown_address
from batchpay.mail_settings import MAIL_PASSWORD_ENV, Mail, mail_table
from batchpay.notify_settings import notify_list, shown_notify
from batchpay.settings_rules import (
    SECRET_NAMES,
    books_values,
    check_base_url,
    check_env_journal,
    check_known,
    check_legacy_journal,
    check_ranges,
    check_secret,
    check_signature_algorithms,
    checked_value,
    not_for_a_folder,
    refuse_folder_file,
    same_path,
    weakened,
)

SETTINGS_FILE = "batchpay.toml"
TABLES = ("paths", "headers", "source_countries", "books", "mail")  # settings written as a [table]
LEGACY_JOURNAL = Path(".batchpay") / "journal.sqlite3"  # relative to the current folder


class DatabaseURL(str):
    """A journal kept in a PostgreSQL database (`postgresql://USER@HOST/DB`) instead of a
    file: what a team on several hosts shares. Printed without its password (`shown`)."""

    @property
    def shown(self) -> str:
        return shown_address(self)


JournalLocation = Path | DatabaseURL


def journal_location(value: str | Path) -> JournalLocation:
    """A journal setting: a database address as given, a file path made absolute."""
    if isinstance(value, str) and is_database_address(value.strip()):
        return DatabaseURL(value.strip())
    return Path(value).expanduser().absolute()


def shown_journal(where: JournalLocation) -> str:
    """A journal as it may be printed: its path, or its address without the password."""
    return where.shown if isinstance(where, DatabaseURL) else str(where)


JOURNAL_FILE = "journal.sqlite3"
# where the journal path came from (Settings.journal_from), as `batchpay config` says it
JOURNAL_ORIGINS = {
    "default": "the default for this service, the same from every folder",
    "legacy": "found in ./.batchpay/ of the current folder",
    "file": "journal in your settings file",
    "environment": "BATCHPAY_JOURNAL",
    "option": "--journal",
}

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
    # a sandbox started with --client-windows: keep the provider's windows against it
    sandbox_windows: str = "X-Batchpay-Sandbox-Windows"
    signature_sha512: str = "X-Signature"
    signature_sha256: str = "X-meCash-Signature"


def mail_password(env: dict[str, str] | None = None) -> str | None:
    """The SMTP password, from the environment only; kept out of every message (`scrub`)."""
    password = (dict(os.environ) if env is None else env).get(MAIL_PASSWORD_ENV) or None
    if password is not None:
        _SECRETS.add(password)
    return password


@dataclass(frozen=True)
class Books:
    """The `[books]` table: the ledger accounts an export books each movement to.

    A payout is booked to the payee's account if `payee` names it (by recipient_name), else
    to its reason's (`reason`), else to `payable`; the wallet to `wallet[currency]`, else
    `wallet_default`. Vouchers are kept in `base_currency` (the ledger's 本位币)."""

    base_currency: str = "CNY"
    voucher_per: str = "payout"  # one voucher per payout, or per run
    voucher_word: str = "记"  # 凭证字
    preparer: str = "batchpay"  # 制单人
    wallet_default: str = "1002"  # 银行存款
    wallet: dict[str, str] = field(default_factory=dict)  # currency -> account
    payable: str = "2202"  # 应付账款
    reason: dict[str, str] = field(default_factory=dict)  # reason -> account
    payee: dict[str, str] = field(default_factory=dict)  # recipient_name -> account
    fees: str = "6603"  # 财务费用
    fx_difference: str = "6603"  # 汇兑损益 (财务费用)

    def wallet_account(self, currency: str) -> str:
        return self.wallet.get(currency, self.wallet_default)

    def payee_account(self, recipient_name: str, reason: str) -> str:
        return self.payee.get(recipient_name) or self.reason.get(reason) or self.payable


@dataclass(frozen=True)
class Settings:
    base_url: str | None = None  # None: the embedded sandbox
    api_key: str | None = field(default=None, repr=False)
    webhook_secret: str | None = field(default=None, repr=False)
    # None: the default journal of this service in the user data directory (__post_init__)
    journal: JournalLocation = None  # type: ignore[assignment]
    paths: Paths = field(default_factory=Paths)
    headers: Headers = field(default_factory=Headers)
    # accepted webhook signature algorithms, strongest first
    signature_algorithms: tuple[str, ...] = ("sha512", "sha256")
    # the provider's documented windows, kept client-side for a service that is not the sandbox
    rate_limit: str = "100/min,1000/hour,10000/day"
    # where those windows are booked, for every process and host using the key: "" = the
    # journal's database; or another journal file or postgresql:// address that several
    # journals paying with one key share (batchpay.journal.budget)
    rate_budget: str = ""
    concurrency: int = 4
    max_rps: float = 0.0
    wait_seconds: float = 60.0
    connect_timeout: float = 5.0
    read_timeout: float = 30.0
    retry_attempts: int = 6
    retry_seconds: float = 60.0
    max_file_mb: float = 50.0
    # the most a sheet may span (checked before it is parsed)
    max_rows: int = 1_000_000
    max_columns: int = 200
    max_cells: int = 10_000_000
    sync_max_pages: int = 200
    # a row paying an account the amount it was paid within this many days is HELD (0: never);
    # shorter than any month, so that last month's equal salary is not a duplicate
    repeat_window_days: int = 20
    # how far back the service's own payout list is read before paying (0: not read). A
    # payout_ref found there is never a false match, so it holds over this whole window, long
    # enough for a journal lost or rolled back and last month's sheet run again; the account
    # and amount match holds within repeat_window_days only
    service_check_days: int = 62
    # payee change control: hold payees never paid before too; keep a confirmed change held
    hold_new_payees: bool = False
    payee_change_hold_hours: float = 0.0
    # a payee change confirmed only by the person making the batch (the plan's maker) stays
    # HELD until someone else confirms it too
    payee_confirmed_by_other: bool = False
    # two-person approval: runs pay only approved plans; who may approve; how many must
    require_approval: bool = False
    approvers_file: Path | None = None
    approvals_required: int = 1
    plan_hours: float = 72.0  # a plan expires this many hours after it is made
    plan_tolerance: float = 0.02  # the total debit may exceed the plan's quotes by this share
    mail: Mail | None = None  # [mail]: remittance advices by SMTP; None: none sent
    # where notifications go: apprise URLs, each maybe `approver=URL` (batchpay.notify_settings)
    notify: tuple[str, ...] = ()
    listen_host: str = "127.0.0.1"
    listen_port: int = 8788
    source_countries: dict[str, str] = field(
        default_factory=lambda: {
            "NGN": "NG", "USD": "US", "MWK": "MW", "GBP": "GB", "EUR": "DE",
            "KES": "KE", "GHS": "GH", "ZAR": "ZA", "XOF": "SN", "XAF": "CM",
            "UGX": "UG", "TZS": "TZ", "RWF": "RW", "ZMW": "ZM", "EGP": "EG",
        }
    )
    # whose days a statement, an export and a reconciliation count in (IANA name)
    time_zone: str = field(default_factory=machine_zone)
    books: Books = field(default_factory=Books)
    source: str = "defaults"  # where the settings came from, for `batchpay config`
    # where the journal path came from: default | legacy | file | environment | option
    journal_from: str = "default"

    def __post_init__(self) -> None:
        if self.journal is None:
            object.__setattr__(self, "journal", default_journal(self.base_url))

    @property
    def journal_name(self) -> str:
        """The journal as runs, plans and messages name it: its absolute path, or its
        database address without the password."""
        return shown_journal(self.journal)

    @property
    def local_folder(self) -> Path:
        """This host's folder for the journal's companions (the bank list cache, the
        embedded sandbox's state, the console's files): beside a journal file; for a
        journal in a database, the service's folder in the user data directory."""
        if isinstance(self.journal, DatabaseURL):
            return default_journal(self.base_url).parent
        return self.journal.parent

    def journal_exists(self) -> bool:
        """Whether there is a journal to read (a database's is its server's to keep)."""
        return isinstance(self.journal, DatabaseURL) or self.journal.is_file()

    @property
    def embedded(self) -> bool:
        return not self.base_url

    def banner_lines(self) -> list[str]:
        """What every run and sync says first: the settings files loaded, then the journal."""
        return [f"Settings: {self.source}", *self.journal_lines()]

    def journal_lines(self) -> list[str]:
        """The journal's absolute path, and for one found in ./.batchpay/ one line on how to
        use it from any folder."""
        lines = [f"Journal: {shown_journal(self.journal)}"]
        if self.journal_from == "legacy":
            home = default_journal(self.base_url).parent
            lines.append(f"This journal is in ./.batchpay/ of the current folder: to use it "
                         f"from any folder, move .batchpay/* to {home}/ or set "
                         f"BATCHPAY_JOURNAL={self.journal}")
        return lines

    @property
    def key_fingerprint(self) -> str:
        return fingerprint(self.api_key)

    def with_options(self, **overrides: Any) -> Settings:
        """A copy with the command-line options that were given (None means not given)."""
        given = {k: v for k, v in overrides.items() if v is not None}
        if "journal" in given:
            given["journal"] = journal_location(given["journal"])
            given["journal_from"] = "option"
        settings = dataclasses.replace(self, **given)
        # click checks each option's own range; not a NaN or an infinity (`--max-rps nan`)
        check_ranges(settings, set(given), label=lambda name: "--" + _OPTIONS.get(
            name, name.replace("_", "-")))
        return settings

    def public_items(self) -> list[tuple[str, str]]:
        """Every effective setting as text, the key and secret as fingerprints only."""
        items: list[tuple[str, str]] = [
            ("base_url", self.base_url or "embedded sandbox"),
            ("api_key", self.key_fingerprint),
            ("webhook_secret", fingerprint(self.webhook_secret)),
            ("journal", shown_journal(self.journal)),
        ]
        for f in dataclasses.fields(self):
            if f.name in {"base_url", "api_key", "webhook_secret", "journal", *_NOT_SETTINGS}:
                continue
            value = getattr(self, f.name)
            if dataclasses.is_dataclass(value):
                for sub in dataclasses.fields(value):
                    key = "from" if sub.name == "sender" else sub.name  # [mail] from
                    items.append((f"{f.name}.{key}", str(getattr(value, sub.name))))
            elif isinstance(value, dict):
                items.append((f.name, ", ".join(f"{k}={v}" for k, v in value.items())))
            elif f.name == "notify":  # a URL may hold a password
                items.append((f.name, shown_notify(value)))
            elif isinstance(value, tuple):
                items.append((f.name, ", ".join(value)))
            elif f.name == "rate_budget":  # an address, printed without its password
                items.append((f.name, shown_journal(journal_location(value)) if value.strip()
                              else "the journal's database"))
            else:
                items.append((f.name, str(value)))
        items.append(("loaded_from", self.source))
        return items


def fingerprint(secret: str | None) -> str:
    """A short, stable, non-reversible name for a secret: safe to print and to file."""
    if not secret:
        return "(not set)"
    return "sha256:" + hashlib.sha256(secret.encode()).hexdigest()[:12]


def default_journal(base_url: str | None) -> Path:
    """The journal of a service when none is chosen: the same from every folder."""
    from platformdirs import user_data_dir

    return Path(user_data_dir("batchpay")) / "journals" / service_folder(base_url) / JOURNAL_FILE


def service_folder(base_url: str | None) -> str:
    """`embedded`, or a readable slug of the base URL and a short hash of it (two URLs that
    slug the same still get two journals)."""
    if not base_url:
        return "embedded"
    url = base_url.rstrip("/")
    readable = re.sub(r"^[a-z]+://", "", url.lower())
    slug = re.sub(r"[^a-z0-9.]+", "-", readable).strip("-.")[:48] or "service"
    return f"{slug}-{hashlib.sha256(url.encode()).hexdigest()[:8]}"


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
    folder: bool = False  # a folder's file: sets only what settings_rules.FROM_A_FOLDER allows


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


_NOT_SETTINGS = ("source", "journal_from")  # fields of Settings that no file may set


def setting_names() -> set[str]:
    """Every name a settings file may hold: the fields of Settings (so a new field is one)."""
    return {f.name for f in dataclasses.fields(Settings)} - set(_NOT_SETTINGS)


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
    from batchpay.provider.pacing import parse_windows

    try:
        parse_windows(text)
    except BatchpayError as exc:
        raise ConfigError(f"Setting rate_limit: {exc.message}", hint=exc.hint) from None


_OPTIONS = {"wait_seconds": "wait"}  # a setting's option, where its name differs
_SECRETS: set[str] = set()  # every secret loaded, so that no message can show it


def is_loopback_host(host: str) -> bool:
    """`localhost` or a loopback address (127.0.0.0/8, ::1): this machine only."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def scrub(text: str) -> str:
    """`text` with every form of every loaded secret cut out (as typed, trimmed, and as
    Python would print it in an error: `'key\\n'`, `b'key\\n'`)."""
    for secret in _SECRETS:
        forms = {secret, secret.strip(), repr(secret)[1:-1], repr(secret.encode())[2:-1]}
        for form in sorted((f for f in forms if len(f) >= 4), key=len, reverse=True):
            text = text.replace(form, "[secret]")
    return text
