"""Run events: ingested (kernel and serving runs), superseded, retracted. Corrections are new
events, never edits."""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from events.types.base import Event, Origin, Sha256


class RunIngested(Event, frozen=True, tag="run.ingested.v1", omit_defaults=True):
    """A run as its source published it. ``manifests`` holds, by role, the normalised run
    manifest and every manifest it references that was resolved at ingest (kernel: protocol,
    environment, workload, implementation, operation; serving: model, configuration, workload,
    stack); ``unresolved`` names the roles still missing. ``aliases`` are ``source:externalId``
    style names (``kernelindex:<uuid>``, ``sol-execbench:165``); ``sourceStatus`` keeps the
    source's own outcome word (``REWARD_HACK``...) when it says more than the manifest status.
    ``rowKey`` names the source row the run came from (stable across snapshots, unique within
    the source): a later snapshot whose row of that key holds other values supersedes it."""

    runDigest: Sha256
    kind: Literal["BenchmarkRun", "ServingRun"]
    manifests: dict[str, dict[str, Any]]
    origin: Origin
    unresolved: list[str] = msgspec.field(default_factory=list)
    aliases: list[str] = msgspec.field(default_factory=list)
    sourceStatus: str | None = None
    publishedAt: str | None = None
    rowKey: str | None = None


class RunIngestedWire(Event, frozen=True, tag="run.ingested.v1", omit_defaults=True):
    """``RunIngested`` as a replay reads it: the same fields and checks, with each manifest
    left as its JSON bytes, so manifests that many runs share are decoded once
    (``events.decoding``). Its fields must stay those of ``RunIngested`` (a test checks)."""

    runDigest: Sha256
    kind: Literal["BenchmarkRun", "ServingRun"]
    manifests: dict[str, msgspec.Raw]
    origin: Origin
    unresolved: list[str] = msgspec.field(default_factory=list)
    aliases: list[str] = msgspec.field(default_factory=list)
    sourceStatus: str | None = None
    publishedAt: str | None = None
    rowKey: str | None = None


class RunSuperseded(Event, frozen=True, tag="run.superseded.v1"):
    """A run replaced by a corrected one; it keeps its citations but leaves the rankings."""

    runDigest: Sha256
    supersededBy: Sha256
    reason: str


class RunRetracted(Event, frozen=True, tag="run.retracted.v1"):
    """A run withdrawn; it stays citable but leaves the rankings."""

    runDigest: Sha256
    reason: str


RunEvent = RunIngested | RunSuperseded | RunRetracted
