"""The key of the journal's hash chain, kept outside the journal file.

An unkeyed chain proves only that events link up: whoever removes events from the file
can recompute every hash after them, and the chain checks out again. Keyed (HMAC-SHA256),
recomputing it takes the key too, which lives in the user's own data folder (0600), not
in the journal: a journal copied, edited and put back, or edited by anyone who does not
hold the key, fails `batchpay verify`.

One key per user (`chain.key` in the user data folder, or the file BATCHPAY_CHAIN_KEY
names); the journal's `meta` table records the key's id and the first event it keys.
A journal written by two users (a shared folder) needs the same key file in both users'
folders. Whoever can read the key can still rewrite the chain: the service's own payout
list, checked before each payment (engine.service_ledger), is the guard that does not
depend on the file.

A key that could be taken off would protect nothing: delete the `meta` rows and recompute
every hash unkeyed, and the chain checks out again. So a journal that was ever keyed never
verifies unkeyed, nor keyed from a later event than it was. Three records say it was keyed,
and an attacker without the key must erase all three:
  - in the chain itself, a `chain.keyed` event (the key's id, the first event it keys),
    written with the first keyed event (or, for a journal keyed before these events
    existed, with its next event), and the key's id in every `run.started` event;
  - beside the key file, outside the journal, the list of journals it keys
    (`chain.key.journals`: the journal's real path, the key's id, the first keyed event).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from batchpay.errors import JournalError
from batchpay.files import is_database_address, private_dir, write_private
from batchpay.journal import event_kinds as kinds
from batchpay.journal.records import GENESIS, ChainCheck, ChainKey, walk_chain

if TYPE_CHECKING:
    from batchpay.journal.store_api import Connection

KEY_FILE = "chain.key"
KEY_ENV = "BATCHPAY_CHAIN_KEY"
MARKER = kinds.CHAIN_KEYED  # the event that says, inside the chain, which key keys it from where
NAMES_KEY = kinds.RUN_STARTED  # events whose data carry the key's id as `chain_key`


def key_path() -> Path:
    named = os.environ.get(KEY_ENV)
    if named:
        return Path(named)
    from platformdirs import user_data_dir

    return Path(user_data_dir("batchpay")) / KEY_FILE


def key_id(key: bytes) -> str:
    """A public name of a key (not the key): its SHA-256's first 16 hex digits."""
    return hashlib.sha256(b"batchpay chain key\0" + key).hexdigest()[:16]


def load_key() -> bytes | None:
    path = key_path()
    try:
        text = path.read_text(encoding="ascii").strip()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise JournalError(f"Cannot read the journal's chain key {path}: {exc}.",
                           hint="It must be the 64 hex digits batchpay wrote there.") from None
    try:
        key = bytes.fromhex(text)
    except ValueError:
        key = b""
    if len(key) != 32:
        raise JournalError(f"The journal's chain key {path} is not a batchpay key.",
                           hint="Restore it from the copy you kept, or remove it to start "
                           "a new key (journals keyed with the old one then fail verify).")
    return key


def ensure_key() -> bytes:
    """The user's key, made (32 random bytes, 0600) the first time a journal needs one."""
    key = load_key()
    if key is not None:
        return key
    path = key_path()
    private_dir(path.parent)
    key = secrets.token_bytes(32)
    draft = path.with_name(f".{path.name}.{secrets.token_hex(4)}")
    write_private(draft, key.hex().encode("ascii") + b"\n")
    try:
        os.link(draft, path)  # whole or not at all, and never over another batchpay's key
    except FileExistsError:
        key = load_key() or key
    finally:
        draft.unlink()
    return key


def host_key(*, make: bool = False) -> bytes | None:
    """This host's chain key (None: no key file), made first when `make` and there is none.
    Besides keying journals, it is the secret every host of a team already holds: what else
    the team keeps in its database under a key of the hosts' (the console's signing keys)
    is sealed with a key derived from it, never with the chain key itself."""
    return ensure_key() if make else load_key()


def registry_path() -> Path:
    """The list of journals the user's key keys, beside the key file."""
    path = key_path()
    return path.with_name(path.name + ".journals")


@dataclass(frozen=True)
class KeyedJournal:
    """One line of the key's list: the journal at `journal` is keyed with `key` from event
    `keyed_from` on."""

    journal: str
    key: str
    keyed_from: int


def registered(journal: str) -> KeyedJournal | None:
    """The latest line of the key's list about the journal at `journal` (a real path)."""
    path = registry_path()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise JournalError(f"Cannot read the list of keyed journals {path}: {exc}.",
                           hint="It is the list batchpay keeps beside its chain key; "
                           "restore it from the copy you kept with the key.") from None
    found = None
    for line in text.splitlines():
        try:
            entry = json.loads(line)
            if entry["journal"] == journal:
                found = KeyedJournal(journal, str(entry["key"]), int(entry["from"]))
        except (ValueError, TypeError, KeyError):
            continue  # a line cut short by a crash says nothing
    return found


def register(entry: KeyedJournal) -> None:
    """Add a line to the key's list (appended whole: lines of concurrent writers never mix)."""
    path = registry_path()
    line = json.dumps({"journal": entry.journal, "key": entry.key, "from": entry.keyed_from},
                      ensure_ascii=False) + "\n"
    try:
        private_dir(path.parent)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line.encode("utf-8"))
        finally:
            os.close(fd)
    except OSError as exc:
        raise JournalError(f"Cannot write the list of keyed journals {path}: {exc}.",
                           hint="It lives beside the chain key: check that folder's free "
                           "space and permissions.") from None


@dataclass
class _KeyNames:
    """What the events walked say about the chain's key: (seq, kind, key id, first keyed
    event or None) of each event that names it, and the last event's seq."""

    named: list[tuple[int, str, str, int | None]] = field(default_factory=list)
    last: int = 0

    def watch(self, events: Iterable[Mapping[str, Any]]) -> Iterator[Mapping[str, Any]]:
        for event in events:
            self.last = int(event["seq"])
            if event["kind"] in (MARKER, NAMES_KEY):
                try:
                    data = json.loads(event["data"])
                except ValueError:
                    data = {}
                data = data if isinstance(data, dict) else {}
                if event["kind"] == MARKER and data.get("key"):
                    self.named.append((self.last, MARKER, str(data["key"]),
                                       int(data.get("keyed_from") or 0)))
                elif event["kind"] == NAMES_KEY and data.get("chain_key"):
                    self.named.append((self.last, NAMES_KEY, str(data["chain_key"]), None))
            yield event


class JournalChainKey:
    """Which key one journal's chain is keyed with, as its `meta` table records it: the
    key's id and the first event it keys. None until the first keyed event is written (or
    `reread` finds one); an in-memory journal is never keyed (no file anyone could copy or
    edit)."""

    def __init__(self, db: Connection, path: Path | str | None) -> None:
        self._db = db
        self._path = path
        # the journal's real path, as the key's list names it (every spelling, one journal);
        # a journal in a database: its address (without a password), whatever the folder
        self._real: str = ("" if path is None else str(path) if is_database_address(path)
                           else os.path.realpath(path))
        self.keyed: tuple[str, int] | None = None  # (the key's id, the first keyed seq)
        # the key found for writing, by its id: read from its file once per journal opened,
        # not once per event (a key's id names exactly one key)
        self._writing_key: tuple[str, bytes] | None = None
        self._marked = False  # the chain holds its chain.keyed event (meta chain_marker)

    def reread(self) -> None:
        """What `meta` says now (after a rollback, a key noted in it is undone)."""
        rows = dict(self._db.execute(
            "SELECT key, value FROM meta WHERE key IN "
            "('chain_key', 'chain_keyed_from', 'chain_marker')"))
        self.keyed = None if "chain_key" not in rows else (
            rows["chain_key"], int(rows.get("chain_keyed_from") or 1))
        self._marked = "chain_marker" in rows

    def for_writing(self, seq: int) -> bytes | None:
        """The key for event `seq`: the journal's chain key; a file journal not keyed yet
        (new, or written before chains were keyed) is keyed from this event on. Runs inside
        the transaction that writes the event, so the key noted here is undone with it."""
        if self._path is None:
            return None
        if self.keyed is None:
            self.reread()  # keyed meanwhile through another connection?
        if self.keyed is None:
            key = ensure_key()
            self._db.executemany("INSERT INTO meta VALUES (?, ?) ON CONFLICT (key) "
                                 "DO UPDATE SET value = excluded.value",
                                 [("chain_key", key_id(key)), ("chain_keyed_from", str(seq))])
            self.keyed = (key_id(key), seq)
            # noted before the commit: undone with a rollback, the line names an event the
            # journal never reaches, which `check` ignores
            register(KeyedJournal(self._real, key_id(key), seq))
            return key
        if self._writing_key is not None and self._writing_key[0] == self.keyed[0]:
            return self._writing_key[1] if seq >= self.keyed[1] else None
        found = self._key_at_hand()
        if found is None:
            raise JournalError(f"The journal {self._path} is keyed with chain key "
                               f"{self.keyed[0]}, which is not the key in {key_path()}.",
                               hint="Copy the key file of the user who wrote this journal "
                               "there (0600), or use your own journal.")
        self._writing_key = (self.keyed[0], found)
        return found if seq >= self.keyed[1] else None

    def marker_due(self) -> dict[str, Any] | None:
        """The data of the chain.keyed event when the chain does not hold it yet (keyed just
        now, or keyed before these events existed): the store writes it before its event."""
        if self.keyed is None or self._marked:
            return None
        # written meanwhile through another connection (a listener, a sync)?
        self._marked = self._db.execute(
            "SELECT 1 FROM meta WHERE key = 'chain_marker'").fetchone() is not None
        if self._marked:
            return None
        return {"key": self.keyed[0], "keyed_from": self.keyed[1]}

    def marked(self, seq: int) -> None:
        """The chain.keyed event was written as event `seq` (in the same transaction)."""
        self._db.execute("INSERT INTO meta VALUES ('chain_marker', ?) "
                         "ON CONFLICT (key) DO UPDATE SET value = excluded.value", (str(seq),))
        self._marked = True

    def key_name(self) -> str | None:
        """The key's id, for the events that name it (`run.started`)."""
        return self.keyed[0] if self.keyed is not None else None

    def _key_at_hand(self) -> bytes | None:
        """The user's key file's key, when it is the one this chain is keyed with."""
        assert self.keyed is not None
        found = load_key()
        return found if found is not None and key_id(found) == self.keyed[0] else None

    def check(self, events: Iterable[Mapping[str, Any]], head: str | None) -> ChainCheck:
        """The chain of `events` walked with this journal's key (`walk_chain`); a keyed
        chain without its key at hand fails, saying whose key it needs; a chain that was
        keyed and is no longer (or keyed from a later event than it was) fails, saying
        which record shows it."""
        names = _KeyNames()
        if self.keyed is None:
            walked = walk_chain(names.watch(events), head, None)
        else:
            found = self._key_at_hand()
            if found is None:
                return ChainCheck(False, 0, GENESIS, f"the chain is keyed with key "
                                  f"{self.keyed[0]}, which is not the key in {key_path()} "
                                  "(copy the key file of the user who wrote this journal, or "
                                  "the chain was re-keyed by someone else)")
            walked = walk_chain(names.watch(events), head, ChainKey(found, self.keyed[1]))
        if not walked.ok:
            return walked
        entry = registered(self._real) if self._path is not None else None
        problem = self._downgraded(names, entry)
        if problem is not None:
            return ChainCheck(False, walked.events, walked.head, problem[1], problem[0])
        if self.keyed is not None and (entry is None or (entry.key, entry.keyed_from)
                                       != self.keyed):
            # keyed before the key kept its list of journals (or listed with another key,
            # for a journal since made anew at this path): listed as it is from now on; a
            # list that cannot be written changes nothing about this chain's check
            with contextlib.suppress(JournalError):
                register(KeyedJournal(self._real, *self.keyed))
        return walked

    def _downgraded(self, names: _KeyNames, entry: KeyedJournal | None
                    ) -> tuple[int | None, str] | None:
        """(event, problem) when the records of the chain's key say it was keyed otherwise
        than `meta` says now."""
        recomputed = "its chain was recomputed without the key (the key was taken off)"
        if self.keyed is None:
            if names.named:
                seq, kind, key, _ = names.named[0]
                return seq, (f"event {seq} ({kind}) says the chain is keyed with chain key "
                             f"{key}, but the journal no longer records a key: {recomputed}")
            if entry is not None and names.last >= entry.keyed_from:
                return entry.keyed_from, (
                    f"the journal {self._path} was keyed with chain key {entry.key} from "
                    f"event {entry.keyed_from} on ({registry_path()} lists it), but it no "
                    f"longer records a key: {recomputed}")
            return None
        key, keyed_from = self.keyed
        for seq, kind, named, marked_from in names.named:
            if named != key:
                return seq, (f"event {seq} ({kind}) names chain key {named}, but the journal "
                             f"says its key is {key}: the chain was re-keyed")
            if seq < keyed_from:
                return seq, (f"event {seq} ({kind}) names the chain key, but the journal says "
                             f"its chain is keyed only from event {keyed_from}: {recomputed}")
            if marked_from is not None and marked_from != keyed_from:
                return seq, (f"event {seq} ({kind}) says the chain is keyed from event "
                             f"{marked_from}, but the journal says from event {keyed_from}: "
                             f"{recomputed}")
        if entry is not None and entry.key == key and entry.keyed_from < keyed_from \
                and names.last >= entry.keyed_from:
            return entry.keyed_from, (
                f"the journal {self._path} was keyed from event {entry.keyed_from} on "
                f"({registry_path()} lists it), but it says from event {keyed_from}: "
                f"{recomputed}")
        return None
