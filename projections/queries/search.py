"""Reads the HTML pages and the runs API need: the sources with their notices, the hardware on
record and the one search over runs (its filters, its order and its keyset). Each answers as of
a tree size."""

from __future__ import annotations

from typing import Any, NamedTuple

import msgspec

from events.port import Session
from events.statements import sql
from projections.columns import column_text
from projections.queries._asof import FAR, LIVE, RUN, at
from projections.views import RunView

__all__ = [
    "Found",
    "RunKey",
    "Source",
    "hardware_names",
    "run_sources",
    "search_runs",
    "sources",
]


class Source(msgspec.Struct, frozen=True):
    """A source: its display name, where it publishes, its license and notice, how many runs it
    has. ``registered`` is False for a source the runs name that no registration describes (runs
    imported from manifests name their source themselves): its name is its key."""

    source: str
    name: str
    url: str | None
    license: str | None
    notice: str | None
    runs: int = 0
    registered: bool = True


_RUN_COUNTS = sql(f"SELECT source, count(*) FROM p_runs WHERE {LIVE} GROUP BY source")
_RUN_COUNTS_NOW = sql("SELECT source, runs FROM p_run_sources")
_SOURCES = sql(
    "SELECT source, name, url, license, notice FROM p_sources WHERE valid_from <= ? ORDER BY name"
)
_HARDWARE = sql(
    f"SELECT DISTINCT hardware FROM p_runs WHERE hardware IS NOT NULL AND {LIVE} ORDER BY hardware"
)


def _run_counts(conn: Session, p: int) -> dict[str, int]:
    """The runs of each source as of the size ``p`` (``FAR``: now, as the fold keeps them)."""
    rows = (
        conn.execute(_RUN_COUNTS_NOW) if p == FAR else conn.execute(_RUN_COUNTS, (p, p))
    ).fetchall()
    return {str(source): int(n) for source, n in rows}


def sources(conn: Session, as_of: int | None = None) -> list[Source]:
    """Every source registered at ``as_of``, with how many runs it had then."""
    return _registered(conn, at(as_of), _run_counts(conn, at(as_of)))


def _registered(conn: Session, p: int, counts: dict[str, int]) -> list[Source]:
    rows = conn.execute(_SOURCES, (p,)).fetchall()
    return [
        Source(source, name, url, license_, notice, counts.get(source, 0))
        for source, name, url, license_, notice in rows
    ]


def run_sources(conn: Session, as_of: int | None = None) -> list[Source]:
    """Every source a run names or a registration describes at ``as_of``: the registered ones
    (``sources``), then those only runs name (``registered=False``), by key. Their counts add
    up to every run."""
    p = at(as_of)
    counts = _run_counts(conn, p)  # counted once, for both lists
    listed = _registered(conn, p, counts)
    known = {s.source for s in listed}
    return listed + [
        Source(name, name, None, None, None, n, registered=False)
        for name, n in sorted(counts.items())
        if name not in known
    ]


# Now: from one accelerator to the next in the partial index of current runs by hardware, a
# step per accelerator (not a row per run).
_HARDWARE_NOW = sql(
    "WITH RECURSIVE h(name) AS ("
    " SELECT min(hardware) FROM p_runs WHERE valid_to IS NULL AND hardware IS NOT NULL"
    " UNION ALL SELECT (SELECT min(hardware) FROM p_runs WHERE valid_to IS NULL AND hardware > h.name)"
    " FROM h WHERE h.name IS NOT NULL)"
    " SELECT name FROM h WHERE name IS NOT NULL"
)


def hardware_names(conn: Session, as_of: int | None = None) -> list[str]:
    """The distinct accelerators the runs name."""
    if as_of is None:
        return [r[0] for r in conn.execute(_HARDWARE_NOW)]
    p = at(as_of)
    rows = conn.execute(_HARDWARE, (p, p))
    return [r[0] for r in rows]


class RunKey(NamedTuple):
    """Where a run sorts: its workload (the benchmark it ran, else its workload manifest's
    name, else its own name), whether it has no primary value (runs without one come last),
    its primary value best-first (negated where higher is better) and its digest (the
    tie-break)."""

    workload: str
    unvalued: int
    value: float
    digest: str


class Found(NamedTuple):
    """A run a search found, with the key it sorts by (a cursor is made of it)."""

    view: RunView
    key: RunKey


# The sort key of a run as columns, computed once per row in the inner select. The workload is
# the benchmark the source names (if not blank), else the name of the run's workload manifest
# (as the log held it), else the run's own name. ``{where}``: the filters; ``{after}``: the
# keyset cursor; ``{limit}``: at most how many.
_SEARCH = sql(
    "SELECT * FROM (SELECT view, run_digest,"
    " COALESCE(NULLIF(benchmark, ''),"
    " (SELECT NULLIF(m.name, '') FROM p_manifests m WHERE"
    " m.digest = workload_digest AND m.valid_from <= ?),"
    " name, '') AS k_workload,"
    " CASE WHEN primary_value IS NULL THEN 1 ELSE 0 END AS k_unvalued,"
    " COALESCE(CASE direction WHEN 'higher' THEN -primary_value ELSE primary_value END, 0.0)"
    " AS k_value"
    " FROM p_runs WHERE {where}) AS keyed{after}"
    " ORDER BY k_workload, k_unvalued, k_value, run_digest{limit}"
)
_AFTER = " WHERE (k_workload, k_unvalued, k_value, run_digest) > (?, ?, ?, ?)"
# Now (no ``asOf``): the same order, read from the key the fold keeps for every current run, in
# the order of the partial index ``p_runs_current_order``: a page reads its runs and stops.
_SEARCH_NOW = sql(
    "SELECT view, run_digest, k_workload, k_unvalued, k_value FROM p_runs"
    " WHERE {where}{after}"
    " ORDER BY k_workload, k_unvalued, k_value, run_digest{limit}"
)
_AFTER_NOW = " AND (k_workload, k_unvalued, k_value, run_digest) > (?, ?, ?, ?)"
# A run matches a text by its name, title or benchmark, or by its operation's name or title (an
# OperationSpec the log holds); ``{like}`` ignores the case of ASCII letters on both stores.
_TEXT = (
    "(name {like} ? ESCAPE '\\' OR title {like} ? ESCAPE '\\' OR benchmark {like} ? ESCAPE '\\'"
    " OR operation_digest IN (SELECT digest FROM p_manifests WHERE kind = 'OperationSpec'"
    " AND valid_from <= ? AND (name {like} ? ESCAPE '\\' OR title {like} ? ESCAPE '\\')))"
)


def _like(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def search_runs(
    conn: Session,
    as_of: int | None = None,
    *,
    text: str | None = None,
    source: str | None = None,
    hardware: str | None = None,
    evidence: str | None = None,
    group_key: str | None = None,
    after: RunKey | None = None,
    limit: int | None = 50,
) -> list[Found]:
    """Runs whose name, title, benchmark or operation (name or title) contains ``text``
    (case-insensitive), of ``source`` on ``hardware`` at the ``evidence`` level in the group
    ``group_key`` (each None: any), in ``RunKey`` order (by workload, then primary value
    best-first, then digest) after the keyset cursor ``after``; at most ``limit`` (None: all).
    The home page's search, ``GET /v1/runs`` and ``runs list`` all read runs through here."""
    p = at(as_of)
    now = as_of is None
    clauses = ["valid_to IS NULL"] if now else [LIVE]
    # As of a size: the workload's manifest, then the live version.
    params: list[Any] = [] if now else [p, p, p]
    for column, value in (
        ("source", source),
        ("hardware", hardware),
        ("evidence_level", evidence),
        ("group_key", group_key),
    ):
        if value is not None:
            clauses.append(f"{column} = ?")
            params.append(column_text(value))
    if text:
        pattern = _like(column_text(text))
        clauses.append(_TEXT)
        params += [pattern, pattern, pattern, p, pattern, pattern]
    if after is not None:
        params += [column_text(after.workload), after.unvalued, after.value, after.digest]
    if limit is not None:
        params.append(int(limit))
    statement = (_SEARCH_NOW if now else _SEARCH).format(
        where=" AND ".join(clauses),
        after="" if after is None else _AFTER_NOW if now else _AFTER,
        limit="" if limit is None else " LIMIT ?",
    )
    return [
        Found(RUN.decode(body), RunKey(str(w), int(n), float(v), str(digest)))
        for body, digest, w, n, v in conn.execute(statement, params)
    ]
