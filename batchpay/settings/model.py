"""What the settings are: the `Settings` value every part reads, its tables (`Books`,
`Mail`), where a journal lives and how it is shown, the range of every number, and the
secrets no message may show.

This module knows nothing of files or the environment (`settings.load` reads them) nor of
what a folder's file may set (`settings.rules`): a `Settings` made in a test is the same
value a loaded one is.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import ipaddress
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from batchpay.days import machine_zone
from batchpay.errors import ConfigError
from batchpay.files import fingerprint, is_database_address, shown_address
from batchpay.provider.endpoints import Headers, Paths
from batchpay.settings.notify import shown_notify

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
class Mail:
    """The `[mail]` table: the SMTP server remittance advices go through. No password here:
    it is read from BATCHPAY_MAIL_PASSWORD when a mail is sent (`mail_password`)."""

    host: str
    sender: str  # `from` in the file: the advice's From address
    port: int = 587
    security: str = "starttls"  # starttls | ssl | none (none: this machine's server only)
    user: str | None = None
    payer: str | None = None  # the payer's name on the advice (default: the From address)
    attempts: int = 3  # tries of one advice per `advise`, with backoff between them
    retry_seconds: float = 30.0  # and at most this long trying one advice
    timeout: float = 30.0
    font: Path | None = None  # a CJK font file (default: found with fc-list)


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
    # where notifications go: apprise URLs, each maybe `approver=URL` (batchpay.settings.notify)
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


_NOT_SETTINGS = ("source", "journal_from")  # fields of Settings that no file may set


def setting_names() -> set[str]:
    """Every name a settings file may hold: the fields of Settings (so a new field is one)."""
    return {f.name for f in dataclasses.fields(Settings)} - set(_NOT_SETTINGS)


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
    return Settings(journal=Path("journal.sqlite3"))


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
