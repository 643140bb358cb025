"""C2SP signed-note keys: key names, 4-byte key IDs, vkeys and Go sumdb private keys.

Spec: C2SP ``signed-note.md`` ("Format", "Signatures", "Ed25519 signatures"); the private key
string is golang.org/x/mod/sumdb/note's ``PRIVATE+KEY+name+keyid+key``.
"""

from __future__ import annotations

import hashlib
import string
from dataclasses import dataclass

from keys._base64 import b64decode, b64encode
from keys.ed25519 import SigningKey, VerifyingKey
from keys.errors import KeyringError

__all__ = [
    "NoteSigner",
    "NoteVerifier",
    "note_key_hash",
    "parse_skey",
    "parse_vkey",
    "valid_key_name",
    "vkey",
]

_ALG_ED25519 = 0x01
_HEX = frozenset(string.hexdigits)


def valid_key_name(name: str) -> bool:
    """Return whether ``name`` is a valid key name: non-empty UTF-8 with no Unicode spaces and
    no ``+`` ("Format"). Raises nothing."""
    if not name or "+" in name or any(ch.isspace() for ch in name):
        return False
    try:
        name.encode()
    except UnicodeEncodeError:  # a lone surrogate is not UTF-8
        return False
    return True


def _check_name(name: str) -> None:
    if not valid_key_name(name):
        raise KeyringError(
            f"invalid key name {name!r}: it must be non-empty UTF-8 with no spaces and no '+'",
            name=name,
        )


def _parse_hash(hash16: str) -> bytes | None:
    if len(hash16) != 8 or not _HEX.issuperset(hash16):
        return None
    return bytes.fromhex(hash16)


def note_key_hash(name: str, public: VerifyingKey) -> bytes:
    """Return the 4-byte note key ID, SHA-256(name || 0x0A || 0x01 || public key)[:4]
    ("Ed25519 signatures").

    Raises:
        KeyringError: ``name`` is not a valid key name.
    """
    _check_name(name)
    return hashlib.sha256(b"%b\n\x01%b" % (name.encode(), public.raw)).digest()[:4]


def vkey(name: str, public: VerifyingKey) -> str:
    """Return the verifier key string ``name+<8 hex key ID>+base64(0x01 || public key)``.

    Raises:
        KeyringError: ``name`` is not a valid key name.
    """
    return f"{name}+{note_key_hash(name, public).hex()}+{b64encode(bytes([_ALG_ED25519]) + public.raw)}"


@dataclass(frozen=True, slots=True)
class NoteVerifier:
    """A trusted note key: its name, 4-byte key ID and Ed25519 public key.

    Construction checks that ``key_hash`` is the key ID of (``name``, ``public``) and raises
    :class:`KeyringError` otherwise; :meth:`for_key` computes it.
    """

    name: str
    key_hash: bytes
    public: VerifyingKey

    def __post_init__(self) -> None:
        if note_key_hash(self.name, self.public) != self.key_hash:
            raise KeyringError(
                f"key hash {self.key_hash.hex()} does not match key {self.name}",
                name=self.name,
            )

    @classmethod
    def for_key(cls, name: str, public: VerifyingKey) -> NoteVerifier:
        """Return the verifier for ``public`` under ``name``.

        Raises:
            KeyringError: ``name`` is not a valid key name.
        """
        return cls(name, note_key_hash(name, public), public)

    @property
    def vkey(self) -> str:
        """This verifier as a vkey string (see :func:`vkey`)."""
        return vkey(self.name, self.public)


def parse_vkey(text: str) -> NoteVerifier:
    """Return the verifier described by the vkey ``name+<8 hex key ID>+base64(0x01 || key)``.

    Only the first two ``+`` separate fields: standard base64 may itself contain ``+``.

    Raises:
        KeyringError: wrong field count, invalid name, key ID not 8 hex digits, bad base64,
            signature type other than 0x01 (Ed25519), key not 32 bytes, or a key ID that does
            not match the name and key.
    """
    parts = text.split("+", 2)
    if len(parts) != 3:
        raise KeyringError("malformed vkey: expected name+keyid+key")
    name, hash16, key64 = parts
    _check_name(name)
    key_hash = _parse_hash(hash16)
    if key_hash is None:
        raise KeyringError(f"malformed vkey {name}: key ID must be 8 hex digits", name=name)
    public = _decode_typed_key(key64, name, "vkey")
    if note_key_hash(name, public) != key_hash:
        raise KeyringError(
            f"vkey {name}: key ID {hash16} does not match the name and key", name=name
        )
    return NoteVerifier(name, key_hash, public)


def _decode_typed_key(key64: str, name: str, what: str) -> VerifyingKey:
    try:
        typed = b64decode(key64)
    except ValueError:
        raise KeyringError(f"malformed {what} {name}: key is not valid base64", name=name) from None
    if not typed or typed[0] != _ALG_ED25519:
        alg = f"0x{typed[0]:02x}" if typed else "missing"
        raise KeyringError(
            f"{what} {name}: unsupported signature type {alg} (only 0x01, Ed25519)", name=name
        )
    if len(typed) != 33:
        raise KeyringError(f"malformed {what} {name}: an Ed25519 key is 32 bytes", name=name)
    return VerifyingKey.from_raw(typed[1:])


class NoteSigner:
    """A note signing key: a key name and an Ed25519 signing key. Never shows the seed."""

    __slots__ = ("_key", "_verifier")

    def __init__(self, name: str, key: SigningKey) -> None:
        """Raises :class:`KeyringError` when ``name`` is not a valid key name."""
        self._key = key
        self._verifier = NoteVerifier.for_key(name, key.public)

    @property
    def name(self) -> str:
        """The key name."""
        return self._verifier.name

    @property
    def key(self) -> SigningKey:
        """The Ed25519 signing key."""
        return self._key

    @property
    def key_hash(self) -> bytes:
        """The 4-byte note key ID."""
        return self._verifier.key_hash

    @property
    def verifier(self) -> NoteVerifier:
        """The matching verifier."""
        return self._verifier

    @property
    def vkey(self) -> str:
        """The matching vkey string."""
        return self._verifier.vkey

    def __repr__(self) -> str:
        return f"NoteSigner(name={self.name!r}, key_hash={self.key_hash.hex()!r})"


def parse_skey(text: str) -> NoteSigner:
    """Return the signer in a Go sumdb private key ``PRIVATE+KEY+name+<hash>+base64(0x01||seed)``.

    Raises:
        KeyringError: the string is malformed, the type is not 0x01, the seed is not 32 bytes,
            or the key ID does not match the name and derived public key. The message never
            quotes the input.
    """
    parts = text.split("+", 4)
    if len(parts) != 5 or parts[0] != "PRIVATE" or parts[1] != "KEY":
        raise KeyringError("malformed private key: expected PRIVATE+KEY+name+keyid+key")
    _, _, name, hash16, key64 = parts
    _check_name(name)
    key_hash = _parse_hash(hash16)
    if key_hash is None:
        raise KeyringError(f"malformed private key {name}: key ID must be 8 hex digits", name=name)
    try:
        typed = b64decode(key64)
    except ValueError:
        raise KeyringError(f"malformed private key {name}: key is not base64", name=name) from None
    if len(typed) != 33 or typed[0] != _ALG_ED25519:
        raise KeyringError(f"private key {name}: not a 0x01 (Ed25519) 32-byte seed", name=name)
    signer = NoteSigner(name, SigningKey.from_seed(typed[1:]))
    if signer.key_hash != key_hash:
        raise KeyringError(f"private key {name}: key ID does not match the key", name=name)
    return signer
