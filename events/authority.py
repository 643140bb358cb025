"""The one authority: who may sign which entry, at which position.

Pure: functions of the entry type, the signer's key id, the keys as they stand at the position
(``events.keyring.KeyView``), the decoded event and the position; no I/O, no clock. The write
checks (``service.app``), the folds (``events.keyring``, ``projections``) and ``benchproof
verify`` (``verifier.log``) all ask it, and each turns a ``Refusal`` into its own error, no-op
or finding.

The rules (``refusal`` applies them in this order):

1. Position 0, the genesis entry, registers the index key and is signed by the key it
   registers.
2. Every later entry is signed by a key valid at its position (registered before it, not
   revoked or rotated away before it), except a community key's self-registration: signed by
   the key it registers (proof of possession), a key new to the log.
3. By the signer's role (``WRITERS``): attestations (posted, withdrawn) by community and
   rerunner keys; rerun claims and results by rerunner keys; a key's own revocation or rotation
   by the key itself, whatever its role; everything else by an index key.
4. A withdrawal is signed by the key that posted the attestation it names; a rerun claim (v2)
   by the worker it names.

What a key event then does to the keyring (a registration of a key the log holds, a grant that
changes nothing...) is the key fold's (``events.keyring``); ``grant_applies`` says which grants
change a key, for the fold and for the write check alike.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Literal, NamedTuple

from events.types import (
    AnyEvent,
    AttestationWithdrawn,
    KeyRegistered,
    KeyRevoked,
    KeyRotated,
    RerunClaimedV2,
)

if TYPE_CHECKING:
    from events.keyring import KeyView

__all__ = [
    "EVENT_RULES",
    "GENESIS_ROLE",
    "INDEX_ONLY",
    "ONLINE_ROLES",
    "SELF_REGISTERING_ROLE",
    "WRITERS",
    "Refusal",
    "Rule",
    "attester_refusal",
    "by_role",
    "grant_applies",
    "own_key_event",
    "refusal",
    "self_registration",
    "signing_key",
    "worker_refusal",
    "writers",
]

GENESIS_ROLE = "index"
"""The role of the key the genesis entry registers (and is signed by)."""

SELF_REGISTERING_ROLE = "community"
"""The one role a key gives itself (its own registration, with proof of possession)."""

ONLINE_ROLES = frozenset({"community", "rerunner"})
"""The roles of the keys that live outside the index: only they are granted a role, and only
they are revoked or granted over the API (the index and log keys sign the log itself and change
offline)."""

INDEX_ONLY = frozenset({"index"})

WRITERS: Mapping[str, frozenset[str]] = {
    # Attesters sign their own statements: the index key signs only the index's own events.
    "attestation.posted.v1": ONLINE_ROLES,
    "attestation.withdrawn.v1": ONLINE_ROLES,
    "rerun.claimed.v1": frozenset({"rerunner"}),
    "rerun.claimed.v2": frozenset({"rerunner"}),
    "rerun.completed.v1": frozenset({"rerunner"}),
    "rerun.completed.v2": frozenset({"rerunner"}),
}
"""The roles whose keys may sign each entry type; every type not named here: ``INDEX_ONLY``."""

EVENT_RULES = frozenset(
    {
        "key.registered.v1",
        "key.revoked.v1",
        "key.rotated.v1",
        "attestation.withdrawn.v1",
        "rerun.claimed.v2",
    }
)
"""The entry types whose rule reads the event (and the genesis entry's, whatever its type):
for every other type, the type, the signer's key and the position decide."""

Rule = Literal["genesis", "signer", "role", "attester", "worker"]


class Refusal(NamedTuple):
    """Why a signer may not sign an entry: the ``rule`` it breaks, the ``reason`` in the words
    ``benchproof verify`` reports (without the ``entry N:`` it puts before it), and the
    signer's role at the position, when it had a valid key."""

    rule: Rule
    reason: str
    role: str | None = None


def writers(entry_type: str) -> frozenset[str]:
    """The roles whose keys may sign an entry of ``entry_type``."""
    return WRITERS.get(entry_type, INDEX_ONLY)


def signing_key(keys: Mapping[str, KeyView], signer: str, seq: int) -> KeyView | None:
    """The signer's key if it is valid at position ``seq``."""
    key = keys.get(signer)
    return key if key is not None and key.valid_at(seq) else None


def self_registration(event: AnyEvent | None, signer: str, keys: Mapping[str, KeyView]) -> bool:
    """Is ``event`` a community key registering itself, new to the log?"""
    return (
        isinstance(event, KeyRegistered)
        and event.role == SELF_REGISTERING_ROLE
        and event.keyId == signer
        and signer not in keys
    )


def own_key_event(event: AnyEvent | None, signer: str) -> bool:
    """Is ``event`` the signer revoking itself, or rotating itself to a successor?"""
    return isinstance(event, KeyRevoked | KeyRotated) and event.keyId == signer


def attester_refusal(signer: str, attester: str | None) -> Refusal | None:
    """A withdrawal by ``signer`` of an attestation ``attester`` posted (None: no attestation
    the log holds)."""
    if signer == attester:
        return None
    return Refusal(
        "attester", "the withdrawal is not signed by the key that posted the attestation"
    )


def worker_refusal(event: RerunClaimedV2, signer: str) -> Refusal | None:
    """A claim signed by ``signer``: a worker claims for itself."""
    if event.worker == signer:
        return None
    return Refusal("worker", "the claim is not signed by the worker it names")


def _genesis(event: AnyEvent | None, signer: str) -> Refusal | None:
    if not isinstance(event, KeyRegistered) or event.role != GENESIS_ROLE:
        return Refusal("genesis", "the genesis entry must register the index key")
    if event.keyId != signer:
        return Refusal("genesis", "the genesis entry must be signed by the key it registers")
    return None


def _not_valid(signer: str) -> Refusal:
    return Refusal("signer", f"signed by key {signer[:16]}…, which is not valid at this position")


def refusal(
    entry_type: str,
    signer: str,
    keys: Mapping[str, KeyView],
    seq: int,
    event: AnyEvent | None = None,
    *,
    attester: str | None = None,
) -> Refusal | None:
    """Why ``signer`` may not sign the entry of ``entry_type`` at position ``seq``, given the
    ``keys`` as they stand there; None if it may.

    ``event``: the entry's event, which the types in ``EVENT_RULES`` (and position 0) need;
    None when its payload does not decode, and then the rules that read it are not applied
    (the caller reports the payload). ``attester``: for a withdrawal, the key that posted the
    attestation it names (None: the log holds no such attestation).
    """
    if seq == 0:
        return _genesis(event, signer)
    key = signing_key(keys, signer, seq)
    if key is None:
        return None if self_registration(event, signer, keys) else _not_valid(signer)
    return by_role(entry_type, key.role, signer, event, attester=attester)


def by_role(
    entry_type: str,
    role: str | None,
    signer: str,
    event: AnyEvent | None = None,
    *,
    attester: str | None = None,
) -> Refusal | None:
    """``refusal`` past the genesis entry, for a folder that knows the signer's ``role`` at the
    position (None: no key valid there) rather than the keys."""
    if role is None:
        return _not_valid(signer)
    if role not in writers(entry_type) and not own_key_event(event, signer):
        return Refusal("role", f"a {role} key may not write {entry_type}", role)
    if isinstance(event, AttestationWithdrawn):
        refused = attester_refusal(signer, attester)
        return None if refused is None else refused._replace(role=role)
    if isinstance(event, RerunClaimedV2):
        refused = worker_refusal(event, signer)
        return None if refused is None else refused._replace(role=role)
    return None


def grant_applies(key: KeyView, role: str, seq: int) -> bool:
    """Does granting ``role`` to ``key`` at position ``seq`` change it? Only a key valid there,
    of an online role other than ``role`` (the index and log keys keep theirs)."""
    return key.valid_at(seq) and key.role in ONLINE_ROLES and key.role != role
