"""Key lifecycle events. A signature is checked against the key as it stood at the entry's
position: registered before it, not revoked or rotated away before it."""

from __future__ import annotations

from typing import Literal

from events.types.base import Event, KeyId

Role = Literal["log", "index", "rerunner", "community"]


class KeyRegistered(Event, frozen=True, tag="key.registered.v1", omit_defaults=True):
    """A key joins the log. The log's genesis entry registers the index key and is signed by it;
    later index, log and rerunner keys are granted by an index key; a community key registers
    itself (proof of possession: the entry is signed by the key it registers, over a statement
    that names the single-use ``challenge`` the server issued for it)."""

    keyId: KeyId
    publicKey: str  # standard base64 of the raw 32-byte Ed25519 public key
    role: Role
    name: str
    challenge: str | None = None


class KeyRevoked(Event, frozen=True, tag="key.revoked.v1"):
    """A key stops being valid from this position on (signed by an index key or the key itself)."""

    keyId: KeyId
    reason: str


class KeyRotated(Event, frozen=True, tag="key.rotated.v1"):
    """A key hands over to a new one (same role and name); signed by the old key. The old key is
    invalid after this position."""

    keyId: KeyId
    newKeyId: KeyId
    newPublicKey: str


class KeyGranted(Event, frozen=True, tag="key.granted.v1"):
    """The index gives a registered, valid key a role from the next entry on (a community key
    becomes a rerunner). Signed by an index key; entries the key signed before keep the role it
    had then."""

    keyId: KeyId
    role: Literal["rerunner"]


KeyEvent = KeyRegistered | KeyRevoked | KeyRotated | KeyGranted
