"""Index-controlled reruns: the only events that raise (or dispute) a run's evidence level.

A completed rerun is a DSSE envelope over an in-toto Statement v1 signed by a ``rerunner`` key;
``RerunCompleted`` (v1) and ``RerunCompletedV2`` are how a fold sees one, with the rerunner's key
id from the envelope. Version 2 carries what was measured (the raw samples of the primary
statistic, in ns), the correctness outcome, the environment and the harness, and no verdict: the
index judges the samples against the tolerance policy in force. A v1 entry's own
``withinTolerance`` is never trusted either (the index judges its measured value).
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

from events.types.base import Event, KeyId, Sha256

RERUN_PREDICATE = "https://benchproof.dev/rerun/v1"
RERUN_PREDICATE_V2 = "https://benchproof.dev/rerun/v2"


class Measured(msgspec.Struct, frozen=True):
    metric: str
    statistic: str
    unit: str
    value: float


class RerunRequested(Event, frozen=True, tag="rerun.requested.v1", omit_defaults=True):
    """The index asks for a controlled rerun of a run. ``requestedAt`` (the instant the
    operator asked) makes two requests with the same reason two requests, not one entry."""

    runDigest: Sha256
    reason: str
    requestedAt: str | None = None


class RerunClaimed(Event, frozen=True, tag="rerun.claimed.v1"):
    """A rerun worker takes a request (``requestId`` is the request's payload digest)."""

    requestId: Sha256
    worker: KeyId


class RerunClaimedV2(Event, frozen=True, tag="rerun.claimed.v2"):
    """A rerun worker takes a request until ``leaseUntil`` (RFC 3339, UTC), signed by its own
    key (``worker``), declaring the environment it runs on (``kind``, ``model``,
    ``architecture``). A claim counts only when a rerunner key makes it and no other worker's
    lease is running at its recording time; a lease that ran out offers the request again."""

    runDigest: Sha256
    requestId: Sha256
    worker: KeyId
    leaseUntil: str
    environment: dict[str, str]


class RerunCompleted(Event, frozen=True, tag="rerun.completed.v1", omit_defaults=True):
    """A rerunner's signed result: did correctness pass, what was measured, and did it match the
    reported primary value within the protocol's tolerance policy."""

    runDigest: Sha256
    correctnessPassed: bool
    withinTolerance: bool
    rerunner: KeyId
    measured: Measured | None = None
    requestId: Sha256 | None = None
    toleranceVersion: str | None = None


class Correctness(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The harness's correctness check: passed or not, and what it compared."""

    passed: bool
    detail: Annotated[str, msgspec.Meta(max_length=4096)] = ""


class Harness(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The harness that measured: its name and version."""

    name: Annotated[str, msgspec.Meta(max_length=200)]
    version: Annotated[str, msgspec.Meta(max_length=200)]


class RerunCompletedV2(Event, frozen=True, tag="rerun.completed.v2"):
    """A rerunner's signed measurement for a request: the raw samples of the run's primary
    statistic (ns), the correctness outcome, the environment it ran on and the harness. No
    verdict: whether it matches is the index's judgement (``projections.tolerance``)."""

    runDigest: Sha256
    requestId: Sha256
    rerunner: KeyId
    samples: tuple[float, ...]
    correctness: Correctness
    environment: dict[str, Any]
    harness: Harness


RerunEvent = RerunRequested | RerunClaimed | RerunClaimedV2 | RerunCompleted | RerunCompletedV2
