"""Reads of runs: one run as it stood, its versions and aliases, what a reference names, and
runs listed in digest order."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator
from typing import Any

from projections.errors import AmbiguousRun, UnknownRun
from projections.queries._asof import LIVE, RUN, at
from projections.views import RunView

__all__ = [
    "aliases_of",
    "all_aliases",
    "has_runs",
    "list_runs",
    "resolve_run",
    "run_versions",
    "run_view",
]

_HEX = re.compile(r"^[0-9a-f]{12,64}\Z")
_FULL = re.compile(r"^sha256:[0-9a-f]{64}\Z")


def run_view(conn: sqlite3.Connection, digest: str, as_of: int | None = None) -> RunView | None:
    """The run as it stood at ``as_of``."""
    p = at(as_of)
    row = conn.execute(
        f"SELECT view FROM p_runs WHERE run_digest = ? AND {LIVE}", (digest, p, p)
    ).fetchone()
    return None if row is None else RUN.decode(row[0])


def run_digests(conn: sqlite3.Connection, as_of: int | None = None) -> list[str]:
    """The digest of every run the log held at ``as_of`` (whatever its status), in order."""
    p = at(as_of)
    return [
        r[0]
        for r in conn.execute(
            f"SELECT run_digest FROM p_runs WHERE {LIVE} ORDER BY run_digest", (p, p)
        )
    ]


def has_runs(conn: sqlite3.Connection) -> bool:
    """Whether the log holds any run (in any version)."""
    return conn.execute("SELECT 1 FROM p_runs LIMIT 1").fetchone() is not None


def resolve_run(conn: sqlite3.Connection, ref: str, as_of: int | None = None) -> str:
    """The run digest a reference names: a full ``sha256:`` digest, a short id (the first 12 or
    more hex digits), ``kernelindex:<uuid>`` or a source alias ``<source>:<externalId>``.

    Raises:
        UnknownRun: nothing matches (malformed references included).
        AmbiguousRun: the reference names several runs (``details["candidates"]``).
    """
    p = at(as_of)
    ref = ref.strip()
    candidates: list[str] = []
    if _FULL.match(ref):
        live = conn.execute(
            f"SELECT 1 FROM p_runs WHERE run_digest = ? AND {LIVE} LIMIT 1", (ref, p, p)
        ).fetchone()
        candidates = [ref] if live is not None else []
    elif _HEX.match(ref):
        low = "sha256:" + ref
        rows = conn.execute(
            f"SELECT DISTINCT run_digest FROM p_runs WHERE run_digest >= ? AND run_digest < ? AND {LIVE} LIMIT 20",
            (low, low + "g", p, p),
        ).fetchall()
        candidates = [r[0] for r in rows]
    if not candidates and ":" in ref:
        rows = conn.execute(
            "SELECT a.run_digest FROM p_aliases a WHERE a.alias = ? AND a.valid_from <= ? ORDER BY a.run_digest",
            (ref, p),
        ).fetchall()
        candidates = [r[0] for r in rows]
    if not candidates:
        raise UnknownRun(f"no run matches {ref!r}", reference=ref)
    if len(candidates) > 1:
        candidates = _current_of_corrections(conn, candidates, as_of)
    if len(candidates) > 1:
        raise AmbiguousRun(
            f"{ref!r} names {len(candidates)} runs; choose one by digest",
            reference=ref,
            candidates=candidates,
        )
    return candidates[0]


def _current_of_corrections(
    conn: sqlite3.Connection, candidates: list[str], as_of: int | None
) -> list[str]:
    """The candidates an alias names, less those superseded by another of them: an alias that
    names one source row, corrected over time, names its current run. Runs that merely share an
    external id (KernelBot reuses them) supersede nothing and stay ambiguous."""
    names = set(candidates)
    views = {c: run_view(conn, c, as_of) for c in candidates}
    return [c for c in candidates if (v := views[c]) is None or v.supersededBy not in names]


def run_versions(
    conn: sqlite3.Connection, digest: str, as_of: int | None = None
) -> list[tuple[int, RunView]]:
    """Every version of a run up to ``as_of``: (position of the entry that made it, view)."""
    rows = conn.execute(
        "SELECT valid_from, view FROM p_runs WHERE run_digest = ? AND valid_from <= ? ORDER BY valid_from",
        (digest, at(as_of)),
    )
    return [(int(r[0]) - 1, RUN.decode(r[1])) for r in rows]


def aliases_of(conn: sqlite3.Connection, digest: str, as_of: int | None = None) -> list[str]:
    """The aliases of a run at ``as_of``, sorted."""
    rows = conn.execute(
        "SELECT alias FROM p_aliases WHERE run_digest = ? AND valid_from <= ? ORDER BY alias",
        (digest, at(as_of)),
    )
    return [r[0] for r in rows]


def all_aliases(conn: sqlite3.Connection, as_of: int | None = None) -> dict[str, list[str]]:
    """Every run's aliases, in one scan."""
    out: dict[str, list[str]] = {}
    for alias, digest in conn.execute(
        "SELECT alias, run_digest FROM p_aliases WHERE valid_from <= ? ORDER BY alias",
        (at(as_of),),
    ):
        out.setdefault(digest, []).append(alias)
    return out


def list_runs(
    conn: sqlite3.Connection,
    as_of: int | None = None,
    *,
    group_key: str | None = None,
    source: str | None = None,
    evidence: str | None = None,
    hardware: str | None = None,
    after: str | None = None,
    limit: int | None = None,
) -> Iterator[RunView]:
    """Runs ordered by digest (keyset pagination: ``after`` the last digest seen)."""
    p = at(as_of)
    clauses: list[str] = [LIVE]
    params: list[Any] = [p, p]
    for column, value in (
        ("group_key", group_key),
        ("source", source),
        ("evidence_level", evidence),
        ("hardware", hardware),
    ):
        if value is not None:
            clauses.append(f"{column} = ?")
            params.append(value)
    if after is not None:
        clauses.append("run_digest > ?")
        params.append(after)
    sql = f"SELECT view FROM p_runs WHERE {' AND '.join(clauses)} ORDER BY run_digest"
    if limit is not None:
        sql += f" LIMIT {int(limit)}"
    for (body,) in conn.execute(sql, params):
        yield RUN.decode(body)
