"""Moving a file journal's console into the PostgreSQL journal it was copied to
(`batchpay journal copy --to postgresql://…`): the users and their signing keys, and every
batch with its files and its Pay claim, so that the team's consoles on the database go on
with the same users (the same keys: plans signed before still verify; sealed with the chain
key, as every key in the team's database is) and the same batches (a batch paid before is
still paid once: its claim row comes with it).

Done in one transaction after the journal's own copy, into a console that holds nothing
yet: a database whose console has users or batches already is refused, as the journal's
copy refuses a journal that holds payouts.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from batchpay.console.accounts import console_folder
from batchpay.console.batches import _ID
from batchpay.console.batches_postgres import LOCAL_ONLY
from batchpay.console.sealed_keys import plain_key, team_seal
from batchpay.console.state_postgres import (
    BATCHES_LOCK,
    USERS_LOCK,
    Conn,
    ConsoleDatabase,
    value,
)
from batchpay.errors import JournalError, UsageError


@dataclass
class ConsoleCopied:
    users: int
    batches: int


def copy_console(local_folder: Path, url: str) -> ConsoleCopied:
    """The console kept beside a file journal (its `console/` folder on this host) into the
    database at `url`; nothing when there is none."""
    folder = console_folder(local_folder)
    users_file = folder / "users.json"
    try:
        users = json.loads(users_file.read_text(encoding="utf-8")).get("users", {}) if (
            users_file.is_file()) else {}
    except ValueError as exc:
        raise UsageError(f"The console's users file {users_file} cannot be read: {exc}.",
                         hint="Restore it from a backup, then copy again.") from exc
    batch_folders = sorted(p for p in (folder / "batches").glob("*")
                           if _ID.match(p.name) and (p / "meta.json").is_file())
    if not users and not batch_folders:
        return ConsoleCopied(0, 0)
    db = ConsoleDatabase(url)
    try:
        with db.transaction(USERS_LOCK) as conn, db.transaction(BATCHES_LOCK):
            held = value(conn, "SELECT (SELECT COUNT(*) FROM console_users) + "
                         "(SELECT COUNT(*) FROM console_batches)")
            if held:
                raise JournalError(f"The console in {db.where} has users or batches already: "
                                   "a console is copied into an empty one only.",
                                   hint="Add the users there with `batchpay users add`.")
            seal = team_seal(conn) if users else None  # the copy's chain key seals them
            for name, data in users.items():
                conn.execute("INSERT INTO console_users VALUES (%s, %s)",
                             (name, json.dumps(data, sort_keys=True)))
                key = folder / "keys" / f"{name}_ed25519"
                if key.is_file() and seal is not None:
                    private = plain_key(name, key.read_text(encoding="ascii"))
                    conn.execute("INSERT INTO console_keys VALUES (%s, %s)",
                                 (name, seal.seal(name, private)))
            for batch in batch_folders:
                _copy_batch(conn, batch)
    finally:
        db.close()
    return ConsoleCopied(len(users), len(batch_folders))


def _copy_batch(conn: Conn, folder: Path) -> None:
    meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
    conn.execute("INSERT INTO console_batches VALUES (%s, %s)",
                 (folder.name, json.dumps(meta, sort_keys=True, ensure_ascii=False)))
    for path in sorted(folder.iterdir()):
        if path.name in LOCAL_ONLY or path.name.startswith(".") or not path.is_file():
            continue
        data = path.read_bytes()
        conn.execute("INSERT INTO console_batch_files VALUES (%s, %s, %s, %s)",
                     (folder.name, path.name, hashlib.sha256(data).hexdigest(), data))
    claim = folder / "pay.claim"
    if claim.is_file():  # "user when": the Pay that went ahead
        by, _, at = claim.read_text(encoding="utf-8").strip().partition(" ")
        conn.execute("INSERT INTO console_pay_claims VALUES (%s, %s, %s)", (folder.name, by, at))
