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


class AmbiguousRun(ProjectionError):
    """An alias names several runs; ``details["candidates"]`` lists their digests."""


class UnknownGroup(ProjectionError):
    """No comparison group has that key."""


class BadAsOf(ProjectionError):
    """``asOf`` is neither a tree size within the log nor an RFC 3339 instant."""
