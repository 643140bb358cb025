"""Log entries: the exact leaf bytes and how to read them back.

A leaf is the JSON encoding of ``{"seq", "recordedAt", "type", "subject", "envelope"}`` (fields
in that order), where ``envelope`` is a DSSE envelope signed by the actor, embedded byte for byte
as the signer produced it. Leaves are stored as these exact bytes and never re-encoded; the
Merkle leaf hash is ``SHA-256(0x00 || leaf)``.
"""

from __future__ import annotations

import binascii
import hashlib
import re
from datetime import UTC, datetime

import msgspec

from events.errors import LogCorrupted

__all__ = [
    "DIGEST_NAMED",
    "EVENT_PAYLOAD_TYPE",
    "INSTANT",
    "INTOTO_PAYLOAD_TYPE",
    "DsseEnvelope",
    "DsseSignature",
    "Entry",
    "Pending",
    "StoredEntry",
    "decode_leaf",
    "encode_leaf",
    "format_instant",
    "payload_digest",
    "read_entry",
]

EVENT_PAYLOAD_TYPE = "application/vnd.benchproof.event+json"
INTOTO_PAYLOAD_TYPE = "application/vnd.in-toto+json"


class DsseSignature(msgspec.Struct, frozen=True):
    keyid: str
    sig: str


class DsseEnvelope(msgspec.Struct, frozen=True):
    """The DSSE envelope as stored (wire names)."""

    payloadType: str
    payload: str
    signatures: list[DsseSignature]


class _LeafOut(msgspec.Struct, frozen=True):
    seq: int
    recordedAt: str
    type: str
    subject: str
    envelope: msgspec.Raw


class Entry(msgspec.Struct, frozen=True):
    """A decoded leaf."""

    seq: int
    recordedAt: str
    type: str
    subject: str
    envelope: DsseEnvelope


class Pending(msgspec.Struct, frozen=True):
    """An event on its way into the log: its tag, subject and encoded payload, and, when the
    actor signed it elsewhere (an attestation), the actor's envelope as received."""

    type: str
    subject: str
    payload: bytes
    payload_type: str = EVENT_PAYLOAD_TYPE
    envelope: bytes | None = None
    decoded: object = None  # the event the payload encodes, when the caller has it at hand
    signer: str = ""  # the key id that signs (or signed) it


class StoredEntry(msgspec.Struct, frozen=True):
    """An entry as committed, with the facts a projection needs."""

    seq: int
    recordedAt: str
    type: str
    subject: str
    payload_type: str
    payload: bytes
    payload_digest: str  # empty when read back for a type outside DIGEST_NAMED (see read_entry)
    signer: str
    decoded: object = None  # the event, when the appender passed it along (saves a decode)


class _EnvelopeBytes(msgspec.Struct, frozen=True):
    payloadType: str
    payload: bytes  # msgspec decodes base64 as strictly as binascii's strict mode
    signatures: list[DsseSignature]


class _LeafBytes(msgspec.Struct, frozen=True):
    seq: int
    recordedAt: str
    type: str
    subject: str
    envelope: _EnvelopeBytes


_LEAF_ENCODER = msgspec.json.Encoder()
_LEAF_DECODER = msgspec.json.Decoder(Entry)


def encode_leaf(seq: int, recorded_at: str, type_: str, subject: str, envelope: bytes) -> bytes:
    """The exact leaf bytes of an entry."""
    return _LEAF_ENCODER.encode(_LeafOut(seq, recorded_at, type_, subject, msgspec.Raw(envelope)))


def decode_leaf(leaf: bytes, *, position: int) -> Entry:
    """Decode leaf bytes.

    Raises:
        LogCorrupted: the bytes are not a well-formed entry (``position`` names it).
    """
    try:
        return _LEAF_DECODER.decode(leaf)
    except msgspec.DecodeError as exc:
        raise LogCorrupted(f"entry {position}: malformed leaf: {exc}", position=position) from None


_LEAF_BYTES_DECODER = msgspec.json.Decoder(_LeafBytes)

# Entry types whose projection rows are named by their payload digest (attestations, reports,
# reruns, citations): a replay computes the digest only for these.
DIGEST_NAMED = frozenset(
    {
        "attestation.posted.v1",
        "report.filed.v1",
        "rerun.requested.v1",
        "rerun.claimed.v1",
        "rerun.claimed.v2",
        "rerun.completed.v1",
        "rerun.completed.v2",
        "citation.notarized.v1",
    }
)


def read_entry(leaf: bytes, *, position: int) -> StoredEntry:
    """A leaf as projections see it: payload decoded, in one pass; ``payload_digest`` is
    computed for the entry types in ``DIGEST_NAMED`` and empty for the others.

    Raises:
        LogCorrupted: the leaf or its payload does not decode.
    """
    try:
        leaf_ = _LEAF_BYTES_DECODER.decode(leaf)
    except msgspec.DecodeError:
        # The two-step reading names the fault (malformed leaf, or bad base64); should it read
        # the leaf after all, its reading stands.
        entry = decode_leaf(leaf, position=position)
        return _stored(
            position,
            entry.recordedAt,
            entry.type,
            entry.subject,
            entry.envelope.payloadType,
            decode_payload(entry.envelope, position=position),
            entry.envelope.signatures,
        )
    envelope = leaf_.envelope
    return _stored(
        position,
        leaf_.recordedAt,
        leaf_.type,
        leaf_.subject,
        envelope.payloadType,
        envelope.payload,
        envelope.signatures,
    )


def _stored(
    seq: int,
    recorded_at: str,
    type_: str,
    subject: str,
    ptype: str,
    payload: bytes,
    signatures: list[DsseSignature],
) -> StoredEntry:
    signer = signatures[0].keyid if signatures else ""
    digest = payload_digest(payload, ptype, signer) if type_ in DIGEST_NAMED else ""
    return StoredEntry(seq, recorded_at, type_, subject, ptype, payload, digest, signer)


def decode_payload(envelope: DsseEnvelope, *, position: int) -> bytes:
    """The payload bytes of an envelope (strict base64).

    Raises:
        LogCorrupted: the payload is not valid base64.
    """
    try:
        return binascii.a2b_base64(envelope.payload, strict_mode=True)
    except ValueError:  # binascii.Error is one; a character outside ASCII raises the other
        raise LogCorrupted(f"entry {position}: payload is not base64", position=position) from None


INSTANT = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\Z")
"""An instant as the log writes its own (``format_instant``)."""


def format_instant(when: datetime) -> str:
    """RFC 3339 UTC with milliseconds and ``Z``: the log's own recording time."""
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z"


def payload_digest(payload: bytes, payload_type: str = EVENT_PAYLOAD_TYPE, signer: str = "") -> str:
    """The content digest that makes appends idempotent: ``sha256:<hex>`` of the payload type,
    the signer's key id and the payload. The same statement appended twice by the same actor is
    one entry; the same words signed by two actors (two rerunners reporting the same figures)
    are two."""
    h = hashlib.sha256(payload_type.encode())
    h.update(b"\n" + signer.encode() + b"\n")
    h.update(payload)
    return "sha256:" + h.hexdigest()
