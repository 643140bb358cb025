"""The key fold: which keys may sign, with which role, at each position. Pure and exhaustive
over the event union."""

from __future__ import annotations

from collections.abc import Mapping
from typing import assert_never

import msgspec

from events.types import (
    AnyEvent,
    AttestationHidden,
    AttestationPosted,
    AttestationWithdrawn,
    CitationNotarized,
    KeyRegistered,
    KeyRevoked,
    KeyRotated,
    ManifestRecorded,
    PolicyChanged,
    ReportFiled,
    ReportResolved,
    RerunClaimed,
    RerunCompleted,
    RerunRequested,
    RunIngested,
    RunRetracted,
    RunSuperseded,
    SourceRegistered,
)

__all__ = ["KeyView", "fold_keys"]


class KeyView(msgspec.Struct, frozen=True, omit_defaults=True):
    """A key as the log knows it: registered at ``since`` (a tree size), perhaps revoked or
    rotated away at ``until``."""

    keyId: str
    role: str
    name: str
    publicKey: str
    since: int
    until: int | None = None
    revokedReason: str | None = None
    rotatedTo: str | None = None

    def valid_at(self, seq: int) -> bool:
        """Could this key sign the entry at position ``seq``?"""
        return self.since <= seq and (self.until is None or seq < self.until)


def fold_keys(keys: Mapping[str, KeyView], event: AnyEvent, seq: int) -> Mapping[str, KeyView]:
    """Every key after the entry at ``seq`` (a new mapping when something changed).
    Registration takes effect for later entries; revocation and rotation from the next entry on;
    a rotated key's successor inherits its role and name."""
    match event:
        case KeyRegistered():
            if event.keyId in keys:
                return keys
            view = KeyView(event.keyId, event.role, event.name, event.publicKey, seq + 1)
            return {**keys, event.keyId: view}
        case KeyRevoked():
            old = keys.get(event.keyId)
            if old is None or old.until is not None:
                return keys
            return {**keys, event.keyId: _end(old, seq, revokedReason=event.reason)}
        case KeyRotated():
            old = keys.get(event.keyId)
            if old is None or old.until is not None or event.newKeyId in keys:
                return keys
            new = KeyView(event.newKeyId, old.role, old.name, event.newPublicKey, seq + 1)
            return {
                **keys,
                event.keyId: _end(old, seq, rotatedTo=event.newKeyId),
                event.newKeyId: new,
            }
        case (
            SourceRegistered()
            | ManifestRecorded()
            | RunIngested()
            | RunSuperseded()
            | RunRetracted()
            | AttestationPosted()
            | AttestationWithdrawn()
            | AttestationHidden()
            | ReportFiled()
            | ReportResolved()
            | RerunRequested()
            | RerunClaimed()
            | RerunCompleted()
            | PolicyChanged()
            | CitationNotarized()
        ):
            return keys
        case _:
            assert_never(event)


def _end(view: KeyView, seq: int, **changes: str) -> KeyView:
    return msgspec.structs.replace(view, until=seq + 1, **changes)
