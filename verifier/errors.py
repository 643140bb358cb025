"""The errors of ``verifier``: every check that fails raises one (verification never returns a
bool), rooted in ``VerifierError``."""

from __future__ import annotations

__all__ = ["VerifierError", "VerifierUsageError"]


class VerifierError(Exception):
    """Root of every error raised by ``verifier``; ``detail`` is one line for a person and
    ``details`` what a machine reads (the check that failed, a position)."""

    def __init__(self, detail: str, **details: object) -> None:
        super().__init__(detail)
        self.detail = detail
        self.details = details


class VerifierUsageError(VerifierError):
    """What the verifier was asked to read cannot be used (a folder that is not a segment, a
    server that cannot be reached): nothing was checked."""
