"""The shared core of every importer: resolve references, skip what the log already holds, and
append the rest as one signed batch.

An importer produces a ``Plan``: the runs it found (each a checked run manifest with the
manifests given alongside it), the standalone manifests, and sources to register. ``commit``
resolves every run's references from the plan and from the log, records the unresolved ones,
and appends ``manifest.recorded`` and ``run.ingested`` events for what is new, in one
transaction: a failure appends nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

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
from projections.queries import (
    known_manifests,
    latest_for_row,
    manifest,
    registered_sources,
    run_exists,
)
from service.core.ledger import Ledger

__all__ = ["IngestResult", "Plan", "Rejected", "RunItem", "commit"]


class RunItem(msgspec.Struct, frozen=True, kw_only=True):
    """One run an importer found, with the manifests its source gave alongside it."""

    run: Checked
    given: dict[str, Checked] = {}
    origin: Origin
    aliases: tuple[str, ...] = ()
    sourceStatus: str | None = None
    publishedAt: str | None = None
    rowKey: str | None = None  # the source row it came from: a changed row supersedes
    retraction: str | None = None  # the source retracted the run (the reason)


class Rejected(msgspec.Struct, frozen=True):
    """A row an importer could not read, and why."""

    file: str
    row: str
    reason: str


class Plan(msgspec.Struct, kw_only=True):
    runs: list[RunItem] = msgspec.field(default_factory=list)
    manifests: list[tuple[Checked, Origin]] = msgspec.field(default_factory=list)
    sources: list[SourceRegistered] = msgspec.field(default_factory=list)
    rejected: list[Rejected] = msgspec.field(default_factory=list)


class IngestResult(msgspec.Struct, kw_only=True, rename="camel"):
    """What an import did (as JSON, camelCase like the rest of the API)."""

    runs_appended: int = 0
    runs_known: int = 0
    manifests_appended: int = 0
    manifests_known: int = 0
    superseded: int = 0
    unresolved: int = 0
    entries: int = 0
    size: int = 0

    def summary(self) -> str:
        if self.entries == 0:
            return (
                f"nothing new: the log already holds all {self.runs_known} runs and "
                f"{self.manifests_known} manifests (log size {self.size})"
            )
        parts = [
            f"appended {self.entries} entries: {self.runs_appended} runs, {self.manifests_appended} manifests"
        ]
        if self.superseded:
            parts.append(f"{self.superseded} supersessions")
        if self.runs_known or self.manifests_known:
            parts.append(
                f"{self.runs_known} runs and {self.manifests_known} manifests already in the log"
            )
        if self.unresolved:
            parts.append(f"{self.unresolved} runs with unresolved references")
        return "; ".join(parts) + f" (log size {self.size})"


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


def commit(
    ledger: Ledger,
    plan: Plan,
    *,
    progress: Callable[[int], None] | None = None,
    expect: Callable[[int], None] | None = None,
) -> IngestResult:
    """Resolve, deduplicate and append a plan in one transaction (a re-run appends nothing for
    what is already there). ``expect`` hears how many entries are about to be written, then
    ``progress`` of each chunk written."""
    # What the log holds is read, and the new entries appended, in one transaction with the
    # writers' lock held throughout: two imports of one run at once append it once (the second
    # reads the first's entries), and no read shares the writer's connection with another
    # thread's commit.
    with ledger.store.transaction():
        return _commit(ledger, plan, progress=progress or _ignore, expect=expect)


def _ignore(_: int) -> None:
    pass


def _commit(
    ledger: Ledger,
    plan: Plan,
    *,
    progress: Callable[[int], None],
    expect: Callable[[int], None] | None,
) -> IngestResult:
    """``commit`` inside its transaction (``progress`` given: the append nests in it rather
    than waiting for the group commit's turn, which this transaction holds)."""
    conn = ledger.store.session
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
            from_log[digest] = manifest(conn, digest)
        return from_log[digest]

    # A source is registered once, with the snapshot that first brought it (a registration
    # stamped with another snapshot would make a re-import of part of the data append).
    registered = registered_sources(conn)
    events: list[tuple[Event, str]] = [
        (_stamped(s, plan), s.source) for s in plan.sources if s.source not in registered
    ]
    registrations = len(events)
    carried_digests: set[str] = set()
    seen_runs = run_exists(conn, [item.run.digest for item in plan.runs])
    run_events: list[tuple[Event, str]] = []
    retractions: list[tuple[Event, str]] = []
    brought: list[tuple[Checked, Origin]] = []
    latest_row: dict[str, str] = {}
    # Runs enter the log in the order they were observed (then by digest): history reads
    # naturally, and each group's leader walk only ever extends. A stable sort keeps a source's
    # own order (oldest snapshot first) for rows observed at the same instant.
    ordered = sorted(
        plan.runs, key=lambda item: (item.run.manifest["spec"]["observedAt"], item.run.digest)
    )
    for item in ordered:
        if item.rowKey is not None and item.rowKey not in latest_row:
            previous = latest_for_row(conn, item.rowKey)
            if previous is not None:
                latest_row[item.rowKey] = previous
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
    already = known_manifests(conn, sorted({c.digest for c, _ in standalone}))
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
    # One transaction for the whole import: it lands whole or not at all (the store still signs
    # and writes it in chunks, overlapping the two).
    if expect is not None:
        expect(len(events))
    appended = ledger.append(events, progress=progress) if events else []
    result.entries = sum(a.new for a in appended)
    result.size = ledger.store.size
    return result


def collect(results: Sequence[IngestResult]) -> IngestResult:
    total = IngestResult()
    for r in results:
        for field in total.__struct_fields__:
            setattr(total, field, getattr(total, field) + getattr(r, field))
    return total
