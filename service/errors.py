"""The error hierarchy of ``service``: every error the edges raise derives from ServiceError."""

from __future__ import annotations


class ServiceError(Exception):
    """Root of every error raised by ``service``."""

    def __init__(self, detail: str, **details: object) -> None:
        super().__init__(detail)
        self.detail = detail
        self.details = details


class UsageError(ServiceError):
    """The command line or request is malformed (CLI exit 2)."""


class NotFound(ServiceError):
    """A run, group or file that was asked for does not exist (CLI exit 3, HTTP 404)."""


class NotInitialised(NotFound):
    """The data directory has no log yet (run ``benchproof init``)."""


class InvalidInput(UsageError):
    """Input refused as a whole; ``details["report"]`` lists each problem (one line each)."""


class MirrorReadOnly(ServiceError):
    """The data directory is a mirror of another log: it takes no local writes and signs
    nothing, for it holds no keys (CLI exit 2, HTTP 403)."""
