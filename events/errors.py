"""The error hierarchy of ``events``: every error this package raises derives from EventError.

Errors carry a human ``detail`` and keyword details; they know nothing about HTTP or exit codes
(the edges map them, see ``service/problems.py``).
"""

from __future__ import annotations


class EventError(Exception):
    """Root of every error raised by ``events``."""

    def __init__(self, detail: str, **details: object) -> None:
        super().__init__(detail)
        self.detail = detail
        self.details = details


class InvalidManifest(EventError):
    """A manifest (or bundle) is malformed, fails its schema, or contradicts itself.

    ``details`` carries ``path`` (a JSON path such as ``$.spec.status``) when one field is to blame.
    """


class CanonicalizationError(EventError):
    """A value cannot be encoded as RFC 8785 canonical JSON (NaN, infinity, a lone surrogate...)."""


class ProofError(EventError):
    """An inclusion or consistency proof does not verify, or was asked for impossible sizes."""


class LogError(EventError):
    """The log store refused an operation (a conflicting append, a closed store...)."""


class LogCorrupted(LogError):
    """The stored log is inconsistent with itself. ``details["position"]`` names the first bad
    entry when one is to blame."""
