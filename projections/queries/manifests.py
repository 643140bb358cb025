"""Manifests as the log held them: those the projections copied (the ones runs reference), and
a run's own manifest, which stays in its ``run.ingested`` entry (it is in the log once)."""

from __future__ import annotations

from typing import Any

from events.decoding import decode_event
from events.entries import read_entry
from events.port import LogReader, Session
from events.statements import sql
from events.types import RunIngested
from projections.queries._asof import JSON, at

__all__ = ["ingest_position", "manifest", "run_bundle", "run_manifest"]

_MANIFEST = sql("SELECT body FROM p_manifests WHERE digest = ? AND valid_from <= ?")
_INGESTED = sql("SELECT min(valid_from) FROM p_runs WHERE run_digest = ? AND valid_from <= ?")


def manifest(conn: Session, digest: str, as_of: int | None = None) -> dict[str, Any] | None:
    """The manifest with spec digest ``digest`` that the projections hold, if the log held it
    at ``as_of``. A run's own manifest is not among them: ``run_manifest`` reads it."""
    row = conn.execute(_MANIFEST, (digest, at(as_of))).fetchone()
    if row is None:
        return None
    body: dict[str, Any] = JSON.decode(row[0])
    return body


def ingest_position(conn: Session, digest: str, as_of: int | None = None) -> int | None:
    """The position of the run's ``run.ingested`` entry, if the log held the run at ``as_of``
    (a run's first version is made by that entry, at position ``valid_from - 1``)."""
    row = conn.execute(_INGESTED, (digest, at(as_of))).fetchone()
    return None if row[0] is None else int(row[0]) - 1


def run_bundle(
    conn: Session, log: LogReader, digest: str, as_of: int | None = None
) -> dict[str, dict[str, Any]] | None:
    """The manifests the run ``digest`` was ingested with, by role (its own as ``run``), if the
    log held the run at ``as_of``: read from the run's ``run.ingested`` entry in ``log`` (the
    projections say where it is)."""
    seq = ingest_position(conn, digest, as_of)
    leaf = log.leaf(seq) if seq is not None else None
    if seq is None or leaf is None:
        return None
    event = decode_event(read_entry(leaf, position=seq))
    if not isinstance(event, RunIngested) or event.runDigest != digest:
        return None
    return event.manifests


def run_manifest(
    conn: Session, log: LogReader, digest: str, as_of: int | None = None
) -> dict[str, Any] | None:
    """The manifest of the run ``digest`` (``run_bundle``'s ``run``)."""
    bundle = run_bundle(conn, log, digest, as_of)
    return None if bundle is None else bundle["run"]
