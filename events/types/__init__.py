"""Every stored event type, as frozen msgspec Structs in one tagged union (``AnyEvent``).

Tags are ``family.verb.vN`` and never change; a changed meaning gets a new tag.
"""

from __future__ import annotations

import msgspec

from events.types.attestations import (
    ATTESTATION_PREDICATE,
    AttestationEvent,
    AttestationHidden,
    AttestationPosted,
    AttestationWithdrawn,
    ReportEvent,
    ReportFiled,
    ReportResolved,
)
from events.types.base import Event, KeyId, Origin, Sha256
from events.types.keys import KeyEvent, KeyGranted, KeyRegistered, KeyRevoked, KeyRotated, Role
from events.types.manifests import ManifestEvent, ManifestRecorded
from events.types.policies import CitationNotarized, PolicyChanged, PolicyEvent
from events.types.reruns import (
    RERUN_PREDICATE,
    RERUN_PREDICATE_V2,
    Correctness,
    Harness,
    Measured,
    RerunClaimed,
    RerunClaimedV2,
    RerunCompleted,
    RerunCompletedV2,
    RerunEvent,
    RerunRequested,
)
from events.types.runs import RunEvent, RunIngested, RunRetracted, RunSuperseded
from events.types.sources import SourceEvent, SourceRegistered

AnyEvent = (
    KeyEvent
    | SourceEvent
    | ManifestEvent
    | RunEvent
    | AttestationEvent
    | ReportEvent
    | RerunEvent
    | PolicyEvent
)

EVENT_TYPES: dict[str, type[Event]] = {
    cls.__struct_config__.tag: cls  # type: ignore[misc]
    for cls in (
        KeyRegistered,
        KeyRevoked,
        KeyRotated,
        KeyGranted,
        SourceRegistered,
        ManifestRecorded,
        RunIngested,
        RunSuperseded,
        RunRetracted,
        AttestationPosted,
        AttestationWithdrawn,
        AttestationHidden,
        ReportFiled,
        ReportResolved,
        RerunRequested,
        RerunClaimed,
        RerunClaimedV2,
        RerunCompleted,
        RerunCompletedV2,
        PolicyChanged,
        CitationNotarized,
    )
}

EVENT_ENCODER = msgspec.json.Encoder()
EVENT_DECODER: msgspec.json.Decoder[AnyEvent] = msgspec.json.Decoder(AnyEvent)


_TAG_OF: dict[type[Event], str] = {cls: tag for tag, cls in EVENT_TYPES.items()}


def event_tag(event: Event) -> str:
    """The stored tag of an event (``family.verb.vN``)."""
    # __struct_config__ builds a new object on every access; the tags are fixed per class.
    return _TAG_OF[type(event)]


__all__ = [
    "ATTESTATION_PREDICATE",
    "EVENT_DECODER",
    "EVENT_ENCODER",
    "EVENT_TYPES",
    "RERUN_PREDICATE",
    "RERUN_PREDICATE_V2",
    "AnyEvent",
    "AttestationHidden",
    "AttestationPosted",
    "AttestationWithdrawn",
    "CitationNotarized",
    "Correctness",
    "Event",
    "Harness",
    "KeyGranted",
    "KeyId",
    "KeyRegistered",
    "KeyRevoked",
    "KeyRotated",
    "ManifestRecorded",
    "Measured",
    "Origin",
    "PolicyChanged",
    "ReportFiled",
    "ReportResolved",
    "RerunClaimed",
    "RerunClaimedV2",
    "RerunCompleted",
    "RerunCompletedV2",
    "RerunRequested",
    "Role",
    "RunIngested",
    "RunRetracted",
    "RunSuperseded",
    "Sha256",
    "SourceRegistered",
    "event_tag",
]
