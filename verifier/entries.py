"""The per-entry checks of ``benchproof verify`` that need no state (the leaf hash, the stored
payload digest, the payload against its type, the signature), run a chunk at a time on the
verifier's threads: the Ed25519 check releases the GIL, so they overlap with the sequential
reading."""

from __future__ import annotations

import binascii
from collections.abc import Sequence

import msgspec

from events.entries import EVENT_PAYLOAD_TYPE, INTOTO_PAYLOAD_TYPE, payload_digest
from events.merkle import leaf_hash
from keys import KeyringError, VerifyingKey, pae

__all__ = ["STATEMENT_TYPES", "Task", "check_entries", "payload_problem"]

STATEMENT_TYPES = frozenset({"attestation.posted.v1", "rerun.completed.v1", "rerun.completed.v2"})
"""The entry types an in-toto statement carries (attestations and rerun results, the signer's
own words); every other type is one of our events (``events.decoding.statement_event``)."""

Task = tuple[int, VerifyingKey | None, str, str, str, str, str, str, bytes, bytes]
"""(position, key or None when the entry is already refused, signature b64, payload b64,
payload type, entry type, stored digest, signer, leaf, stored leaf hash)"""


class _TypeOnly(msgspec.Struct):
    type: str


_TYPE = msgspec.json.Decoder(_TypeOnly)


def check_entries(
    part: Sequence[Task], columns: bool = True
) -> tuple[list[tuple[int, str]], list[bytes]]:
    """The per-entry checks that need no state, on the pool's threads; and each leaf's hash,
    for the tree the caller grows in order. ``columns=False``: no payload digest is stored
    apart from the leaf."""
    failed = []
    hashes = []
    for seq, public, sig64, payload64, ptype, etype, digest, signer, leaf, stored in part:
        lh = leaf_hash(leaf)
        hashes.append(lh)
        if stored != lh:
            failed.append((seq, f"entry {seq}: the stored leaf hash does not match the leaf bytes"))
        if public is None:
            continue
        try:
            payload = binascii.a2b_base64(payload64, strict_mode=True)
            sig = binascii.a2b_base64(sig64, strict_mode=True)
        except binascii.Error:
            failed.append((seq, f"entry {seq}: the payload or signature is not base64"))
            continue
        if columns and payload_digest(payload, ptype, signer) != digest:
            failed.append(
                (seq, f"entry {seq}: the stored payload digest does not match the payload")
            )
        reason = payload_problem(seq, ptype, etype, payload)
        if reason is not None:
            failed.append((seq, reason))
            continue
        try:
            public.verify(sig, pae(ptype, payload))
        except KeyringError:
            failed.append((seq, f"entry {seq}: the signature does not verify"))
    return failed, hashes


def payload_problem(seq: int, ptype: str, etype: str, payload: bytes) -> str | None:
    """Why the payload cannot be what the entry says it is, if it cannot."""
    if ptype == EVENT_PAYLOAD_TYPE:
        try:
            tag = _TYPE.decode(payload).type
        except msgspec.DecodeError:
            return f"entry {seq}: the payload is not an event"
        return (
            None
            if tag == etype
            else f"entry {seq}: the entry says {etype} but the payload is {tag}"
        )
    if ptype == INTOTO_PAYLOAD_TYPE and etype in STATEMENT_TYPES:
        return None
    return f"entry {seq}: payload type {ptype!r} cannot carry {etype}"
