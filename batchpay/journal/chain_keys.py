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
"""

from __future__ import annotations

import hashlib
import os
import secrets
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from batchpay.errors import JournalError
from batchpay.files import private_dir, write_private
from batchpay.journal.records import GENESIS, ChainCheck, ChainKey, walk_chain

if TYPE_CHECKING:
    from batchpay.journal.stores import Connection

KEY_FILE = "chain.key"
KEY_ENV = "BATCHPAY_CHAIN_KEY"


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


class JournalChainKey:
    """Which key one journal's chain is keyed with, as its `meta` table records it: the
    key's id and the first event it keys. None until the first keyed event is written (or
    `reread` finds one); an in-memory journal is never keyed (no file anyone could copy or
    edit)."""

    def __init__(self, db: Connection, path: Path | str | None) -> None:
        self._db = db
        self._path = path
        self.keyed: tuple[str, int] | None = None  # (the key's id, the first keyed seq)

    def reread(self) -> None:
        """What `meta` says now (after a rollback, a key noted in it is undone)."""
        rows = dict(self._db.execute(
            "SELECT key, value FROM meta WHERE key IN ('chain_key', 'chain_keyed_from')"))
        self.keyed = None if "chain_key" not in rows else (
            rows["chain_key"], int(rows.get("chain_keyed_from") or 1))

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
            return key
        found = self._key_at_hand()
        if found is None:
            raise JournalError(f"The journal {self._path} is keyed with chain key "
                               f"{self.keyed[0]}, which is not the key in {key_path()}.",
                               hint="Copy the key file of the user who wrote this journal "
                               "there (0600), or use your own journal.")
        return found if seq >= self.keyed[1] else None

    def _key_at_hand(self) -> bytes | None:
        """The user's key file's key, when it is the one this chain is keyed with."""
        assert self.keyed is not None
        found = load_key()
        return found if found is not None and key_id(found) == self.keyed[0] else None

    def check(self, events: Iterable[Mapping[str, Any]], head: str | None) -> ChainCheck:
        """The chain of `events` walked with this journal's key (`walk_chain`); a keyed
        chain without its key at hand fails, saying whose key it needs."""
        if self.keyed is None:
            return walk_chain(events, head, None)
        found = self._key_at_hand()
        if found is None:
            return ChainCheck(False, 0, GENESIS, f"the chain is keyed with key "
                              f"{self.keyed[0]}, which is not the key in {key_path()} "
                              "(copy the key file of the user who wrote this journal, or "
                              "the chain was re-keyed by someone else)")
        return walk_chain(events, head, ChainKey(found, self.keyed[1]))
