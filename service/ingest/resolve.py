"""An importer's plan against what the log holds: which runs, manifests and source registrations
are new, which runs a changed source row supersedes, which references stay unresolved, and the
entries that say so (``resolve``). Importers read the log only through ``Holdings``, a
read-only view of what it holds; the ingest use case (``service.app.ingest``) hands them one
and appends what they resolve, in the transaction it read in.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple, Protocol

import msgspec

from events.documents import Checked
from events.references import referenced_manifests, roles
from events.types import (
    Event,
    ManifestRecorded,
    Origin,
    RunIngested,
    RunRetracted,
    RunSuperseded,
    SourceRegistered,
)
from service.ingest.core import IngestResult, Plan

__all__ = ["Holdings", "Resolved", "resolve"]


class Holdings(Protocol):
    """What an import asks of the log it goes into (read-only, as of one transaction)."""

    def manifest(self, digest: str) -> dict[str, Any] | None:
        """The manifest with spec digest ``digest`` that the log holds, if any."""
        ...

    def manifests(self, digests: Sequence[str]) -> set[str]:
        """Which of ``digests`` the log holds as manifests."""
        ...

    def runs(self, digests: Sequence[str]) -> set[str]:
        """Which of ``digests`` are runs the log holds."""
        ...

    def latest_of_rows(self, row_keys: Sequence[str]) -> dict[str, str]:
        """The newest run ingested from each of the source rows ``row_keys`` that produced
        one (asked once for the whole plan)."""
        ...

    def sources(self) -> set[str]:
        """The names of every source the log has registered."""
        ...


class Resolved(NamedTuple):
    """What a plan brings that the log lacks: the ``(event, subject)`` pairs to append, in
    order, and the counts of what is new and what was held already (``result``: its
    ``entries`` and ``size`` are the append's to say)."""

    events: list[tuple[Event, str]]
    result: IngestResult


def _references(run: Checked, carried: dict[str, dict[str, Any]]) -> list[tuple[str, str]]:
    """(role, digest) of every reference of a run, including those revealed by what is carried."""
    return list(referenced_manifests(run.kind, run.manifest, carried).items())


def _stamped(registration: SourceRegistered, plan: Plan) -> SourceRegistered:
    """A source registration with the snapshot and importer it came with: those of the plan's
    first record from that source (else its first record), without the record's own id."""
    if registration.origin is not None:
        return registration
    origins = [item.origin for item in plan.runs] + [origin for _, origin in plan.manifests]
    found = next((o for o in origins if o.source == registration.source), None)
    found = found or (origins[0] if origins else None)
    if found is None:
        return registration
    origin = msgspec.structs.replace(found, externalId=None, source=registration.source)
    return msgspec.structs.replace(registration, origin=origin)


def resolve(plan: Plan, held: Holdings) -> Resolved:
    """Resolve and deduplicate ``plan`` against what the log ``held`` holds (a re-run resolves
    to nothing for what is already there): every run's references are resolved from the plan
    and from the log, the unresolved ones recorded; ``manifest.recorded`` and ``run.ingested``
    events for what is new, ``run.superseded`` for a source row that changed, and the source
    registrations the log lacks."""
    result = IngestResult()
    in_plan: dict[str, Checked] = {}
    for item in plan.runs:
        for checked in item.given.values():
            in_plan.setdefault(checked.digest, checked)
    for checked, _ in plan.manifests:
        in_plan.setdefault(checked.digest, checked)
    from_log: dict[str, dict[str, Any] | None] = {}

    def lookup(digest: str) -> dict[str, Any] | None:
        found = in_plan.get(digest)
        if found is not None:
            return found.manifest
        if digest not in from_log:
            from_log[digest] = held.manifest(digest)
        return from_log[digest]

    # A source is registered once, with the snapshot that first brought it (a registration
    # stamped with another snapshot would make a re-import of part of the data append).
    registered = held.sources()
    events: list[tuple[Event, str]] = [
        (_stamped(s, plan), s.source) for s in plan.sources if s.source not in registered
    ]
    registrations = len(events)
    carried_digests: set[str] = set()
    seen_runs = held.runs([item.run.digest for item in plan.runs])
    run_events: list[tuple[Event, str]] = []
    retractions: list[tuple[Event, str]] = []
    brought: list[tuple[Checked, Origin]] = []
    # The newest run of every source row the plan names, asked once (not once a run).
    latest_row: dict[str, str] = held.latest_of_rows(
        sorted({item.rowKey for item in plan.runs if item.rowKey is not None})
    )
    # Runs enter the log in the order they were observed (then by digest): history reads
    # naturally, and each group's leader walk only ever extends. A stable sort keeps a source's
    # own order (oldest snapshot first) for rows observed at the same instant.
    ordered = sorted(
        plan.runs, key=lambda item: (item.run.manifest["spec"]["observedAt"], item.run.digest)
    )
    for item in ordered:
        if item.retraction is not None:
            # Appended after the run (below); the log keeps one copy of an identical event, so
            # a re-import, or a run retracted after it was first imported, needs no lookup.
            retractions.append(
                (RunRetracted(runDigest=item.run.digest, reason=item.retraction), item.run.digest)
            )
        if item.run.digest in seen_runs:
            result.runs_known += 1
            if item.rowKey is not None:
                latest_row[item.rowKey] = item.run.digest
            # The run is held, but what came with it may not be (a bundle bringing a workload
            # the log lacked): recorded on its own, and the run's waiting keys fill in.
            # Only what the run references counts (a project rides along, named by nothing).
            bare = msgspec.structs.replace(item.origin, externalId=None)
            given = {role: c.manifest for role, c in item.given.items()}
            wanted = {digest for _, digest in _references(item.run, given)}
            brought.extend((c, bare) for c in item.given.values() if c.digest in wanted)
            continue
        seen_runs.add(item.run.digest)
        carried: dict[str, dict[str, Any]] = {"run": item.run.manifest}
        for role, checked in item.given.items():
            carried[role] = checked.manifest
        unresolved: list[str] = []
        # Resolve in dependency order: workload/configuration reveal operation/stack.
        for _ in range(2):
            for role, digest in _references(item.run, carried):
                if role in carried:
                    continue
                found = lookup(digest)
                if found is not None:
                    carried[role] = found
        refs = dict(_references(item.run, carried))
        unresolved = [role for role in roles(item.run.kind) if role not in carried]
        for role in carried:
            if role != "run" and role in refs:
                carried_digests.add(refs[role])
        if unresolved:
            result.unresolved += 1
        event = RunIngested(
            runDigest=item.run.digest,
            kind=item.run.kind,  # type: ignore[arg-type]
            manifests=carried,
            origin=item.origin,
            unresolved=unresolved,
            aliases=list(item.aliases),
            sourceStatus=item.sourceStatus,
            publishedAt=item.publishedAt,
            rowKey=item.rowKey,
        )
        run_events.append((event, item.run.digest))
        result.runs_appended += 1
        if item.rowKey is not None:
            previous = latest_row.get(item.rowKey)
            latest_row[item.rowKey] = item.run.digest
            if previous is not None and previous != item.run.digest:
                reason = f"{item.origin.source} corrected row {item.rowKey}"
                superseded = RunSuperseded(
                    runDigest=previous, supersededBy=item.run.digest, reason=reason
                )
                run_events.append((superseded, previous))
                result.superseded += 1
    listed = len(plan.manifests)  # the rest came with runs the log holds: not counted as known
    standalone = [*plan.manifests, *brought]
    already = held.manifests(sorted({c.digest for c, _ in standalone}))
    recorded: set[str] = set()
    for n, (checked, origin) in enumerate(standalone):
        if checked.digest in already or checked.digest in recorded:
            if n < listed:
                result.manifests_known += 1
            continue
        if checked.digest in carried_digests:
            continue  # carried inside a run event of this batch
        recorded.add(checked.digest)
        events.append(
            (
                ManifestRecorded(
                    digest=checked.digest,
                    kind=checked.kind,
                    manifest=checked.manifest,
                    origin=origin,
                ),
                checked.digest,
            )
        )
        result.manifests_appended += 1
    if len(events) == registrations and not run_events and not retractions:
        events = []  # an import that brings nothing (an empty file) registers no source either
    events.extend(run_events)
    events.extend(retractions)
    return Resolved(events, result)
