"""The error hierarchy of ``projections``."""

from __future__ import annotations


class ProjectionError(Exception):
    """Root of every error raised by ``projections``."""

    def __init__(self, detail: str, **details: object) -> None:
        super().__init__(detail)
        self.detail = detail
        self.details = details


class UnknownRun(ProjectionError):
    """No run matches the reference (short id, digest, ``kernelindex:<uuid>`` or alias)."""


class MalformedReference(UnknownRun):
    """The reference is none of the forms a run is named by (short id of 12 or more hex digits,
    ``sha256:<64 hex>``, ``kernelindex:<uuid>``, ``<source>:<externalId>``), so it can name no
    run: bad input (HTTP 400, CLI exit 2) rather than a run that is not there. An
    ``UnknownRun`` still, for callers that only ask whether a reference names a run."""


class AmbiguousRun(ProjectionError):
    """An alias names several runs; ``details["candidates"]`` lists their digests."""


class UnknownGroup(ProjectionError):
    """No comparison group has that key."""
