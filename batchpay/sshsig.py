"""Ed25519 signatures in OpenSSH's SSHSIG format, and OpenSSH's allowed_signers file.

A signature made here verifies with `ssh-keygen -Y verify -n NAMESPACE`, and one made by
`ssh-keygen -Y sign -n NAMESPACE` verifies here (PROTOCOL.sshsig):

    "SSHSIG" uint32(1) string(public key) string(namespace) string("") string("sha512")
             string(signature)

where the signature is over "SSHSIG" string(namespace) string("") string("sha512")
string(SHA-512 of the message). Keys are OpenSSH's: `ssh-ed25519 AAAA... comment` public
lines, and private keys in the OpenSSH format (optionally passphrase-protected).
"""

from __future__ import annotations

import base64
import hashlib
import struct
from dataclasses import dataclass
from pathlib import Path

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from batchpay.errors import SignatureError

MAGIC = b"SSHSIG"
KEY_TYPE = b"ssh-ed25519"
HASH = b"sha512"
BEGIN, END = "-----BEGIN SSH SIGNATURE-----", "-----END SSH SIGNATURE-----"


def _string(data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + data


def _read_string(blob: bytes, at: int) -> tuple[bytes, int]:
    if at + 4 > len(blob):
        raise SignatureError("the signature is cut short")
    (length,) = struct.unpack(">I", blob[at:at + 4])
    end = at + 4 + length
    if end > len(blob):
        raise SignatureError("the signature is cut short")
    return blob[at + 4:end], end


def public_blob(key: Ed25519PublicKey) -> bytes:
    raw = key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return _string(KEY_TYPE) + _string(raw)


def public_line(key: Ed25519PublicKey) -> str:
    """`ssh-ed25519 AAAA...`, as in an authorized_keys or allowed_signers line."""
    return f"{KEY_TYPE.decode()} {base64.b64encode(public_blob(key)).decode()}"


def fingerprint(key: Ed25519PublicKey) -> str:
    """`SHA256:...`, as `ssh-keygen -l` prints it."""
    digest = hashlib.sha256(public_blob(key)).digest()
    return "SHA256:" + base64.b64encode(digest).decode().rstrip("=")


def _signed_data(message: bytes, namespace: str) -> bytes:
    return (MAGIC + _string(namespace.encode()) + _string(b"") + _string(HASH)
            + _string(hashlib.sha512(message).digest()))


def sign(key: Ed25519PrivateKey, message: bytes, namespace: str) -> str:
    """An armored SSHSIG signature of `message` in `namespace`."""
    signature = key.sign(_signed_data(message, namespace))
    blob = (MAGIC + struct.pack(">I", 1) + _string(public_blob(key.public_key()))
            + _string(namespace.encode()) + _string(b"") + _string(HASH)
            + _string(_string(KEY_TYPE) + _string(signature)))
    text = base64.b64encode(blob).decode()
    lines = [text[i:i + 70] for i in range(0, len(text), 70)]
    return "\n".join([BEGIN, *lines, END]) + "\n"


def verify(armored: str, message: bytes, namespace: str) -> Ed25519PublicKey:
    """The key that signed `message` in `namespace`; SignatureError when it did not."""
    text = armored.strip()
    if not (text.startswith(BEGIN) and text.endswith(END)):
        raise SignatureError("not an SSH signature (no BEGIN/END SSH SIGNATURE lines)")
    try:
        blob = base64.b64decode("".join(text[len(BEGIN):-len(END)].split()), validate=True)
    except ValueError as exc:
        raise SignatureError("the signature is not valid base64") from exc
    if not blob.startswith(MAGIC) or blob[6:10] != struct.pack(">I", 1):
        raise SignatureError("not an SSHSIG version 1 signature")
    key_blob, at = _read_string(blob, 10)
    signed_namespace, at = _read_string(blob, at)
    _, at = _read_string(blob, at)  # reserved
    hash_name, at = _read_string(blob, at)
    signature_blob, at = _read_string(blob, at)
    if signed_namespace.decode(errors="replace") != namespace:
        raise SignatureError(f"signed for namespace {signed_namespace.decode(errors='replace')!r}"
                             f", not {namespace!r}")
    if hash_name not in (b"sha512", b"sha256"):
        raise SignatureError(f"unknown hash {hash_name.decode(errors='replace')!r}")
    key = _public_from_blob(key_blob)
    kind, rest = _read_string(signature_blob, 0)
    raw_signature, _ = _read_string(signature_blob, rest)
    if kind != KEY_TYPE:
        raise SignatureError(f"a {kind.decode(errors='replace')} signature: only Ed25519 is used")
    digest = hashlib.new(hash_name.decode(), message).digest()
    data = (MAGIC + _string(namespace.encode()) + _string(b"") + _string(hash_name)
            + _string(digest))
    try:
        key.verify(raw_signature, data)
    except InvalidSignature as exc:
        raise SignatureError("the signature does not match this file") from exc
    return key


def _public_from_blob(blob: bytes) -> Ed25519PublicKey:
    kind, at = _read_string(blob, 0)
    raw, _ = _read_string(blob, at)
    if kind != KEY_TYPE or len(raw) != 32:
        raise SignatureError(f"a {kind.decode(errors='replace')} key: only Ed25519 is used")
    return Ed25519PublicKey.from_public_bytes(raw)


def parse_public(line: str) -> Ed25519PublicKey:
    """A public key from `ssh-ed25519 AAAA... [comment]`."""
    parts = line.split()
    if len(parts) < 2 or parts[0] != KEY_TYPE.decode():
        raise SignatureError("not an ssh-ed25519 public key")
    try:
        return _public_from_blob(base64.b64decode(parts[1], validate=True))
    except ValueError as exc:
        raise SignatureError("the public key is not valid base64") from exc


@dataclass(frozen=True)
class Signer:
    principal: str
    key: Ed25519PublicKey
    fingerprint: str


def allowed_signers(path: Path) -> list[Signer]:
    """OpenSSH's allowed_signers: `principal[,principal...] [options] ssh-ed25519 KEY [comment]`
    per line; blank lines and # comments skipped; other key types are left out."""
    signers = []
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        principals, _, rest = _first_field(line)
        fields = rest.split()
        while fields and not fields[0].startswith("ssh-") and not fields[0].startswith("ecdsa-"):
            fields.pop(0)  # options (namespaces="...", valid-after=...)
        if not fields:
            raise SignatureError(f"{path}, line {number}: no key after the principal")
        if fields[0] != KEY_TYPE.decode():
            continue
        try:
            key = parse_public(" ".join(fields[:2]))
        except SignatureError as exc:
            raise SignatureError(f"{path}, line {number}: {exc}") from exc
        for principal in principals.split(","):
            signers.append(Signer(principal, key, fingerprint(key)))
    return signers


def _first_field(line: str) -> tuple[str, str, str]:
    """The principals field (which may be "quoted with spaces") and the rest."""
    if line.startswith('"'):
        end = line.find('"', 1)
        if end < 0:
            raise SignatureError(f"an unclosed quote in {line!r}")
        return line[1:end], "", line[end + 1:]
    head, _, rest = line.partition(" ")
    return head, "", rest


def load_private(path: Path, passphrase: str | None = None) -> Ed25519PrivateKey:
    """An OpenSSH Ed25519 private key (batchpay's or `~/.ssh/id_ed25519`)."""
    data = path.read_bytes()
    try:
        key = serialization.load_ssh_private_key(
            data, passphrase.encode() if passphrase else None)
    except (ValueError, TypeError) as exc:
        needs = "encrypted" in str(exc).lower() or "password" in str(exc).lower()
        raise SignatureError(f"{path}: " + ("the key needs its passphrase" if needs and
                                            not passphrase else f"not a usable key ({exc})")
                             ) from exc
    if not isinstance(key, Ed25519PrivateKey):
        raise SignatureError(f"{path}: not an Ed25519 key")
    return key


def private_text(key: Ed25519PrivateKey, passphrase: str | None = None) -> bytes:
    encryption: serialization.KeySerializationEncryption = (
        serialization.BestAvailableEncryption(passphrase.encode()) if passphrase
        else serialization.NoEncryption())
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH,
                             encryption)
