"""What an import asks before it appends: which manifests, runs and sources the log already
holds, and which run a source row last produced. Each answers for the current state."""

from __future__ import annotations

from events.port import Session

__all__ = ["known_manifests", "latest_for_row", "registered_sources", "run_exists"]


def _present(conn: Session, sql: str, digests: list[str]) -> set[str]:
    """Which of ``digests`` the query (``... IN ({marks})``) finds, 500 at a time."""
    found: set[str] = set()
    for i in range(0, len(digests), 500):
        chunk = digests[i : i + 500]
        found.update(
            r[0] for r in conn.execute(sql.format(marks=",".join("?" * len(chunk))), chunk)
        )
    return found


def known_manifests(conn: Session, digests: list[str]) -> set[str]:
    """Which of ``digests`` the log holds as manifests now."""
    return _present(conn, "SELECT digest FROM p_manifests WHERE digest IN ({marks})", digests)


def run_exists(conn: Session, digests: list[str]) -> set[str]:
    """Which of ``digests`` are runs the log holds now."""
    return _present(
        conn,
        "SELECT run_digest FROM p_runs WHERE valid_to IS NULL AND run_digest IN ({marks})",
        digests,
    )


def latest_for_row(conn: Session, row_key: str) -> str | None:
    """The newest run ingested from the source row ``row_key``, if any."""
    row = conn.execute(
        "SELECT run_digest FROM p_rowkeys WHERE row_key = ? ORDER BY valid_from DESC LIMIT 1",
        (row_key,),
    ).fetchone()
    return None if row is None else str(row[0])


def registered_sources(conn: Session) -> set[str]:
    """The names of every source the log has registered."""
    return {row[0] for row in conn.execute("SELECT source FROM p_sources")}
