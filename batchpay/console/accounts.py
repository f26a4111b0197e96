"""The console's users: a name, roles, an Argon2id password hash and a signing key.

Stored beside the journal (`console/users.json`, private), so that one journal has one team;
with the journal in PostgreSQL, in its database (state_postgres.TeamAccounts).
Roles say what a user may do on the page:

    maker      upload, check, review and pay a sheet; confirm a held payee
    approver   approve or reject a batch someone else made (and changed nothing in)
    auditor    read everything (batches, runs, approvals, payees, the chain head), change nothing
    owner      the one `owner` account `batchpay serve` makes: it administers (reads the
               users and the settings) and reads everything, but makes, approves and pays
               nothing. Whoever runs the console and also makes or approves batches is added
               as a named user, so that the two-person rule sees them as one person.

Every change of a user (`users add --replace`, `users remove`) gives it a new session
generation: a session started before it ends at its next request, whatever the console
process it lives in.

A user's Ed25519 key (`console/keys/NAME_ed25519`, 0600) is made with the user and held by
the server: a batch's plan is signed with its maker's key, and approving it on the page
signs it with the approver's own key, so the plan's signatures say who made and who
approved it, as `batchpay plan` and `batchpay approve` do.
"""

from __future__ import annotations

import base64
import hmac
import json
import os
import re
import secrets
import threading
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict

from batchpay.errors import UsageError
from batchpay.files import private_dir, replaced_atomically

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

ROLES = ("maker", "approver", "auditor")  # the roles `batchpay users add` gives
OWNER = "owner"  # the administrator's account, and its only role
NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
MIN_PASSWORD = 12
# Argon2id as OWASP's password-storage cheat sheet puts it (46 MiB, 1 pass, 1 lane is the
# floor; this is above it): about 0.1 s per login on one core
ARGON2 = {"iterations": 2, "lanes": 1, "memory_cost": 65536, "length": 32}


def console_folder(local_folder: Path) -> Path:
    """Where the console keeps its users, keys and batches: in the journal's folder on this
    host (Settings.local_folder: beside a journal file)."""
    return Path(local_folder).absolute() / "console"


def hash_password(password: str) -> str:
    """`argon2id$v=19$m=...,t=...,p=...$SALT$HASH` (base64), the parameters kept with it."""
    salt = secrets.token_bytes(16)
    digest = _argon2(password, salt, ARGON2)
    return (f"argon2id$v=19$m={ARGON2['memory_cost']},t={ARGON2['iterations']},"
            f"p={ARGON2['lanes']}${_b64(salt)}${_b64(digest)}")


def check_password(password: str, stored: str) -> bool:
    try:
        kind, _version, params, salt, digest = stored.split("$")
        values = dict(item.split("=") for item in params.split(","))
        cost = {"memory_cost": int(values["m"]), "iterations": int(values["t"]),
                "lanes": int(values["p"])}
        expected = base64.b64decode(digest)
        cost["length"] = len(expected)
        if kind != "argon2id":
            return False
        return hmac.compare_digest(_argon2(password, base64.b64decode(salt), cost), expected)
    except (ValueError, KeyError):
        return False


def _argon2(password: str, salt: bytes, cost: dict[str, int]) -> bytes:
    from cryptography.hazmat.primitives.kdf.argon2 import Argon2id

    return Argon2id(salt=salt, length=cost["length"], iterations=cost["iterations"],
                    lanes=cost["lanes"], memory_cost=cost["memory_cost"]).derive(
        password.encode())


def new_generation() -> str:
    """A user's session generation: 64 random bits, new at every change of the user."""
    return secrets.token_hex(8)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


# a hash to check against when the name is unknown: a wrong name costs the same as a
# wrong password, so the time of an answer does not tell which names exist
_DECOY = hash_password(secrets.token_urlsafe(16))


class StoredUser(TypedDict):
    """A user as users.json keeps it (under its name)."""

    roles: list[str]
    password: str  # the Argon2id hash; "" for the owner
    created_at: str
    generation: NotRequired[str]  # new at every change of the user: older sessions end


@dataclass
class User:
    name: str
    roles: tuple[str, ...]
    password: str = ""  # the Argon2id hash; "" for the owner, who signs in by link only
    created_at: str = ""
    generation: str = ""  # a session of this user started under another one has ended

    def may(self, role: str) -> bool:
        return role in self.roles


class Accounts:
    """The users file and the keys folder. Reads the file afresh on every lookup, so a user
    added with `batchpay users add` while the console runs can sign in at once."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        self.path = self.folder / "users.json"
        self.keys = self.folder / "keys"
        # a file's read-change-write, one at a time (the team store's: a transaction)
        self._lock: AbstractContextManager[Any] = threading.Lock()

    def _load(self) -> dict[str, StoredUser]:
        if not self.path.is_file():
            return {}
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except ValueError as exc:
            raise UsageError(f"The console's users file {self.path} cannot be read: {exc}.",
                             hint="Restore it from a backup, or move it away and add the "
                             "users again.") from exc
        return dict(data.get("users", {}))

    def _save(self, users: dict[str, StoredUser]) -> None:
        private_dir(self.folder)
        with replaced_atomically(self.path) as partial:
            fd = os.open(partial, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump({"users": users}, handle, indent=2, sort_keys=True)

    def users(self) -> list[User]:
        return [self._user(name, data) for name, data in sorted(self._load().items())]

    def get(self, name: str) -> User | None:
        data = self._load().get(name)
        return self._user(name, data) if data is not None else None

    @staticmethod
    def _user(name: str, data: StoredUser) -> User:
        return User(name, tuple(data.get("roles", ())), data.get("password", ""),
                    data.get("created_at", ""), data.get("generation", ""))

    def add(self, name: str, roles: tuple[str, ...], password: str | None, *,
            replace: bool = False) -> User:
        """A new user (or, with `replace`, new roles and password for one); makes its key."""
        from batchpay.clock import stamp

        if name == OWNER:
            raise UsageError(f"{OWNER} is the console's administrator (users and settings), "
                             "who makes, approves and pays nothing and signs in by the link "
                             "`batchpay serve` gives.",
                             hint="Add the person by their own name: `batchpay users add "
                             "NAME --role maker`.")
        self._check_name(name)
        unknown = [r for r in roles if r not in ROLES]
        if unknown or not roles:
            raise UsageError(f"Roles are {', '.join(ROLES)}; got {', '.join(roles) or 'none'}.")
        if password is not None and len(password) < MIN_PASSWORD:
            raise UsageError(f"A password has at least {MIN_PASSWORD} characters.")
        with self._lock:
            users = self._load()
            if name in users and not replace:
                raise UsageError(f"The user {name} exists already.",
                                 hint="Add --replace to give it new roles and a new password.")
            earlier = users[name].get("created_at") if name in users else None
            users[name] = StoredUser(roles=sorted(set(roles), key=ROLES.index),
                                     password=hash_password(password) if password else "",
                                     created_at=earlier or stamp(),
                                     generation=new_generation())
            self._save(users)
        self.signing_key(name)
        user = self.get(name)
        assert user is not None
        return user

    def ensure_owner(self) -> User:
        """The owner account as `batchpay serve` keeps it: the owner role only, no password
        (signs in by the link serve gives). An owner made by an earlier batchpay with every
        role is reduced to that, its sessions ended."""
        from batchpay.clock import stamp

        with self._lock:
            users = self._load()
            found = users.get(OWNER)
            if found is None or list(found.get("roles", [])) != [OWNER] or found.get(
                    "password"):
                made = found.get("created_at", "") if found is not None else ""
                users[OWNER] = StoredUser(roles=[OWNER], password="",
                                          created_at=made or stamp(),
                                          generation=new_generation())
                self._save(users)
        user = self.get(OWNER)
        assert user is not None
        return user

    def remove(self, name: str) -> None:
        """`batchpay users remove`: the user, its signing key and (at their next request) its
        sessions are gone; its key leaves the console's approvers list with it."""
        with self._lock:
            users = self._load()
            if name not in users:
                raise UsageError(f"No console user {name}.",
                                 hint="`batchpay users list` shows them.")
            del users[name]
            self._save(users)
        self.key_path(name).unlink(missing_ok=True)

    @staticmethod
    def _check_name(name: str) -> None:
        if not NAME_PATTERN.match(name):
            raise UsageError(f"{name!r} cannot be a user name: 1-64 of A-Z a-z 0-9 . _ -, "
                             "starting with a letter or digit.")

    def authenticate(self, name: str, password: str) -> User | None:
        """The user, when the password is theirs; None otherwise (the same time either way)."""
        user = self.get(name)
        stored = user.password if user is not None and user.password else _DECOY
        good = check_password(password, stored)
        return user if good and user is not None and user.password else None

    def key_path(self, name: str) -> Path:
        return self.keys / f"{name}_ed25519"

    def signing_key(self, name: str) -> Ed25519PrivateKey:
        """The user's Ed25519 private key, made on first use (0600, never shown)."""
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

        from batchpay import sshsig

        path = self.key_path(name)
        if path.is_file():
            return sshsig.load_private(path)
        private_dir(self.keys)
        key = Ed25519PrivateKey.generate()
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:  # made meanwhile by another request
            return sshsig.load_private(path)
        with os.fdopen(fd, "wb") as handle:
            handle.write(sshsig.private_text(key))
        return key

    def fingerprint(self, name: str) -> str:
        from batchpay import sshsig

        return sshsig.fingerprint(self.signing_key(name).public_key())
