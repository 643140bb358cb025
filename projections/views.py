"""The views the folds build. Frozen msgspec Structs; each is stored as JSON in a version row."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

import msgspec

from events.entries import INSTANT

EvidenceLevel = Literal[
    "reported", "reproducible", "verified", "replicated", "disputed", "retracted", "superseded"
]
Direction = Literal["lower", "higher"]


class Rerun(msgspec.Struct, frozen=True, omit_defaults=True):
    """One completed index-controlled rerun, as the run's dossier shows it. ``withinTolerance``
    is the index's judgement (``projections.tolerance``) under ``policyVersion``, never the
    rerunner's; ``value`` is what it measured (``statistic``, in ``unit``), ``reportedNs`` the
    run's reported value it was held against, ``why`` what missed."""

    seq: int
    rerunner: str
    correctnessPassed: bool
    withinTolerance: bool
    metric: str | None = None
    statistic: str | None = None
    unit: str | None = None
    value: float | None = None
    identity: str | None = None  # the rerunner key's registered name (a rotated key keeps it)
    policyVersion: str | None = None
    reportedNs: float | None = None
    why: str | None = None
    samples: tuple[float, ...] = ()
    correctnessDetail: str | None = None
    requestId: str | None = None
    harness: str | None = None
    environment: dict[str, Any] | None = None


class RerunRequest(msgspec.Struct, frozen=True, omit_defaults=True):
    """A rerun the index asked for (``requestId``: its entry's payload digest), and who holds
    it: the worker whose claim counted and until when, and whether a result answered it."""

    requestId: str
    seq: int
    reason: str
    claimer: str | None = None
    leaseUntil: str | None = None
    claimedSeq: int | None = None
    completedSeq: int | None = None

    def leased_at(self, instant: str) -> bool:
        """Whether a worker's lease runs at ``instant`` (RFC 3339, as the log records)."""
        until = instant_of(self.leaseUntil)
        now = instant_of(instant)
        return until is not None and now is not None and until > now


def instant_of(text: str | None) -> datetime | None:
    """An instant written as the log writes its own (``YYYY-MM-DDTHH:MM:SS.mmmZ``, UTC), or None
    if it is not one: one exact shape, so any verifier decides a lease as replay does."""
    if text is None or not INSTANT.match(text):
        return None
    try:
        return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%f%z")
    except ValueError:
        return None


class RunView(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """Everything the dossier of one run shows, as the log stood at some position."""

    runDigest: str
    kind: str
    name: str
    title: str | None = None
    source: str
    externalId: str | None = None
    benchmark: str | None = None
    project: str | None = None
    implementation: str | None = None
    revision: str | None = None
    aliases: tuple[str, ...] = ()
    status: str
    sourceStatus: str | None = None
    observedAt: str
    publishedAt: str | None = None
    recordedAt: str
    ingestSeq: int
    # Identity (kernel runs); the serving keys below for serving runs.
    protocolKey: str | None = None
    environmentKey: str | None = None
    workloadDigest: str | None = None
    implementationDigest: str | None = None
    operationDigest: str | None = None
    correctnessKey: str | None = None
    metricKey: str = "none"
    comparisonKey: str | None = None
    cohortKey: str | None = None
    topologyKey: str | None = None
    metricSetKey: str | None = None
    modelDigest: str | None = None
    configurationDigest: str | None = None
    stackDigest: str | None = None
    qualityPolicy: str | None = None
    tokenizer: str | None = None
    modelResolved: bool = False
    servingProtocolSuffix: str | None = None
    # The primary measurement and how it ranks.
    comparabilityFamily: str | None = None  # the protocol's: which tolerance applies
    primaryMetric: str | None = None
    primaryStatistic: str | None = None
    primaryUnit: str | None = None
    primaryValue: float | None = None
    direction: Direction = "lower"
    hardware: str | None = None
    hardwareArchitecture: str | None = None
    hardwareVendor: str | None = None
    # References still unresolved: roles, and the digests the run waits on.
    unresolved: tuple[str, ...] = ()
    waitingOn: tuple[str, ...] = ()
    sourceAvailable: bool = False
    rawEvidence: bool = False
    # Life after ingest.
    supersededBy: str | None = None
    supersededReason: str | None = None
    retractedReason: str | None = None
    reruns: tuple[Rerun, ...] = ()
    rerunRequests: tuple[RerunRequest, ...] = ()
    evidenceLevel: EvidenceLevel = "reported"
    evidenceReason: str = ""

    @property
    def group_key(self) -> str | None:
        """The key of the group it ranks in: comparison key (kernel) or cohort key (serving)."""
        return self.comparisonKey if self.kind == "BenchmarkRun" else self.cohortKey

    @property
    def eligible(self) -> bool:
        """Ranked under ``ranking-v1``: passed (or valid), not retracted or superseded, with a
        primary value and a resolved group."""
        return (
            self.status in ("passed", "valid")
            and self.retractedReason is None
            and self.supersededBy is None
            and self.primaryValue is not None
            and self.group_key is not None
        )


class Member(msgspec.Struct, frozen=True, array_like=True, order=True):
    """A ranked run in a group: sorted by (observedAt, runDigest) for the leader walk."""

    observedAt: str
    runDigest: str
    value: float


class LeaderChange(msgspec.Struct, frozen=True):
    """One entry of a group's leader history (KernelIndex ``record_events``)."""

    comparisonKey: str
    runDigest: str
    at: str
    cause: str
    policyVersion: str
    previousRunDigest: str | None = None


class GroupView(msgspec.Struct, frozen=True, omit_defaults=True):
    """A comparison group: its leader history. Its members are the group's eligible run
    versions (counted from them when read; the materialiser keeps them in walk order while it
    folds), so a group gets a new version only when its leaders change."""

    comparisonKey: str
    metricKey: str
    direction: Direction
    kind: str
    history: tuple[LeaderChange, ...] = ()
    leaderValues: tuple[float, ...] = ()
    policyVersion: str = "ranking-v1"

    @property
    def best(self) -> float | None:
        return self.leaderValues[-1] if self.leaderValues else None

    @property
    def leader(self) -> str | None:
        return self.history[-1].runDigest if self.history else None
