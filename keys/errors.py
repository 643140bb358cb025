"""The keys/ error hierarchy: one root, no HTTP (STYLE rule 11).

``KeyringError`` is the root. Verification failures are ``VerificationError`` or one of its
subclasses, so a caller that only cares whether something verified catches that one type.
"""

from __future__ import annotations

__all__ = [
    "KeyFileError",
    "KeyringError",
    "MalformedEnvelope",
    "MalformedNote",
    "UnknownKey",
    "VerificationError",
]


class KeyringError(Exception):
    """Root of every keys/ error.

    ``detail`` is a human sentence; ``details`` holds machine-readable facts (``key_id=...``,
    ``path=...``). Neither ever contains private key material.
    """

    def __init__(self, detail: str, **details: object) -> None:
        super().__init__(detail)
        self.detail = detail
        self.details = details


class KeyFileError(KeyringError):
    """A key file is missing, malformed, of the wrong type, or (for a private key) readable or
    writable by group or others."""


class VerificationError(KeyringError):
    """A signature, DSSE envelope or signed note does not verify."""


class UnknownKey(VerificationError):
    """No known key matches: no signature was made by a key the caller trusts."""


class MalformedNote(VerificationError):
    """A signed note is not well formed (C2SP signed-note, "Format")."""


class MalformedEnvelope(VerificationError):
    """A DSSE envelope cannot be decoded (bad JSON, wrong shape, bad base64)."""
