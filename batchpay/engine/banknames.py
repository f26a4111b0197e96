"""Bank names checked against the service's bank directory: a near miss becomes a warning.

The service pays by account number; ``bank_name`` is what its bank matches the account
against, so a name the directory does not know ("中国工商" for "中国工商银行") is worth a
look before money moves, but never a reason to refuse the row: the directory may lag
behind the banks it pays. Each miss becomes a row *warning* with the closest names.

The list is fetched once per (country, currency) and per day, and cached as
``banks-<COUNTRY>-<CURRENCY>-<date>.json`` beside the journal. A destination the directory
does not cover (the service answers 400) or a service that cannot be reached is said
once, as a note, and the rows are left as they are.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import difflib
import json
import os
import unicodedata
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from batchpay import clock
from batchpay.engine.budget import shared_budget
from batchpay.errors import BatchpayError
from batchpay.files import private_dir, write_private
from batchpay.provider.errors import AuthError, ProviderError, RequestRejected
from batchpay.provider.models import Bank
from batchpay.service import Opener, Service
from batchpay.settings.model import Settings

if TYPE_CHECKING:
    from batchpay.sheet.validate import Validation

# the list of bank names for (country, currency); raises ProviderError like PayoutClient.banks
BankFetcher = Callable[[str, str], Awaitable[list[str]]]


@runtime_checkable
class BankSource(Protocol):
    """What lists banks: a ``PayoutClient``, or a test's stand-in."""

    async def banks(self, country: str, currency: str) -> list[Bank]: ...


Pair = tuple[str, str]
CLOSEST = 3
CUTOFF = 0.6  # difflib's default: "中国工商" vs "中国工商银行" scores 0.8


@dataclass
class BankCheck:
    """What the check found: warnings by position in ``validation.rows``, and notes."""

    warnings: dict[int, list[str]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    requests: int = 0  # lists fetched from the service (not from the cache)
    checked: list[Pair] = field(default_factory=list)  # pairs whose list was available

    def apply(self, validation: Validation) -> None:
        """Append the warnings to the rows (``RowCheck.warnings``); the rows stay VALID."""
        for position, messages in self.warnings.items():
            validation.rows[position].warnings.extend(messages)


def row_pairs(validation: Validation) -> list[Pair | None]:
    """(country, currency) of each VALID row's recipient, None for an INVALID row."""
    return [(r.payout.country, r.payout.currency) if r.payout is not None else None
            for r in validation.rows]


def fetcher_for(client: BankSource) -> BankFetcher:
    """A fetcher over an async ``PayoutClient`` (anything with ``banks(country, currency)``)."""

    async def fetch(country: str, currency: str) -> list[str]:
        return [bank.bank_name for bank in await client.banks(country, currency)]

    return fetch


async def check_bank_names(validation: Validation, pairs: Sequence[Pair | None],
                           fetch: BankFetcher | BankSource, *, cache_dir: Path | None = None,
                           service: str = "", today: date | None = None) -> BankCheck:
    """Compare each row's bank_name with the directory of its (country, currency).

    ``fetch`` is a ``BankFetcher`` or an async client with ``banks``; ``cache_dir`` (the
    journal's folder) keeps one list per pair and day for ``service`` (the journal's
    service identity, so that two services never share a cached list).
    """
    fetcher = fetcher_for(fetch) if isinstance(fetch, BankSource) else fetch
    cache = _Cache(cache_dir, service, today or clock.now().date())
    result = BankCheck()
    lists: dict[Pair, list[str] | None] = {}
    reachable = True
    for pair in dict.fromkeys(p for p in pairs if p is not None):
        names = cache.get(pair)
        if names is None and reachable:
            result.requests += 1
            try:
                names = await fetcher(*pair)
            except AuthError as exc:
                reachable = False
                result.notes.append(f"Bank names not checked: the service refused the key "
                                    f"({exc.message}).")
            except RequestRejected:
                names = []  # the directory does not cover this destination
            except ProviderError as exc:
                reachable = False  # one failure is enough: no request for the other pairs
                result.notes.append(f"Bank names not checked: could not get the service's "
                                    f"bank list ({exc.message}).")
            if names is not None:
                cache.put(pair, names)
        lists[pair] = names
        if names == []:
            result.notes.append(f"Bank names not checked for {pair[0]}/{pair[1]}: the service "
                                "has no bank list for that destination.")
        elif names is not None:
            result.checked.append(pair)
    for position, (check, row_pair) in enumerate(zip(validation.rows, pairs, strict=True)):
        names = lists.get(row_pair) if row_pair is not None else None
        bank_name = check.payout.bank_name if check.payout is not None else None
        if row_pair is None or not names or not bank_name:
            continue
        message = bank_name_warning(bank_name, names, row_pair)
        if message:
            result.warnings[position] = [message]
    return result


async def add_bank_warnings(validation: Validation, client: BankSource, *, cache_dir: Path | None,
                            service: str) -> list[str]:
    """Check every VALID row's bank_name, put the misses into the rows' warnings; the notes."""
    check = await check_bank_names(validation, row_pairs(validation), client,
                                   cache_dir=cache_dir, service=service)
    check.apply(validation)
    return check.notes


def check_sheet_bank_names(validation: Validation, settings: Settings, connect: Opener) -> list[str]:
    """`batchpay validate`'s check, on the service `connect` opens when today's cached bank
    directory does not have every pair.

    A sheet can be validated offline: a service that cannot be used is one note, never an
    error, and the attempt is kept short (two tries, five seconds).
    """
    from batchpay.provider.client import PayoutClient
    from batchpay.service import EMBEDDED

    pairs = row_pairs(validation)
    wanted = {p for p in pairs if p is not None}
    if not wanted:
        return []
    identity = EMBEDDED if settings.embedded else str(settings.base_url).rstrip("/")
    cache_dir = settings.local_folder
    cache = _Cache(cache_dir, identity, clock.now().date())
    if all(cache.get(pair) is not None for pair in wanted):  # no service needed today

        async def cached_only() -> list[str]:
            check = await check_bank_names(validation, pairs, _cache_miss,
                                           cache_dir=cache_dir, service=identity)
            check.apply(validation)
            return check.notes

        return asyncio.run(cached_only())
    quick = dataclasses.replace(settings, retry_attempts=min(settings.retry_attempts, 2),
                                retry_seconds=min(settings.retry_seconds, 5.0))
    try:
        with connect() as service:

            async def fetched() -> list[str]:
                async with PayoutClient.from_settings(
                        quick, base_url=service.base_url, api_key=service.api_key,
                        shared=shared_budget(quick, service.api_key,
                                             embedded=service.embedded)) as client:
                    return await add_bank_warnings(validation, client, cache_dir=cache_dir,
                                                   service=service.identity)

            return asyncio.run(fetched())
    except BatchpayError as exc:
        return [f"Bank names not checked: {exc.message}"]


@dataclass(frozen=True)
class BankDirectory:
    """`batchpay banks`' answer: the service's banks for a country and currency."""

    country: str
    currency: str
    banks: list[Bank]
    sandbox: bool  # the service answered as a sandbox (embedded or at a configured URL)


def list_banks(settings: Settings, country: str, currency: str, connect: Opener, *,
               on_sandbox: Callable[[], None] = lambda: None) -> BankDirectory:
    """The bank directory of (country, currency) from the service `connect` opens.

    `on_sandbox` is called once, as soon as the service is known to be a sandbox: for the
    embedded one before the request (so that an error after it is known to be the
    sandbox's), for a service at a configured URL when it answers as one.
    """
    from batchpay.provider.client import PayoutClient

    country, currency = country.strip().upper(), currency.strip().upper()

    async def fetch(service: Service) -> tuple[list[Bank], bool]:
        async with PayoutClient.from_settings(
                settings, base_url=service.base_url, api_key=service.api_key,
                shared=shared_budget(settings, service.api_key,
                                     embedded=service.embedded)) as client:
            return await client.banks(country, currency), bool(client.is_sandbox)

    with connect() as service:
        if service.embedded:
            on_sandbox()
        found, sandbox = asyncio.run(fetch(service))
    if sandbox and not service.embedded:
        on_sandbox()
    return BankDirectory(country, currency, found, sandbox or service.embedded)


async def _cache_miss(country: str, currency: str) -> list[str]:
    raise ProviderError(f"no cached bank list for {country}/{currency}")


# The English names and abbreviations operators write for China's larger banks, whose
# directory names are Chinese: recognized, and the directory's name suggested.
ALIASES: dict[str, tuple[str, ...]] = {
    "中国工商银行": ("ICBC", "Industrial and Commercial Bank of China"),
    "中国建设银行": ("CCB", "China Construction Bank"),
    "中国农业银行": ("ABC", "Agricultural Bank of China"),
    "中国银行": ("BOC", "Bank of China"),
    "交通银行": ("BOCOM", "BCM", "Bank of Communications"),
    "招商银行": ("CMB", "China Merchants Bank"),
    "中国邮政储蓄银行": ("PSBC", "Postal Savings Bank of China"),
    "中信银行": ("CITIC", "China CITIC Bank"),
    "中国民生银行": ("CMBC", "China Minsheng Bank"),
    "兴业银行": ("CIB", "Industrial Bank"),
    "上海浦东发展银行": ("SPDB", "Shanghai Pudong Development Bank"),
    "中国光大银行": ("CEB", "China Everbright Bank"),
    "平安银行": ("Ping An Bank",),
    "华夏银行": ("Hua Xia Bank",),
    "广发银行": ("CGB", "China Guangfa Bank"),
}


def bank_name_warning(bank_name: str, names: Sequence[str], pair: Pair) -> str | None:
    """None when the name is in the list (ignoring case, width and spacing), else the warning."""
    by_key = {_key(name): name for name in names}
    if _key(bank_name) in by_key:
        return None
    meant = _ALIAS_OF.get(_key(bank_name))
    if meant is not None and _key(meant) in by_key:
        return (f"bank_name: {bank_name} is {by_key[_key(meant)]} in the service's bank list "
                f"for {pair[0]}/{pair[1]}; write {by_key[_key(meant)]}, the name its bank "
                "matches the account against")
    close = difflib.get_close_matches(_key(bank_name), list(by_key), n=CLOSEST, cutoff=CUTOFF)
    where = f"bank_name: {bank_name} is not in the service's bank list for {pair[0]}/{pair[1]}"
    if not close:
        return (f"{where}; check the name against `batchpay banks --country {pair[0]} "
                f"--currency {pair[1]}`")
    suggestions = [by_key[k] for k in close]
    shown = (suggestions[0] if len(suggestions) == 1
             else ", ".join(suggestions[:-1]) + " or " + suggestions[-1])
    return f"{where}; did you mean {shown}?"


def _key(name: str) -> str:
    """Full-width letters, case and spacing do not make another bank."""
    return "".join(unicodedata.normalize("NFKC", name).casefold().split())


_ALIAS_OF = {_key(alias): name for name, aliases in ALIASES.items() for alias in aliases}


class _Cache:
    """One JSON file per pair and day; a file that cannot be read or written is no cache."""

    def __init__(self, folder: Path | None, service: str, today: date) -> None:
        self.folder, self.service, self.today = folder, service, today.isoformat()

    def _path(self, pair: Pair) -> Path | None:
        if self.folder is None:
            return None
        return self.folder / f"banks-{_safe(pair[0])}-{_safe(pair[1])}-{self.today}.json"

    def get(self, pair: Pair) -> list[str] | None:
        path = self._path(pair)
        if path is None or not path.is_file():
            return None
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or data.get("service") != self.service:
            return None
        names = data.get("banks")
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            return None
        return names

    def put(self, pair: Pair, names: list[str]) -> None:
        path = self._path(pair)
        if path is None:
            return
        document = {"service": self.service, "country": pair[0], "currency": pair[1],
                    "date": self.today, "banks": names}
        with contextlib.suppress(OSError):  # only a cache: the next run asks again
            private_dir(path.parent)
            partial = path.with_name(f"~{path.name}.{os.getpid()}")
            write_private(partial, json.dumps(document, ensure_ascii=False).encode("utf-8"))
            os.replace(partial, path)
            # yesterday's lists of this pair are stale: keep the folder small
            for old in path.parent.glob(f"banks-{_safe(pair[0])}-{_safe(pair[1])}-*.json"):
                if old != path:
                    old.unlink(missing_ok=True)


def _safe(code: str) -> str:
    return "".join(ch for ch in code.upper() if ch.isalnum()) or "_"
