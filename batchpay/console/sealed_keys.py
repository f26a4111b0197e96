"""The console's signing keys at rest in the team's database, sealed with a key the database
does not hold.

With the journal in PostgreSQL, each console user's Ed25519 key lives in `console_keys`,
so that every host of the team signs with the same key. Kept as plain text, whoever reads
the database (a dump, `batchpay journal backup`, a replica, its administrator) could sign
plans as any maker or approver. So each key is sealed with AES-256-GCM under a key derived
(HKDF-SHA256, its own `info` label) from the journal's chain key, which every host that
writes the journal holds in a file of its own (0600) and which never goes into the
database. The user's name is the associated data: a sealed row copied onto another user's
does not open. A row is the text

    v1:<chain key id>:<nonce, 24 hex>:<ciphertext and tag, hex>

(the key's 32 raw bytes sealed; the chain key's id is its public name, the one the
journal's `meta` records, so that a host holding another key is told which one it needs).

Why the chain key and not a secret of its own: every host serving the team needs the chain
key anyway (its first journal write is refused without it), so it adds nothing for the
operator to make, copy or lose; and a journal's chain key is never replaced (a journal
keyed once verifies with that key only, journal.chain_keys), so the signing keys sealed
with it live as long as the journal does, and come back with it from a backup and the kept
key file. A host without that key opens no signing key and makes none
(SigningKeyLocked): it signs nothing.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from batchpay.errors import SigningKeyLocked

if TYPE_CHECKING:
    import psycopg
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

FORMAT = "v1"
SEALED_PREFIX = FORMAT + ":"  # how a sealed row begins (a plain one: "-----BEGIN")
INFO = b"batchpay console signing keys v1"  # HKDF's label: this key serves nothing else
NONCE_BYTES = 12  # AES-GCM's 96-bit nonce, random per seal
# the id of the key the journal's chain is keyed with (journal.chain_keys), once it is
RECORDED_KEY = "SELECT value FROM meta WHERE key = 'chain_key'"
SEALED_KEY = f"SELECT private FROM console_keys WHERE private LIKE '{SEALED_PREFIX}%' LIMIT 1"
MISSING_HINT = ("Copy the team's chain key file to {path} on this host (0600), as on every "
                "host that serves the team, then try again.")
LOST_HINT = ("If that key is lost, remove the user and add them again (`batchpay users "
             "remove NAME`, `batchpay users add NAME ...`): a new signing key is made.")


def is_sealed(stored: str) -> bool:
    return stored.startswith(SEALED_PREFIX)


@dataclass(frozen=True)
class Seal:
    """Seals and opens the team's signing keys with the key derived from one chain key."""

    key_id: str  # the chain key's public id
    _aead: AESGCM = field(repr=False)

    @classmethod
    def from_chain_key(cls, chain_key: bytes) -> Seal:
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM
        from cryptography.hazmat.primitives.kdf.hkdf import HKDF

        from batchpay.engine import chain_key_id

        derived = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=INFO).derive(
            chain_key)
        return cls(chain_key_id(chain_key), AESGCM(derived))

    def seal(self, name: str, key: Ed25519PrivateKey) -> str:
        from cryptography.hazmat.primitives import serialization

        raw = key.private_bytes(serialization.Encoding.Raw, serialization.PrivateFormat.Raw,
                                serialization.NoEncryption())
        nonce = os.urandom(NONCE_BYTES)
        sealed = self._aead.encrypt(nonce, raw, name.encode())
        return f"{FORMAT}:{self.key_id}:{nonce.hex()}:{sealed.hex()}"

    def open(self, name: str, stored: str) -> Ed25519PrivateKey:
        """The key sealed in `stored` for user `name`; SigningKeyLocked when it does not
        open here."""
        from cryptography.exceptions import InvalidTag
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

        parts = stored.split(":")
        try:
            if len(parts) != 4 or parts[0] != FORMAT:
                raise ValueError(parts[0])
            nonce, sealed = bytes.fromhex(parts[2]), bytes.fromhex(parts[3])
        except ValueError:
            raise SigningKeyLocked(
                f"The console's signing key of {name} in the team's database is not one "
                f"batchpay can read (it starts {parts[0][:8]!r}).",
                hint="Upgrade batchpay on this host if a newer one wrote it. " + LOST_HINT
            ) from None
        if parts[1] != self.key_id:
            raise SigningKeyLocked(
                f"The console's signing key of {name} is sealed with chain key {parts[1]}, "
                f"and this host holds chain key {self.key_id}.",
                hint="Use the team's chain key on this host (the file every host serving "
                "the team holds). " + LOST_HINT)
        try:
            raw = self._aead.decrypt(nonce, sealed, name.encode())
        except InvalidTag:
            raise SigningKeyLocked(
                f"The console's signing key of {name} in the team's database does not open "
                "with the team's chain key: the row was changed, or copied from another "
                "user's.", hint=LOST_HINT) from None
        return Ed25519PrivateKey.from_private_bytes(raw)


def team_seal(conn: psycopg.Connection[Any]) -> Seal:
    """The seal of the team's signing keys on this host: the chain key the journal is keyed
    with (its `meta` says which), else the one keys were sealed with already. A journal not
    keyed yet, with no key sealed yet (a new team), is the one case this host's key is made
    here, as the journal's first write would make it; every later host needs that key."""
    from batchpay.engine import chain_key_id, chain_key_path, host_chain_key

    row = conn.execute(RECORDED_KEY).fetchone()
    wanted = str(row[0]) if row is not None else None
    if wanted is None:
        sealed = conn.execute(SEALED_KEY).fetchone()
        wanted = str(sealed[0]).split(":")[1] if sealed is not None else None
    key = host_chain_key(make=wanted is None)
    path = chain_key_path()
    if key is None:
        raise SigningKeyLocked(
            f"This host holds no chain key ({path}): the console's signing keys in the "
            f"team's database are sealed with the team's chain key {wanted}, so none can "
            "be opened or made here.", hint=MISSING_HINT.format(path=path))
    if wanted is not None and chain_key_id(key) != wanted:
        raise SigningKeyLocked(
            f"This host's chain key {path} is key {chain_key_id(key)}, not the team's "
            f"chain key {wanted}: the console's signing keys cannot be opened or made here.",
            hint=MISSING_HINT.format(path=path))
    return Seal.from_chain_key(key)


def plain_key(name: str, stored: str) -> Ed25519PrivateKey:
    """A key an earlier batchpay kept as OpenSSH text (sealed at its first use now)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    try:
        key = serialization.load_ssh_private_key(stored.encode(), None)
    except (ValueError, TypeError, UnicodeEncodeError):
        key = None
    if not isinstance(key, Ed25519PrivateKey):
        raise SigningKeyLocked(f"The console's signing key of {name} in the team's database "
                               "is not a key batchpay can read.", hint=LOST_HINT)
    return key
