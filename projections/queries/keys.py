"""The keyring as the projections hold it now: every key the log registered, with its role,
validity and rotation; and how many attestations each key posted."""

from __future__ import annotations

import sqlite3

from projections.keyring import KeyView

__all__ = ["attestation_counts", "keyring"]


def keyring(conn: sqlite3.Connection) -> dict[str, KeyView]:
    """Every key the projection knows, by key id."""
    out = {}
    for key_id, role, name, public, since, until, reason, rotated in conn.execute(
        "SELECT key_id, role, name, public_key, valid_from, revoked_at, revoked_reason, rotated_to FROM p_keys"
    ):
        out[key_id] = KeyView(key_id, role, name, public, since, until, reason, rotated)
    return out


def attestation_counts(conn: sqlite3.Connection) -> dict[str, int]:
    """How many attestations each key posted (withdrawn and hidden ones too: every one is an
    entry the key signed), by key id; a key that posted none is left out."""
    rows = conn.execute("SELECT attester, count(*) FROM p_attestations GROUP BY attester")
    return {attester: count for attester, count in rows}
