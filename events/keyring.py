"""The key fold: which keys may sign, with which role, at each position. Pure and exhaustive
over the event union."""

from __future__ import annotations

from collections.abc import Mapping
from typing import assert_never

import msgspec

from events.authority import grant_applies, refusal
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
    event_tag,
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
    # A key granted a role holds it from ``roleSince`` (the position after the grant); before,
    # it held ``roleBefore``. None: its role is the one it was registered with.
    roleSince: int | None = None
    roleBefore: str | None = None

    def valid_at(self, seq: int) -> bool:
        """Could this key sign the entry at position ``seq``?"""
        return self.since <= seq and (self.until is None or seq < self.until)

    def role_at(self, seq: int) -> str:
        """The role the key held at position ``seq`` (a history names the signer's role at
        the entry's own position, not the one granted later). After two grants, the role
        before the last one stands for every position before it."""
        if self.roleSince is not None and self.roleBefore is not None and seq < self.roleSince:
            return self.roleBefore
        return self.role


def fold_keys(
    keys: Mapping[str, KeyView], event: AnyEvent, seq: int, signer: str
) -> Mapping[str, KeyView]:
    """Every key after the entry at ``seq`` signed by ``signer`` (a new mapping when something
    changed). A key event takes effect only when its signer may make it (``events.authority``:
    the genesis entry registers the index key, signed by it; an index key registers any key; a
    community key registers itself; an index key grants a role; a key is revoked or rotated by
    an index key or by itself), and only on a key it can change: a registration of a key new to
    the log, a revocation or rotation of a key not ended yet (to a successor new to the log), a
    grant that changes a key (``grant_applies``). Registration takes effect for later entries;
    revocation and rotation from the next entry on; a rotated key's successor inherits its role
    and name."""
    match event:
        case KeyRegistered():
            if event.keyId in keys or _refused(keys, event, seq, signer):
                return keys
            view = KeyView(event.keyId, event.role, event.name, event.publicKey, seq + 1)
            return {**keys, event.keyId: view}
        case KeyRevoked():
            old = keys.get(event.keyId)
            if old is None or old.until is not None or _refused(keys, event, seq, signer):
                return keys
            return {**keys, event.keyId: _end(old, seq, revokedReason=event.reason)}
        case KeyGranted():
            old = keys.get(event.keyId)
            if (
                old is None
                or not grant_applies(old, event.role, seq + 1)
                or _refused(keys, event, seq, signer)
            ):
                return keys
            granted = msgspec.structs.replace(
                old, role=event.role, roleSince=seq + 1, roleBefore=old.role
            )
            return {**keys, event.keyId: granted}
        case KeyRotated():
            old = keys.get(event.keyId)
            if (
                old is None
                or old.until is not None
                or event.newKeyId in keys
                or _refused(keys, event, seq, signer)
            ):
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


def _refused(keys: Mapping[str, KeyView], event: AnyEvent, seq: int, signer: str) -> bool:
    return refusal(event_tag(event), signer, keys, seq, event) is not None


def _end(view: KeyView, seq: int, **changes: str) -> KeyView:
    return msgspec.structs.replace(view, until=seq + 1, **changes)
