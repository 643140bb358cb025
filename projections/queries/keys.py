"""The keyring as the projections hold it now: every key the log registered, with its role,
validity and rotation; how many attestations each key posted; and which entries each key
signed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from events.keyring import KeyView
from events.port import Session
from events.statements import sql
from projections.queries.state import keys_version

__all__ = [
    "KeyringCache",
    "attestation_counts",
    "keyring",
    "matching_keys",
    "signed_by",
    "signed_counts",
]

_KEYS = sql(
    "SELECT key_id, role, name, public_key, valid_from, revoked_at, revoked_reason, rotated_to,"
    " role_since, role_before FROM p_keys"
)
_PREFIXED = sql(
    "SELECT key_id FROM p_keys WHERE key_id >= ? AND key_id < ? ORDER BY key_id LIMIT ?"
)
_ATTESTATIONS = sql("SELECT attester, count(*) FROM p_attestations GROUP BY attester")
_SIGNERS = sql("SELECT key_id, entries FROM p_signers")
_SIGNERS_OF = sql("SELECT key_id, entries FROM p_signers WHERE key_id IN ({marks})")
_SIGNED = sql(
    "SELECT position FROM p_signed WHERE key_id = ? AND position > ? ORDER BY position LIMIT ?"
)


def keyring(conn: Session) -> dict[str, KeyView]:
    """Every key the projection knows, by key id."""
    out = {}
    for row in conn.execute(_KEYS):
        key_id, role, name, public, since, until, reason, rotated, role_since, before = row
        out[key_id] = KeyView(
            key_id, role, name, public, since, until, reason, rotated, role_since, before
        )
    return out


def matching_keys(conn: Session, ref: str, *, limit: int = 20) -> list[str]:
    """The ids of the keys whose id starts with ``ref`` (a short id: its first hex digits, as
    pages show a key), in id order, at most ``limit``; ``ref`` itself when a key has it. None
    for a ``ref`` that is no hex digits."""
    ref = ref.strip().lower()
    if not ref or not all(c in "0123456789abcdef" for c in ref):
        return []
    return [r[0] for r in conn.execute(_PREFIXED, (ref, ref + "g", limit))]


_NOTHING = (-1, -1)


class KeyringCache:
    """The keyring of one database: read again only when its version (``keys_version``)
    moved, so checking a signer costs one primary-key lookup, not a read of every key. Shared
    by many readers (threads, each with its own connection); the writer's fold hands it the
    keyring it just folded (``hold``) and drops it when its transaction is undone
    (``forget``). The mapping it answers is shared: never change it."""

    def __init__(self) -> None:
        self._held: tuple[tuple[int, int], Mapping[str, KeyView]] = (_NOTHING, {})

    def __call__(self, conn: Session) -> Mapping[str, KeyView]:
        version = keys_version(conn)
        held = self._held
        if held[0] != version:
            held = (version, keyring(conn))
            self._held = held
        return held[1]

    def hold(self, conn: Session, keys: Mapping[str, KeyView]) -> None:
        """Keep ``keys``, the keyring as ``conn`` now holds it (written in its transaction)."""
        self._held = (keys_version(conn), keys)

    def forget(self) -> None:
        """Read the keyring again next time."""
        self._held = (_NOTHING, {})


def attestation_counts(conn: Session) -> dict[str, int]:
    """How many attestations each key posted (withdrawn and hidden ones too: every one is an
    entry the key signed), by key id; a key that posted none is left out."""
    rows = conn.execute(_ATTESTATIONS)
    return {attester: count for attester, count in rows}


def signed_counts(conn: Session, key_ids: Sequence[str] | None = None) -> dict[str, int]:
    """How many entries each key signed (every entry: registrations, attestations,
    withdrawals, reruns, and for the index key every event of the index), by key id; only
    ``key_ids``, if given."""
    if key_ids is None:
        rows = conn.execute(_SIGNERS)
    else:
        rows = conn.execute(_SIGNERS_OF.marks(len(key_ids)), list(key_ids))
    return {key_id: count for key_id, count in rows}


def signed_by(
    conn: Session, key_id: str, *, after: int | None = None, limit: int = 100
) -> list[int]:
    """The positions of the entries ``key_id`` signed (after position ``after``), oldest
    first, at most ``limit``."""
    rows = conn.execute(_SIGNED, (key_id, -1 if after is None else after, limit))
    return [position for (position,) in rows]
