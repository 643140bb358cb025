"""C2SP cosignatures (``tlog-cosignature``, the Ed25519 type ``cosignature/v1``): witness keys,
their vkeys, cosigning a checkpoint and counting the cosignatures on one.

Spec: C2SP ``tlog-cosignature.md`` ("Format", "Ed25519 signed message"):

- the key ID is ``SHA-256(name || "\\n" || 0x04 || public key)[:4]``, and a witness vkey is the
  signed-note vkey with signature type 0x04;
- a cosignature is a note signature line ``— <name> base64(key ID || timestamp || signature)``,
  the timestamp a big-endian u64 of POSIX seconds (at most 2^63 - 1);
- the signed message is ``cosignature/v1\\n``, ``time <timestamp>\\n`` and then the checkpoint's
  whole note body (its final newline included, no signature lines).

A cosignature is a statement that, at its time, the witness had verified that the checkpoint is
the largest consistent tree head it had seen of the log its origin line names.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from keys._base64 import b64decode, b64encode
from keys.ed25519 import SigningKey, VerifyingKey
from keys.errors import KeyringError, MalformedNote, VerificationError
from keys.notekeys import valid_key_name
from keys.notes import parse_signature_line, split_note

__all__ = [
    "COSIGNATURE_V1",
    "MAX_TIMESTAMP",
    "Cosignature",
    "WitnessSigner",
    "WitnessVerifier",
    "cosignature_key_hash",
    "cosignature_message",
    "cosignatures",
    "parse_witness_skey",
    "parse_witness_vkey",
    "witness_vkey",
]

COSIGNATURE_V1 = 0x04
"""The signature type of an Ed25519 ``cosignature/v1`` key (in its key ID and vkey)."""
MAX_TIMESTAMP = 2**63 - 1
_PREFIX = "\u2014 "  # em dash, space: a note signature line
_LENGTH = 4 + 8 + 64  # key ID, timestamp, Ed25519 signature


def _check_name(name: str) -> None:
    if not valid_key_name(name):
        raise KeyringError(
            f"invalid witness name {name!r}: it must be non-empty UTF-8 with no spaces and no '+'",
            name=name,
        )


def cosignature_key_hash(name: str, public: VerifyingKey) -> bytes:
    """The 4-byte key ID of a ``cosignature/v1`` key: SHA-256(name || 0x0A || 0x04 || key)[:4].

    Raises:
        KeyringError: ``name`` is not a valid key name.
    """
    _check_name(name)
    return hashlib.sha256(b"%b\n\x04%b" % (name.encode(), public.raw)).digest()[:4]


def witness_vkey(name: str, public: VerifyingKey) -> str:
    """The witness's vkey: ``name+<8 hex key ID>+base64(0x04 || public key)``.

    Raises:
        KeyringError: ``name`` is not a valid key name.
    """
    key_id = cosignature_key_hash(name, public).hex()
    return f"{name}+{key_id}+{b64encode(bytes([COSIGNATURE_V1]) + public.raw)}"


def cosignature_message(body: bytes, timestamp: int) -> bytes:
    """What a ``cosignature/v1`` signs: the header line, the time line and the note body.

    Raises:
        KeyringError: ``timestamp`` is negative or above 2^63 - 1, or ``body`` does not end in
            a newline.
    """
    if not 0 <= timestamp <= MAX_TIMESTAMP:
        raise KeyringError(f"a cosignature's timestamp must be 0 to 2^63 - 1, not {timestamp}")
    if not body.endswith(b"\n"):
        raise KeyringError("a cosigned note body ends in a newline")
    return b"cosignature/v1\ntime %d\n%b" % (timestamp, body)


@dataclass(frozen=True, slots=True)
class Cosignature:
    """A cosignature that verified: the witness's name and the time it signed at."""

    name: str
    timestamp: int


@dataclass(frozen=True, slots=True)
class WitnessVerifier:
    """A trusted witness key: its name, 4-byte ``cosignature/v1`` key ID and public key.

    Construction checks the key ID against the name and key (:class:`KeyringError`)."""

    name: str
    key_hash: bytes
    public: VerifyingKey

    def __post_init__(self) -> None:
        if cosignature_key_hash(self.name, self.public) != self.key_hash:
            raise KeyringError(
                f"key ID {self.key_hash.hex()} does not match witness key {self.name}",
                name=self.name,
            )

    @classmethod
    def for_key(cls, name: str, public: VerifyingKey) -> WitnessVerifier:
        """The verifier of ``public`` under ``name``."""
        return cls(name, cosignature_key_hash(name, public), public)

    @property
    def vkey(self) -> str:
        """This verifier as a vkey (:func:`witness_vkey`)."""
        return witness_vkey(self.name, self.public)

    def verify_line(self, line: str, body: bytes) -> Cosignature | None:
        """The cosignature in the note signature line ``line`` (no newline) over ``body``, if
        the line is this witness's (name and key ID); None if it is another key's.

        Raises:
            MalformedNote: the line is not a note signature line, or this witness's line is not
                key ID, timestamp and signature.
            VerificationError: this witness's line does not verify over ``body``.
        """
        name, key_hash, rest = parse_signature_line(line)
        if name != self.name or key_hash != self.key_hash:
            return None
        if len(rest) != _LENGTH - 4:
            raise MalformedNote(
                f"cosignature by {name}: {len(rest) + 4} bytes, not key ID, timestamp and"
                " an Ed25519 signature (76)",
                name=name,
            )
        timestamp = int.from_bytes(rest[:8], "big")
        if timestamp > MAX_TIMESTAMP:
            raise MalformedNote(f"cosignature by {name}: its timestamp exceeds 2^63 - 1", name=name)
        try:
            self.public.verify(rest[8:], cosignature_message(body, timestamp))
        except VerificationError:
            raise VerificationError(f"cosignature by {name} does not verify", name=name) from None
        return Cosignature(name, timestamp)


class WitnessSigner:
    """A witness's signing key: its name and Ed25519 key. Never shows the seed."""

    __slots__ = ("_key", "_verifier")

    def __init__(self, name: str, key: SigningKey) -> None:
        """Raises :class:`KeyringError` when ``name`` is not a valid key name."""
        self._key = key
        self._verifier = WitnessVerifier.for_key(name, key.public)

    @property
    def name(self) -> str:
        return self._verifier.name

    @property
    def verifier(self) -> WitnessVerifier:
        return self._verifier

    @property
    def vkey(self) -> str:
        return self._verifier.vkey

    @property
    def skey(self) -> str:
        """The private key string ``PRIVATE+KEY+name+<key ID>+base64(0x04 || seed)`` (Go
        sumdb's private key form, with the cosignature type). Secret: write it to a 0600 file."""
        key_id = self._verifier.key_hash.hex()
        typed = b64encode(bytes([COSIGNATURE_V1]) + self._key.seed)
        return f"PRIVATE+KEY+{self.name}+{key_id}+{typed}"

    def cosign(self, body: bytes, timestamp: int) -> str:
        """The cosignature line (with its newline) of the note body ``body`` at ``timestamp``.

        Raises:
            KeyringError: a timestamp out of range, or a body without its final newline.
        """
        signature = self._key.sign(cosignature_message(body, timestamp))
        raw = self._verifier.key_hash + timestamp.to_bytes(8, "big") + signature
        return f"{_PREFIX}{self.name} {b64encode(raw)}\n"

    def __repr__(self) -> str:
        return f"WitnessSigner(name={self.name!r}, key_hash={self._verifier.key_hash.hex()!r})"


def _typed_key(key64: str, name: str, what: str) -> bytes:
    try:
        typed = b64decode(key64)
    except ValueError:
        raise KeyringError(f"malformed {what} {name}: key is not valid base64", name=name) from None
    if not typed or typed[0] != COSIGNATURE_V1:
        kind = f"0x{typed[0]:02x}" if typed else "missing"
        raise KeyringError(
            f"{what} {name}: signature type {kind}, not 0x04 (an Ed25519 cosignature/v1 key)",
            name=name,
        )
    if len(typed) != 33:
        raise KeyringError(f"malformed {what} {name}: an Ed25519 key is 32 bytes", name=name)
    return typed[1:]


def _key_id(hash16: str, name: str, what: str) -> bytes:
    try:
        if len(hash16) != 8:
            raise ValueError
        return bytes.fromhex(hash16)
    except ValueError:
        raise KeyringError(
            f"malformed {what} {name}: key ID must be 8 hex digits", name=name
        ) from None


def parse_witness_vkey(text: str) -> WitnessVerifier:
    """The witness key in the vkey ``name+<8 hex key ID>+base64(0x04 || key)``.

    Raises:
        KeyringError: not three fields, an invalid name, a key ID not 8 hex digits or not the
            name's and key's, bad base64, a type other than 0x04 (a log's 0x01 vkey says so), or
            a key not 32 bytes.
    """
    parts = text.strip().split("+", 2)
    if len(parts) != 3:
        raise KeyringError("malformed witness vkey: expected name+keyid+key")
    name, hash16, key64 = parts
    _check_name(name)
    key_hash = _key_id(hash16, name, "witness vkey")
    public = VerifyingKey.from_raw(_typed_key(key64, name, "witness vkey"))
    return WitnessVerifier(name, key_hash, public)


def parse_witness_skey(text: str) -> WitnessSigner:
    """The witness signer in ``PRIVATE+KEY+name+<key ID>+base64(0x04 || seed)``.

    Raises:
        KeyringError: malformed, another type, or a key ID that is not the key's. The message
            never quotes the input.
    """
    parts = text.strip().split("+", 4)
    if len(parts) != 5 or parts[:2] != ["PRIVATE", "KEY"]:
        raise KeyringError("malformed witness private key: expected PRIVATE+KEY+name+keyid+key")
    _, _, name, hash16, key64 = parts
    _check_name(name)
    key_hash = _key_id(hash16, name, "witness private key")
    signer = WitnessSigner(
        name, SigningKey.from_seed(_typed_key(key64, name, "witness private key"))
    )
    if signer.verifier.key_hash != key_hash:
        raise KeyringError(f"witness private key {name}: key ID does not match the key", name=name)
    return signer


def cosignatures(note: bytes, witnesses: list[WitnessVerifier]) -> dict[str, Cosignature]:
    """The cosignatures on ``note`` by ``witnesses``, by witness name (a witness's latest, if it
    signed twice). Lines of other keys (the log's own, unknown witnesses) are ignored.

    Raises:
        MalformedNote: the note or a line of a given witness is malformed.
        VerificationError: a line of a given witness does not verify (an edited checkpoint or a
            forged cosignature: never counted, always refused).
    """
    body, lines = split_note(note)
    found: dict[str, Cosignature] = {}
    for line in lines:
        for witness in witnesses:
            got = witness.verify_line(line, body)
            if got is not None:
                old = found.get(got.name)
                if old is None or got.timestamp > old.timestamp:
                    found[got.name] = got
    return found
