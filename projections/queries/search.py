"""Reads the HTML pages need: the sources with their notices, the hardware on record and a
substring search over runs. Each answers as of a tree size."""

from __future__ import annotations

import sqlite3
from typing import Any

import msgspec

from projections.queries._asof import LIVE, RUN, at
from projections.views import RunView

__all__ = ["Source", "hardware_names", "search_runs", "sources"]


class Source(msgspec.Struct, frozen=True):
    """A registered source: its display name, where it publishes, its license and notice."""

    source: str
    name: str
    url: str | None
    license: str | None
    notice: str | None
    runs: int = 0


def sources(conn: sqlite3.Connection, as_of: int | None = None) -> list[Source]:
    """Every source registered at ``as_of``, with how many runs it had then."""
    p = at(as_of)
    counts = dict(
        conn.execute(
            f"SELECT source, count(*) FROM p_runs WHERE {LIVE} GROUP BY source", (p, p)
        ).fetchall()
    )
    rows = conn.execute(
        "SELECT source, name, url, license, notice FROM p_sources WHERE valid_from <= ? ORDER BY name",
        (p,),
    ).fetchall()
    return [
        Source(source, name, url, license_, notice, int(counts.get(source, 0)))
        for source, name, url, license_, notice in rows
    ]


def hardware_names(conn: sqlite3.Connection, as_of: int | None = None) -> list[str]:
    """The distinct accelerators the runs name."""
    p = at(as_of)
    rows = conn.execute(
        f"SELECT DISTINCT hardware FROM p_runs WHERE hardware IS NOT NULL AND {LIVE}"
        " ORDER BY hardware",
        (p, p),
    )
    return [r[0] for r in rows]


def _like(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def search_runs(
    conn: sqlite3.Connection,
    as_of: int | None = None,
    *,
    text: str | None = None,
    source: str | None = None,
    hardware: str | None = None,
    after: str | None = None,
    limit: int = 50,
) -> list[RunView]:
    """Runs whose name, title, benchmark or operation (name or title) contains ``text``
    (case-insensitive), of ``source`` on ``hardware``, ordered by digest after the keyset
    cursor ``after``; at most ``limit``."""
    p = at(as_of)
    clauses = [LIVE]
    params: list[Any] = [p, p]
    if source:
        clauses.append("source = ?")
        params.append(source)
    if hardware:
        clauses.append("hardware = ?")
        params.append(hardware)
    if after:
        clauses.append("run_digest > ?")
        params.append(after)
    if text:
        # The views are stored as JSON bytes; SQLite's JSON functions read text only.
        fields = ("$.name", "$.title", "$.benchmark")
        # A run also matches by its operation's name or title (an OperationSpec the log holds).
        operation = (
            "json_extract(CAST(view AS TEXT), '$.operationDigest') IN (SELECT digest FROM"
            " p_manifests WHERE kind = 'OperationSpec' AND valid_from <= ? AND (name LIKE ?"
            " ESCAPE '\\' OR json_extract(CAST(body AS TEXT), '$.metadata.title') LIKE ?"
            " ESCAPE '\\'))"
        )
        clauses.append(
            "("
            + " OR ".join(
                f"json_extract(CAST(view AS TEXT), '{f}') LIKE ? ESCAPE '\\'" for f in fields
            )
            + " OR "
            + operation
            + ")"
        )
        params += [_like(text)] * len(fields) + [p, _like(text), _like(text)]
    where = " AND ".join(clauses)
    sql = f"SELECT view FROM p_runs WHERE {where} ORDER BY run_digest LIMIT ?"
    params.append(limit)
    return [RUN.decode(r[0]) for r in conn.execute(sql, params)]
