"""C2SP signed notes with Ed25519 keys: signing and opening.

Spec: C2SP ``signed-note.md`` ("Format", "Signatures", "Ed25519 signatures"). Where the spec
leaves a choice, we follow golang.org/x/mod/sumdb/note: the signature block is everything after
the last blank line, at most 100 signature lines, repeated signatures are counted once, and a
signature line matching two configured verifiers is an error. Keys live in ``keys.notekeys``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import msgspec

from keys._base64 import b64decode, b64encode
from keys.errors import KeyringError, MalformedNote, UnknownKey, VerificationError
from keys.notekeys import NoteSigner, NoteVerifier, valid_key_name

__all__ = ["MAX_SIGNATURES", "VerifiedNote", "open_note", "sign_note"]

MAX_SIGNATURES = 100
_SIG_PREFIX = "\u2014 "  # em dash, space
_CONTROL = re.compile("[\x00-\x09\x0b-\x1f]")


def _encode_text(text: str) -> bytes:
    # "Format": the text ends in newline, is valid UTF-8 and holds no ASCII control character
    # other than newline.
    if not text:
        raise KeyringError("note text is empty")
    if not text.endswith("\n"):
        raise KeyringError("note text does not end with a newline")
    if _CONTROL.search(text):
        raise KeyringError("note text contains an ASCII control character other than newline")
    try:
        return text.encode()
    except UnicodeEncodeError:
        raise KeyringError("note text is not valid UTF-8") from None


def sign_note(text: str, signers: Sequence[NoteSigner]) -> bytes:
    """Return the signed note: ``text``, a blank line, then one signature line per signer.

    Each line is ``— <name> base64(key ID || Ed25519 signature of the text bytes)``.

    Raises:
        KeyringError: ``text`` is empty, does not end in a newline, is not valid UTF-8 or holds
            an ASCII control character other than newline; or ``signers`` is empty.
    """
    body = _encode_text(text)
    if not signers:
        raise KeyringError("a signed note needs at least one signer")
    lines = [
        f"{_SIG_PREFIX}{s.name} {b64encode(s.key_hash + s.key.sign(body))}\n".encode()
        for s in signers
    ]
    return b"".join([body, b"\n", *lines])


class VerifiedNote(msgspec.Struct, frozen=True):
    """A note whose signatures verified: its text and the names of the keys that signed it."""

    text: str
    verified_by: tuple[str, ...]


def open_note(note: bytes, verifiers: Sequence[NoteVerifier]) -> VerifiedNote:
    """Verify the signed note ``note`` against ``verifiers`` and return its text.

    Signatures whose (name, key ID) matches no verifier are ignored. Every signature by a known
    verifier must verify, and at least one must.

    Raises:
        MalformedNote: the note is not well formed, or has more than 100 signature lines.
        VerificationError: a signature by a known verifier does not verify.
        UnknownKey: no signature is by a known verifier.
        KeyringError: a signature line matches two or more verifiers (ambiguous key).
    """
    # (1) "Format": valid UTF-8 with no ASCII control characters other than newline.
    try:
        decoded = note.decode()
    except UnicodeDecodeError:
        raise MalformedNote("signed note is not valid UTF-8") from None
    if _CONTROL.search(decoded):
        raise MalformedNote("signed note contains an ASCII control character other than newline")
    # (2) "Format": the text is separated from the signatures by the last empty line; the text
    # keeps its final newline, and the signature block is non-empty and ends in a newline.
    body, lines = split_note(note)
    if len(lines) > MAX_SIGNATURES:
        raise MalformedNote(f"signed note has more than {MAX_SIGNATURES} signatures")
    # (3) "Format", "Signatures": each line is "— <name> base64(key ID || signature)".
    parsed = [parse_signature_line(line) for line in lines]
    # (4) "Signatures": ignore unknown (name, key ID); verify each known one; repeated
    # signatures by one verifier count once (sumdb/note).
    known: dict[tuple[str, bytes], list[NoteVerifier]] = {}
    for verifier in verifiers:
        known.setdefault((verifier.name, verifier.key_hash), []).append(verifier)
    verified_by: list[str] = []
    seen: set[tuple[str, bytes]] = set()
    for name, key_hash, signature in parsed:
        ident = (name, key_hash)
        candidates = known.get(ident)
        if candidates is None or ident in seen:
            continue
        if len(candidates) > 1:
            # "Signatures": colliding name and key ID "can lead to errors"; sumdb/note refuses.
            raise KeyringError(
                f"ambiguous key {name}+{key_hash.hex()}: {len(candidates)} verifiers match",
                name=name,
            )
        seen.add(ident)
        try:
            candidates[0].public.verify(signature, body)
        except VerificationError:
            raise VerificationError(
                f"signed note: invalid signature by {name}", name=name
            ) from None
        verified_by.append(name)
    # (5) "Signatures": "If no signature from a known key verifies successfully, clients MUST
    # reject the note."
    if not verified_by:
        raise UnknownKey(
            "signed note has no signature by a known key", names=[name for name, _, _ in parsed]
        )
    return VerifiedNote(text=body.decode(), verified_by=tuple(verified_by))


def split_note(note: bytes) -> tuple[bytes, list[str]]:
    """A signed note's text (with its final newline) and its signature lines (without theirs):
    the text ends at the last empty line ("Format").

    Raises:
        MalformedNote: no blank line before the signatures, an empty or unterminated signature
            block, or signatures that are not UTF-8.
    """
    split = note.rfind(b"\n\n")
    if split < 0:
        raise MalformedNote("signed note has no blank line before its signatures")
    try:
        block = note[split + 2 :].decode()
    except UnicodeDecodeError:
        raise MalformedNote("signed note is not valid UTF-8") from None
    if not block or not block.endswith("\n"):
        raise MalformedNote("signed note's signature block is empty or lacks a final newline")
    return note[: split + 1], block[:-1].split("\n")


def parse_signature_line(line: str) -> tuple[str, bytes, bytes]:
    """A signature line ``— <name> base64(key ID || signature)``: the name, the 4-byte key ID
    and the rest.

    Raises:
        MalformedNote: it is not such a line.
    """
    if not line.startswith(_SIG_PREFIX):
        raise MalformedNote("signed note has a line in its signature block that is not a signature")
    name, _, sig64 = line[len(_SIG_PREFIX) :].partition(" ")
    if not valid_key_name(name) or not sig64:
        raise MalformedNote("signed note has a malformed signature line")
    try:
        raw = b64decode(sig64)
    except ValueError:
        raise MalformedNote("signed note has a signature that is not valid base64") from None
    if len(raw) < 5:
        raise MalformedNote("signed note has a signature shorter than a key ID plus one byte")
    return name, raw[:4], raw[4:]
