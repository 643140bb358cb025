"""What an import asks before it appends: which manifests, runs and sources the log already
holds, and which run a source row last produced. Each answers for the current state."""

from __future__ import annotations

from events.port import Session
from events.statements import Statement, sql

__all__ = ["known_manifests", "latest_for_rows", "registered_sources", "run_exists"]


_MANIFESTS = sql("SELECT digest FROM p_manifests WHERE digest IN ({marks})")
_RUNS = sql("SELECT run_digest FROM p_runs WHERE valid_to IS NULL AND run_digest IN ({marks})")
_LATEST = sql(
    "SELECT row_key, run_digest FROM p_rowkeys WHERE row_key IN ({marks}) ORDER BY row_key, valid_from"
)
_SOURCES = sql("SELECT source FROM p_sources")


def _present(conn: Session, template: Statement, digests: list[str]) -> set[str]:
    """Which of ``digests`` the query (``... IN ({marks})``) finds, 500 at a time."""
    found: set[str] = set()
    for i in range(0, len(digests), 500):
        chunk = digests[i : i + 500]
        found.update(r[0] for r in conn.execute(template.marks(len(chunk)), chunk))
    return found


def known_manifests(conn: Session, digests: list[str]) -> set[str]:
    """Which of ``digests`` the log holds as manifests now."""
    return _present(conn, _MANIFESTS, digests)


def run_exists(conn: Session, digests: list[str]) -> set[str]:
    """Which of ``digests`` are runs the log holds now."""
    return _present(conn, _RUNS, digests)


def latest_for_rows(conn: Session, row_keys: list[str]) -> dict[str, str]:
    """The newest run ingested from each of the source rows ``row_keys`` that produced one
    (500 at a time: one query each, not one a row)."""
    latest: dict[str, str] = {}
    for i in range(0, len(row_keys), 500):
        chunk = row_keys[i : i + 500]
        for row_key, run in conn.execute(_LATEST.marks(len(chunk)), chunk):
            latest[str(row_key)] = str(run)  # ordered by position: the last is the newest
    return latest


def registered_sources(conn: Session) -> set[str]:
    """The names of every source the log has registered."""
    return {row[0] for row in conn.execute(_SOURCES)}
