"""Community attestations and reports. They are shown and counted; they never change a run's
evidence level (docs/evidence.md).

An attestation entry's envelope is the attester's own DSSE envelope over an in-toto Statement
v1 (``application/vnd.in-toto+json``) whose subject is the run by its digest; the log stores those
exact signed bytes. ``AttestationPosted`` is how a fold sees it: the statement's facts plus the
attester's key id, taken from the verified envelope.
"""

from __future__ import annotations

from typing import Any

from events.types.base import Event, KeyId, Sha256

ATTESTATION_PREDICATE = "https://benchproof.dev/attestation/v1"


class AttestationPosted(Event, frozen=True, tag="attestation.posted.v1"):
    """A signed reproduction or note about a run."""

    runDigest: Sha256
    predicateType: str
    predicate: dict[str, Any]
    attester: KeyId


class AttestationWithdrawn(Event, frozen=True, tag="attestation.withdrawn.v1"):
    """The attester takes an attestation back (``attestationId`` is its payload digest)."""

    attestationId: Sha256
    reason: str


class AttestationHidden(Event, frozen=True, tag="attestation.hidden.v1"):
    """Moderation by the index: the attestation stays in the log but is not shown."""

    attestationId: Sha256
    reason: str


class ReportFiled(Event, frozen=True, tag="report.filed.v1", omit_defaults=True):
    """Somebody reports a problem with a run (wrong data, suspected reward hack...)."""

    runDigest: Sha256
    category: str
    text: str
    reporter: str | None = None


class ReportResolved(Event, frozen=True, tag="report.resolved.v1"):
    """The index closes a report (``reportId`` is the filing's payload digest)."""

    reportId: Sha256
    resolution: str
    note: str


AttestationEvent = AttestationPosted | AttestationWithdrawn | AttestationHidden
ReportEvent = ReportFiled | ReportResolved
