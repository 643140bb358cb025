"""An independent verifier written in the tests from RFC 6962 §2.1 and C2SP signed-note; it
shares no code with the project (only ``cryptography`` for Ed25519)."""

from __future__ import annotations

import base64
import hashlib

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey


def h(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def mth(leaves: list[bytes]) -> bytes:
    """MTH over leaf *inputs* (RFC 6962 §2.1)."""
    if not leaves:
        return h(b"")
    if len(leaves) == 1:
        return h(b"\x00" + leaves[0])
    k = 1
    while k * 2 < len(leaves):
        k *= 2
    return h(b"\x01" + mth(leaves[:k]) + mth(leaves[k:]))


def _split(n: int) -> int:
    k = 1
    while k * 2 < n:
        k *= 2
    return k


def root_from_path(m: int, n: int, leaf_hash: bytes, proof: list[bytes]) -> bytes:
    """Invert PATH(m, D[n]); raises AssertionError on a malformed proof."""
    if n == 1:
        assert not proof
        return leaf_hash
    assert proof
    k, sibling = _split(n), proof[-1]
    if m < k:
        return h(b"\x01" + root_from_path(m, k, leaf_hash, proof[:-1]) + sibling)
    return h(b"\x01" + sibling + root_from_path(m - k, n - k, leaf_hash, proof[:-1]))


def roots_from_subproof(
    m: int, n: int, b: bool, proof: list[bytes], old_root: bytes
) -> tuple[bytes, bytes]:
    """Invert SUBPROOF(m, D[n], b) into (old subtree hash, new subtree hash)."""
    if m == n:
        if b:
            assert not proof
            return old_root, old_root
        assert len(proof) == 1
        return proof[0], proof[0]
    assert proof
    k, outer = _split(n), proof[-1]
    if m <= k:
        old, new = roots_from_subproof(m, k, b, proof[:-1], old_root)
        return old, h(b"\x01" + new + outer)
    old, new = roots_from_subproof(m - k, n - k, False, proof[:-1], old_root)
    return h(b"\x01" + outer + old), h(b"\x01" + outer + new)


def open_checkpoint(note: bytes, vkey: str) -> tuple[str, int, bytes]:
    """Verify a checkpoint note with a C2SP vkey; return (origin, size, root)."""
    name, keyhash, key64 = vkey.strip().split("+", 2)
    raw = base64.b64decode(key64)
    assert raw[0] == 1
    assert len(raw) == 33
    assert h(name.encode() + b"\n" + raw)[:4].hex() == keyhash
    text, _, sigs = note.partition(b"\n\n")
    verified = False
    for line in sigs.decode().splitlines():
        signer, sig64 = line.removeprefix("\u2014 ").rsplit(" ", 1)
        sig = base64.b64decode(sig64)
        if signer == name and sig[:4].hex() == keyhash:
            try:
                Ed25519PublicKey.from_public_bytes(raw[1:]).verify(sig[4:], text + b"\n")
            except InvalidSignature:
                raise AssertionError("checkpoint signature does not verify") from None
            verified = True
    assert verified, "no signature by the log key"
    origin, size, root64, tail = (text + b"\n").decode().split("\n")
    assert tail == ""
    return origin, int(size), base64.b64decode(root64)
