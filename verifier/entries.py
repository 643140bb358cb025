"""The per-entry checks of ``benchproof verify`` that need no state (the leaf hash, the stored
payload digest, the payload against its type, the signature), run a chunk at a time on the
verifier's threads (the Ed25519 check releases the GIL, so they overlap with the sequential
reading) or, for a large log, in processes of their own. Each reads what it checks from the leaf
itself, the payload and signature decoded from base64 as the JSON is read."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from events.entries import EVENT_PAYLOAD_TYPE, INTOTO_PAYLOAD_TYPE, payload_digest
from events.merkle import leaf_hash
from keys import KeyringError, VerifyingKey, pae

__all__ = ["STATEMENT_TYPES", "Task", "check_entries", "payload_problem"]

STATEMENT_TYPES = frozenset({"attestation.posted.v1", "rerun.completed.v1", "rerun.completed.v2"})
"""The entry types an in-toto statement carries (attestations and rerun results, the signer's
own words); every other type is one of our events (``events.decoding.statement_event``)."""

Task = tuple[int, VerifyingKey | bytes | None, str, str, bytes, bytes]
"""(position, the key the signature must verify with: the key itself on a thread, its 32 raw
bytes in a checking process, None when the entry is refused already; entry type, stored payload
digest, leaf, stored leaf hash)"""


class _SignatureBytes(msgspec.Struct, frozen=True):
    keyid: str
    sig: bytes


class _EnvelopeBytes(msgspec.Struct, frozen=True):
    payloadType: str
    payload: bytes  # decoded from standard base64 as the JSON is read
    signatures: list[_SignatureBytes]


class _SignedLeaf(msgspec.Struct, frozen=True):
    envelope: _EnvelopeBytes


class _TypeOnly(msgspec.Struct):
    type: str


_TYPE = msgspec.json.Decoder(_TypeOnly)
_SIGNED = msgspec.json.Decoder(_SignedLeaf)
_KEYS: dict[bytes, VerifyingKey] = {}


def _key(key: VerifyingKey | bytes) -> VerifyingKey:
    if isinstance(key, VerifyingKey):
        return key
    public = _KEYS.get(key)
    if public is None:
        public = _KEYS[key] = VerifyingKey.from_raw(key)
    return public


def check_entries(
    part: Sequence[Task], columns: bool = True
) -> tuple[list[tuple[int, str]], list[bytes]]:
    """The per-entry checks that need no state, on the pool's threads or processes; and each
    leaf's hash, for the tree the caller grows in order. ``columns=False``: no payload digest is
    stored apart from the leaf."""
    failed = []
    hashes = []
    for seq, key, etype, digest, leaf, stored in part:
        lh = leaf_hash(leaf)
        hashes.append(lh)
        if stored != lh:
            failed.append((seq, f"entry {seq}: the stored leaf hash does not match the leaf bytes"))
        if key is None:
            continue
        try:
            env = _SIGNED.decode(leaf).envelope
        except msgspec.DecodeError as exc:
            what = (
                "the payload or signature is not base64"
                if "base64" in str(exc)
                else f"the leaf is not a well-formed entry ({exc})"
            )
            failed.append((seq, f"entry {seq}: {what}"))
            continue
        payload, ptype, signature = env.payload, env.payloadType, env.signatures[0]
        if columns and payload_digest(payload, ptype, signature.keyid) != digest:
            failed.append(
                (seq, f"entry {seq}: the stored payload digest does not match the payload")
            )
        reason = payload_problem(seq, ptype, etype, payload)
        if reason is not None:
            failed.append((seq, reason))
            continue
        try:
            _key(key).verify(signature.sig, pae(ptype, payload))
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
