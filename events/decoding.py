"""From a stored entry to the event a fold sees.

Entries whose payload is our own event JSON decode directly. Entries whose payload is an
in-toto Statement v1 (attestations and rerun results, signed by the attester or rerunner) are
read into ``AttestationPosted`` / ``RerunCompleted``, with the signer's key id taken from the
verified envelope.
"""

from __future__ import annotations

import math
from typing import Annotated, Any

import msgspec

from events.entries import EVENT_PAYLOAD_TYPE, INTOTO_PAYLOAD_TYPE, Pending, StoredEntry
from events.errors import EventError
from events.types import (
    EVENT_DECODER,
    AnyEvent,
    AttestationPosted,
    Correctness,
    Harness,
    Measured,
    RerunCompleted,
    RerunCompletedV2,
    RunIngested,
    event_tag,
)
from events.types.runs import RunIngestedWire

__all__ = [
    "STATEMENT_TYPE",
    "InvalidStatement",
    "Statement",
    "decode_event",
    "decoded_event",
    "statement_event",
]


class InvalidStatement(EventError):
    """An in-toto statement is malformed or does not fit the entry type it was posted as."""


class _Digests(msgspec.Struct, frozen=True):
    sha256: str


class _Subject(msgspec.Struct, frozen=True):
    name: str
    digest: _Digests


class Statement(msgspec.Struct, frozen=True, rename={"type_": "_type"}):
    """in-toto Statement v1 (the fields we read)."""

    type_: str
    subject: list[_Subject]
    predicateType: str
    predicate: dict[str, Any] = {}


_STATEMENT = msgspec.json.Decoder(Statement)
STATEMENT_TYPE = "https://in-toto.io/Statement/v1"


class _RerunPredicate(msgspec.Struct, frozen=True):
    correctnessPassed: bool
    withinTolerance: bool
    measured: Measured | None = None
    requestId: str | None = None
    toleranceVersion: str | None = None


MAX_SAMPLES = 10_000
"""The most samples one rerun result carries."""


class _RerunPredicateV2(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The rerun predicate v2: measurements only. A verdict of the rerunner's own (such as
    ``withinTolerance``) is an unknown field, so the statement is malformed."""

    requestId: Annotated[str, msgspec.Meta(pattern=r"^sha256:[0-9a-f]{64}\Z")]
    samples: Annotated[
        tuple[Annotated[float, msgspec.Meta(gt=0)], ...],
        msgspec.Meta(min_length=1, max_length=MAX_SAMPLES),
    ]
    correctness: Correctness
    environment: Annotated[
        dict[str, Annotated[str, msgspec.Meta(max_length=200)]], msgspec.Meta(max_length=16)
    ]
    harness: Harness


def statement_event(
    entry_type: str, payload: bytes, signer: str
) -> AttestationPosted | RerunCompleted | RerunCompletedV2:
    """Read an in-toto statement as the event ``entry_type`` names.

    Raises:
        InvalidStatement: not an in-toto Statement v1 with exactly one run subject (by sha256),
            or a rerun predicate that lacks its fields.
    """
    try:
        statement = _STATEMENT.decode(payload)
    except msgspec.DecodeError as exc:
        raise InvalidStatement(f"not an in-toto statement: {exc}") from None
    if statement.type_ != STATEMENT_TYPE:
        raise InvalidStatement(f"statement _type must be {STATEMENT_TYPE}")
    if len(statement.subject) != 1:
        raise InvalidStatement("a statement must name exactly one run as its subject")
    hex_digest = statement.subject[0].digest.sha256
    if len(hex_digest) != 64 or any(c not in "0123456789abcdef" for c in hex_digest):
        raise InvalidStatement("the subject digest must be 64 lowercase hex characters")
    run_digest = "sha256:" + hex_digest
    if entry_type == "attestation.posted.v1":
        return AttestationPosted(
            runDigest=run_digest,
            predicateType=statement.predicateType,
            predicate=statement.predicate,
            attester=signer,
        )
    if entry_type == "rerun.completed.v1":
        try:
            result = msgspec.convert(statement.predicate, _RerunPredicate)
        except msgspec.ValidationError as exc:
            raise InvalidStatement(f"rerun predicate: {exc}") from None
        return RerunCompleted(
            runDigest=run_digest,
            correctnessPassed=result.correctnessPassed,
            withinTolerance=result.withinTolerance,
            rerunner=signer,
            measured=result.measured,
            requestId=result.requestId,
            toleranceVersion=result.toleranceVersion,
        )
    if entry_type == "rerun.completed.v2":
        try:
            v2 = msgspec.convert(statement.predicate, _RerunPredicateV2)
        except msgspec.ValidationError as exc:
            raise InvalidStatement(f"rerun predicate: {exc}") from None
        if not all(math.isfinite(x) for x in v2.samples):
            raise InvalidStatement("rerun predicate: every sample must be finite")
        return RerunCompletedV2(
            runDigest=run_digest,
            requestId=v2.requestId,
            rerunner=signer,
            samples=v2.samples,
            correctness=v2.correctness,
            environment=v2.environment,
            harness=v2.harness,
        )
    raise InvalidStatement(f"an in-toto statement cannot be a {entry_type} entry")


_RUN_WIRE = msgspec.json.Decoder(RunIngestedWire)
_MANIFEST = msgspec.json.Decoder(dict[str, Any])
# Manifest bytes -> the manifest, for the referenced manifests (protocol, environment, workload,
# ...) that many runs carry byte for byte. Keyed by the bytes themselves, so a hit is exactly
# what decoding would give; the folds never mutate a manifest. Bounded.
_SHARED: dict[bytes, dict[str, Any]] = {}
_SHARED_MAX = 4096


def _run_ingested(payload: bytes) -> RunIngested | None:
    """A run.ingested payload, decoding each shared manifest once (None: not well formed; the
    caller's full decode names the fault)."""
    try:
        wire = _RUN_WIRE.decode(payload)
        manifests: dict[str, dict[str, Any]] = {}
        for role, raw in wire.manifests.items():
            body = bytes(raw)
            if role == "run":  # a run's own manifest is never shared
                manifests[role] = _MANIFEST.decode(body)
                continue
            manifest = _SHARED.get(body)
            if manifest is None:
                manifest = _MANIFEST.decode(body)
                if len(_SHARED) >= _SHARED_MAX:
                    _SHARED.clear()
                _SHARED[body] = manifest
            manifests[role] = manifest
    except msgspec.DecodeError:
        return None
    fields = msgspec.structs.asdict(wire)
    fields["manifests"] = manifests
    return RunIngested(**fields)


def decoded_event(pending: Pending) -> AnyEvent | None:
    """The event a pending entry records, as ``decode_event`` will read it once it is stored
    (None when it does not decode: the append then names the fault as ``decode_event`` does)."""
    entry = StoredEntry(
        0,
        "",
        pending.type,
        pending.subject,
        pending.payload_type,
        pending.payload,
        "",
        pending.signer,
    )
    try:
        return decode_event(entry)
    except EventError:
        return None


def decode_event(entry: StoredEntry) -> AnyEvent:
    """The event an entry records.

    Raises:
        EventError: the payload does not decode as the entry's type says.
    """
    if entry.decoded is not None:
        return entry.decoded  # type: ignore[return-value]
    if entry.payload_type == EVENT_PAYLOAD_TYPE:
        if entry.type == "run.ingested.v1":
            fast = _run_ingested(entry.payload)
            if fast is not None:
                return fast
        try:
            event = EVENT_DECODER.decode(entry.payload)
        except msgspec.DecodeError as exc:
            raise EventError(f"entry {entry.seq}: payload is not an event: {exc}") from None
        tag = event_tag(event)
        if tag != entry.type:
            raise EventError(
                f"entry {entry.seq}: the entry says {entry.type} but the payload is {tag}"
            )
        return event
    if entry.payload_type == INTOTO_PAYLOAD_TYPE:
        return statement_event(entry.type, entry.payload, entry.signer)
    raise EventError(f"entry {entry.seq}: unknown payload type {entry.payload_type!r}")
