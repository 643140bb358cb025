"""The keyring as the projections hold it now: every key the log registered, with its role,
validity and rotation."""

from __future__ import annotations

import sqlite3

from projections.keyring import KeyView

__all__ = ["keyring"]


def keyring(conn: sqlite3.Connection) -> dict[str, KeyView]:
    """Every key the projection knows, by key id."""
    out = {}
    for key_id, role, name, public, since, until, reason, rotated in conn.execute(
        "SELECT key_id, role, name, public_key, valid_from, revoked_at, revoked_reason, rotated_to FROM p_keys"
    ):
        out[key_id] = KeyView(key_id, role, name, public, since, until, reason, rotated)
    return out
