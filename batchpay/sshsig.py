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
import re
import struct
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

MAGIC = b"SSHSIG"
KEY_TYPE = b"ssh-ed25519"
HASH = b"sha512"
BEGIN, END = "-----BEGIN SSH SIGNATURE-----", "-----END SSH SIGNATURE-----"


class SignatureError(ValueError):
    """A signature, key or allowed_signers line that cannot be used, and why."""


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
    return _blob_fingerprint(public_blob(key))


def _blob_fingerprint(blob: bytes) -> str:
    return "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")


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


@dataclass(frozen=True)
class Signer:
    """One line of an allowed_signers file, options and all."""

    principals: tuple[str, ...]
    fingerprint: str
    line: int
    cert_authority: bool = False
    namespaces: str | None = None  # a pattern list ("batchpay-plan-v1,git"), None: any
    valid_after: int | None = None  # seconds since the epoch
    valid_before: int | None = None

    def refusal(self, namespace: str, at: datetime) -> str:
        """"" when this line lets its key sign in `namespace` at `at`, as `ssh-keygen -Y
        verify` decides it, else why not."""
        if self.cert_authority:
            return (f"line {self.line} lists it as a cert-authority, which vouches only for "
                    "certificates, not for signatures by the key itself")
        if self.namespaces is not None and not match_pattern_list(namespace, self.namespaces):
            return (f"line {self.line} allows it only for namespaces=\"{self.namespaces}\", "
                    f"not {namespace}")
        now = int(at.timestamp())
        if self.valid_after is not None and now < self.valid_after:
            return f"line {self.line} makes it valid only after {_shown(self.valid_after)}"
        if self.valid_before is not None and now > self.valid_before:
            return f"line {self.line} makes it valid only before {_shown(self.valid_before)}"
        return ""


def allowed_signers(path: Path) -> list[Signer]:
    """OpenSSH's allowed_signers, read as ssh-keygen reads it (ssh-keygen(1), ALLOWED
    SIGNERS): `principal[,principal...] [option[,option...]] KEYTYPE KEY [comment]` per
    line; blank lines and # comments skipped. Options: `cert-authority`,
    `namespaces="pattern,..."`, `valid-after="TIME"`, `valid-before="TIME"` (TIME:
    YYYYMMDD[HHMM[SS]], local time, or UTC with a trailing Z). A line ssh-keygen would
    refuse (an unknown or repeated option, a bad time) makes the whole file unusable rather
    than being skipped. Principal patterns (* ? !) are refused: batchpay counts approvals
    by principal, so each must name one person."""
    signers = []
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        try:
            signers.append(_signer(line, number))
        except SignatureError as exc:
            raise SignatureError(f"{path}, line {number}: {exc}") from None
    return signers


def _signer(line: str, number: int) -> Signer:
    principals, rest = _first_field(line)
    if not principals or not rest.strip():
        raise SignatureError("no key after the principal")
    names = tuple(principals.split(","))
    if any(not n or any(c in n for c in "*?!") for n in names):
        raise SignatureError(f"principal {principals!r}: name each person (no empty names, "
                             "no * ? ! patterns)")
    fields = rest.split(None, 1)
    options = ""
    if not _is_key_type(fields[0]):
        options, rest = _options_field(rest.lstrip())
        fields = rest.split(None, 1)
        if not fields or not _is_key_type(fields[0]):
            raise SignatureError("no key after the options")
    parts = fields[1].split() if len(fields) > 1 else []
    if not parts:
        raise SignatureError("a key type without its key")
    try:
        blob = base64.b64decode(parts[0], validate=True)
    except ValueError as exc:
        raise SignatureError("the public key is not valid base64") from exc
    kind, _ = _read_string(blob, 0)
    if kind.decode(errors="replace") != fields[0]:
        raise SignatureError(f"the key is a {kind.decode(errors='replace')} key, not {fields[0]}")
    parsed = _options(options)
    return Signer(names, _blob_fingerprint(blob), number, **parsed)


def _is_key_type(token: str) -> bool:
    return token.startswith(("ssh-", "ecdsa-", "sk-", "rsa-sha2-"))


def _options_field(text: str) -> tuple[str, str]:
    """The options field (up to the first space outside quotes) and what follows it."""
    quoted = False
    for at, char in enumerate(text):
        if char == '"':
            quoted = not quoted
        elif char in " \t" and not quoted:
            return text[:at], text[at:].lstrip()
    raise SignatureError("an unclosed quote in the options" if quoted else "no key")


def _options(text: str) -> dict[str, Any]:
    """`cert-authority,namespaces="...",valid-after="...",valid-before="..."` as ssh-keygen
    parses them (names without case; each at most once; values in double quotes)."""
    found: dict[str, Any] = {}
    at = 0
    while at < len(text):
        rest = text[at:]
        lower = rest.lower()
        if lower.startswith("cert-authority") and (len(rest) == 14 or rest[14] == ","):
            found["cert_authority"] = True
            at += 14
        else:
            name = next((n for n in ("namespaces", "valid-after", "valid-before")
                         if lower.startswith(n + '="')), None)
            if name is None:
                raise SignatureError(f"unknown key option in {text!r}")
            end = rest.find('"', len(name) + 2)
            if end < 0:
                raise SignatureError(f"an unclosed quote in {text!r}")
            key = name.replace("-", "_")
            if key in found:
                raise SignatureError(f"more than one {name} option")
            value = rest[len(name) + 2:end]
            found[key] = value if key == "namespaces" else _absolute_time(value, name)
            at += end + 1
        if at < len(text):
            if text[at] != "," or at + 1 == len(text):
                raise SignatureError(f"unknown key option in {text!r}")
            at += 1
    after, before = found.get("valid_after"), found.get("valid_before")
    if after is not None and before is not None and before <= after:
        raise SignatureError("valid-before is not after valid-after")
    return found


def _absolute_time(text: str, name: str) -> int:
    """ssh-keygen's YYYYMMDD[HHMM[SS]][Z] (local time without the Z), as epoch seconds."""
    utc = text.endswith(("Z", "z"))
    digits = text[:-1] if utc else text
    formats = {8: "%Y%m%d", 12: "%Y%m%d%H%M", 14: "%Y%m%d%H%M%S"}
    if not digits.isdigit() or len(digits) not in formats:
        raise SignatureError(f"{name}={text!r} is not a time (YYYYMMDD[HHMM[SS]][Z])")
    try:
        moment = datetime.strptime(digits, formats[len(digits)])
    except ValueError as exc:
        raise SignatureError(f"{name}={text!r} is not a time") from exc
    moment = moment.replace(tzinfo=UTC) if utc else moment.astimezone()
    return int(moment.timestamp())


def _shown(seconds: int) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def match_pattern_list(text: str, patterns: str) -> bool:
    """OpenSSH's match_pattern_list: comma-separated patterns with * and ?; a matching
    `!pattern` refuses whatever else matches."""
    matched = False
    for pattern in patterns.split(","):
        negated = pattern.startswith("!")
        expression = re.escape(pattern[1:] if negated else pattern)
        if re.fullmatch(expression.replace(r"\*", ".*").replace(r"\?", "."), text, re.DOTALL):
            if negated:
                return False
            matched = True
    return matched


def principals_of(signers: list[Signer], key: Ed25519PublicKey, namespace: str,
                  at: datetime) -> tuple[list[str], list[str]]:
    """(the principals `key` may sign as in `namespace` at `at`, why other lines listing it
    do not count): every line is read, as `ssh-keygen -Y verify -I` would for each name."""
    print_ = fingerprint(key)
    names: list[str] = []
    refusals: list[str] = []
    for signer in signers:
        if signer.fingerprint != print_:
            continue
        why = signer.refusal(namespace, at)
        if why:
            refusals.append(why)
        else:
            names += [n for n in signer.principals if n not in names]
    return names, refusals


def _first_field(line: str) -> tuple[str, str]:
    """The principals field (which may be "quoted with spaces") and the rest."""
    if line.startswith('"'):
        end = line.find('"', 1)
        if end < 0:
            raise SignatureError(f"an unclosed quote in {line!r}")
        return line[1:end], line[end + 1:]
    found = re.match(r"(\S+)(.*)", line, re.DOTALL)
    assert found is not None  # the line is not blank
    return found[1], found[2]


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
