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
    KeyGranted,
    KeyRegistered,
    KeyRevoked,
    KeyRotated,
    ManifestRecorded,
    PolicyChanged,
    ReportFiled,
    ReportResolved,
    RerunClaimed,
    RerunClaimedV2,
    RerunCompleted,
    RerunCompletedV2,
    RerunRequested,
    RunIngested,
    RunRetracted,
    RunSuperseded,
    SourceRegistered,
)

__all__ = ["KeyView", "fold_keys", "may_sign"]


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


def may_sign(keys: Mapping[str, KeyView], signer: str, seq: int) -> KeyView | None:
    """The signer's key if it could sign the entry at ``seq``."""
    key = keys.get(signer)
    return key if key is not None and key.valid_at(seq) else None


def fold_keys(
    keys: Mapping[str, KeyView], event: AnyEvent, seq: int, signer: str
) -> Mapping[str, KeyView]:
    """Every key after the entry at ``seq`` signed by ``signer`` (a new mapping when something
    changed). A key event takes effect only when its signer may make it: an index key registers
    any key (the genesis entry registers the index key, signed by it), a community key registers
    itself, an index key grants a community key the rerunner role, and a key is revoked or
    rotated by an index key or by itself. Registration takes
    effect for later entries; revocation and rotation from the next entry on; a rotated key's
    successor inherits its role and name."""
    by = may_sign(keys, signer, seq)
    by_index = by is not None and by.role == "index"
    match event:
        case KeyRegistered():
            genesis = not keys and seq == 0 and event.role == "index" and event.keyId == signer
            own = event.role == "community" and event.keyId == signer
            if event.keyId in keys or not (by_index or genesis or own):
                return keys
            view = KeyView(event.keyId, event.role, event.name, event.publicKey, seq + 1)
            return {**keys, event.keyId: view}
        case KeyRevoked():
            old = keys.get(event.keyId)
            if old is None or old.until is not None or not (by_index or (by is old)):
                return keys
            return {**keys, event.keyId: _end(old, seq, revokedReason=event.reason)}
        case KeyGranted():
            old = keys.get(event.keyId)
            if not by_index or old is None or not old.valid_at(seq + 1) or old.role == event.role:
                return keys
            if old.role not in ("community", "rerunner"):
                return keys  # the index and log keys keep their roles
            return {**keys, event.keyId: msgspec.structs.replace(old, role=event.role)}
        case KeyRotated():
            old = keys.get(event.keyId)
            allowed = by_index or (by is old)
            if old is None or old.until is not None or event.newKeyId in keys or not allowed:
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
            | RerunClaimedV2()
            | RerunCompleted()
            | RerunCompletedV2()
            | PolicyChanged()
            | CitationNotarized()
        ):
            return keys
        case _:
            assert_never(event)


def _end(view: KeyView, seq: int, **changes: str) -> KeyView:
    return msgspec.structs.replace(view, until=seq + 1, **changes)
