"""How far the projections have got, and in which format: the reads of ``p_state``.

``p_state`` holds one row per name: ``all`` (the tree size the projections have applied),
``format`` (the format number of the folds that wrote them, ``projections.materialize.FORMAT``)
and ``keys`` (the tree size after the last entry that changed the keyring).
"""

from __future__ import annotations

from events.port import Session
from events.statements import sql

__all__ = ["current_size", "keys_version", "stored_format"]

_STATE = sql("SELECT position FROM p_state WHERE projection = ?")
_COOKIE = sql(
    sqlite="PRAGMA schema_version",
    # Projection tables made again get a new oid: the cookie moves, as SQLite's does.
    postgresql="SELECT coalesce(to_regclass('p_keys')::oid::bigint, 0)",
)


def _state(conn: Session, name: str) -> int | None:
    row = conn.execute(_STATE, (name,)).fetchone()
    return None if row is None else int(row[0])


def current_size(conn: Session) -> int:
    """The tree size the projections have applied (0 before any)."""
    return _state(conn, "all") or 0


def stored_format(conn: Session) -> int | None:
    """The format number of the folds that wrote the projections (``None``: written before
    formats were recorded, or never written)."""
    return _state(conn, "format")


def keys_version(conn: Session) -> tuple[int, int]:
    """Where the keyring last changed (the tree size after its last key entry, 0 before any),
    and the database's schema cookie: the keyring read at one version is the keyring until
    either moves (a rebuild or a replay's repair recreates the tables, which moves the cookie
    even when the last key entry stays where it was)."""
    (cookie,) = conn.execute(_COOKIE).fetchone()
    return _state(conn, "keys") or 0, int(cookie)
