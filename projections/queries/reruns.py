"""Reads of rerun requests: which requests the index recorded, and the run each is about (its
state lives in the run's view, ``RunView.rerunRequests``)."""

from __future__ import annotations

from events.port import Session
from events.statements import sql

__all__ = ["rerun_request_ids", "rerun_request_run"]

_IDS = sql("SELECT id FROM p_reruns WHERE kind = 'requested' ORDER BY valid_from")
_RUN = sql("SELECT run_digest FROM p_reruns WHERE id = ? AND kind = 'requested'")


def rerun_request_ids(conn: Session) -> list[str]:
    """The ids of every rerun request recorded, oldest first."""
    rows = conn.execute(_IDS)
    return [request_id for (request_id,) in rows]


def rerun_request_run(conn: Session, request_id: str) -> str | None:
    """The digest of the run the request ``request_id`` is about (None: no such request)."""
    row = conn.execute(_RUN, (request_id,)).fetchone()
    return None if row is None else str(row[0])
