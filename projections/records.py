"""The records fold: what an event adds to the small projections (manifests, row keys,
sources, attestations, reports, reruns, citations, policies), as row operations. Pure and
exhaustive over the event union; the materialiser writes the operations."""

from __future__ import annotations

from typing import Any, assert_never

import msgspec

from events.types import (
    AnyEvent,
    AttestationHidden,
    AttestationPosted,
    AttestationWithdrawn,
    CitationNotarized,
    KeyGranted,
    KeyRegistered,
    KeyRevoked,
    KeyRotated,
    ManifestRecorded,
    PolicyChanged,
    ReportFiled,
    ReportResolved,
    RerunClaimed,
    RerunClaimedV2,
    RerunCompleted,
    RerunCompletedV2,
    RerunRequested,
    RunIngested,
    RunRetracted,
    RunSuperseded,
    SourceRegistered,
)
from projections.runs import Context

__all__ = ["Insert", "Manifest", "Op", "Update", "record_ops"]

_ENC = msgspec.json.Encoder()


class Insert(msgspec.Struct, frozen=True):
    """A new row of ``table`` (kept if its key exists already: the log says it once)."""

    table: str
    row: tuple[Any, ...]


class Update(msgspec.Struct, frozen=True):
    """A change to an existing row, by one of the named statements of ``rows.RowStore``."""

    statement: str
    row: tuple[Any, ...]


class Manifest(msgspec.Struct, frozen=True):
    """A manifest the log now holds (the first time its digest appears)."""

    digest: str
    manifest: dict[str, Any]


Op = Insert | Update | Manifest


def record_ops(event: AnyEvent, ctx: Context, carried: dict[str, dict[str, Any]]) -> tuple[Op, ...]:
    """The row operations ``event`` (at ``ctx``) makes; ``carried`` holds the manifests a
    run.ingested brings, by digest."""
    at = ctx.seq + 1
    row: tuple[Any, ...]
    match event:
        case RunIngested():
            # The run's own manifest stays in its entry (``queries.run_manifest`` reads it there).
            ops: list[Op] = [Manifest(digest, manifest) for digest, manifest in carried.items()]
            if event.rowKey is not None:
                ops.append(Insert("p_rowkeys", (event.rowKey, event.runDigest, at)))
            return tuple(ops)
        case ManifestRecorded():
            return (Manifest(event.digest, event.manifest),)
        case SourceRegistered():
            return (
                Insert(
                    "p_sources",
                    (event.source, event.name, event.url, event.license, event.notice, at),
                ),
            )
        case AttestationPosted():
            row = (
                ctx.payloadDigest,
                event.runDigest,
                event.attester,
                event.predicateType,
                _ENC.encode(event.predicate),
                at,
                ctx.recordedAt,
                None,  # withdrawn_at
                None,  # hidden_at
                None,  # withdrawn_reason
                None,  # hidden_reason
                kind if isinstance(kind := event.predicate.get("kind"), str) else None,
            )
            return (Insert("p_attestations", row),)
        case AttestationWithdrawn():
            # Only its author takes an attestation back: the row's attester must be the signer.
            row = (at, event.reason, event.attestationId, ctx.signer)
            return (Update("attestation_withdrawn", row),)
        case AttestationHidden():
            if not ctx.permits(event):  # moderation is the index's alone
                return ()
            return (Update("attestation_hidden", (at, event.reason, event.attestationId)),)
        case ReportFiled():
            row = (
                ctx.payloadDigest,
                event.runDigest,
                event.category,
                event.text,
                event.reporter,
                at,
                ctx.recordedAt,
                None,
                None,
                None,
            )
            return (Insert("p_reports", row),)
        case ReportResolved():
            if not ctx.permits(event):  # only the index resolves reports
                return ()
            return (Update("report_resolved", (at, event.resolution, event.note, event.reportId)),)
        case RerunRequested():
            row = (
                ctx.payloadDigest,
                event.runDigest,
                "requested",
                "index",
                at,
                ctx.recordedAt,
                None,
                _ENC.encode(event),
            )
            return (Insert("p_reruns", row),)
        case RerunClaimed() | RerunClaimedV2():
            row = (
                ctx.payloadDigest,
                event.runDigest if isinstance(event, RerunClaimedV2) else "",  # v1 names none
                "claimed",
                event.worker,
                at,
                ctx.recordedAt,
                event.requestId,
                _ENC.encode(event),
            )
            return (Insert("p_reruns", row),)
        case RerunCompleted() | RerunCompletedV2():
            row = (
                ctx.payloadDigest,
                event.runDigest,
                "completed",
                event.rerunner,
                at,
                ctx.recordedAt,
                event.requestId,
                _ENC.encode(event),
            )
            return (Insert("p_reruns", row),)
        case CitationNotarized():
            row = (
                ctx.payloadDigest,
                event.runDigest,
                event.permalink,
                event.accessedAt,
                event.checkpointSize,
                at,
            )
            return (Insert("p_citations", row),)
        case PolicyChanged():
            if not ctx.permits(event):  # only the index sets a policy
                return ()
            return (
                Insert(
                    "p_policies", (event.policy, at, event.version, _ENC.encode(event.parameters))
                ),
            )
        case (
            KeyRegistered()
            | KeyRevoked()
            | KeyRotated()
            | KeyGranted()
            | RunSuperseded()
            | RunRetracted()
        ):
            return ()  # the keyring and run folds own these
        case _:
            assert_never(event)
