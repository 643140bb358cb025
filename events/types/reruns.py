"""Index-controlled reruns: the only events that raise (or dispute) a run's evidence level.

A completed rerun is a DSSE envelope over an in-toto Statement v1 signed by a ``rerunner`` key;
``RerunCompleted`` is how a fold sees it, with the rerunner's key id from the envelope.
"""

from __future__ import annotations

import msgspec

from events.types.base import Event, KeyId, Sha256

RERUN_PREDICATE = "https://benchproof.dev/rerun/v1"


class Measured(msgspec.Struct, frozen=True):
    metric: str
    statistic: str
    unit: str
    value: float


class RerunRequested(Event, frozen=True, tag="rerun.requested.v1"):
    """The index asks for a controlled rerun of a run."""

    runDigest: Sha256
    reason: str


class RerunClaimed(Event, frozen=True, tag="rerun.claimed.v1"):
    """A rerun worker takes a request (``requestId`` is the request's payload digest)."""

    requestId: Sha256
    worker: KeyId


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


RerunEvent = RerunRequested | RerunClaimed | RerunCompleted
