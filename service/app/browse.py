"""Browsing: the search of the home page (by text, source and accelerator, in keyset pages; the
search ``GET /v1/runs`` answers) with every source (their notices, how many runs each has) and
the accelerators the runs name, and runs side by side with their sources' display names. Every read answers as of a tree
size (``as_of``; None for now, the size the caller read as ``size``)."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from events.port import Session
from projections import queries
from projections.queries.search import run_sources
from projections.views import RunView
from service.app.runs import Comparison, compare, find_runs

__all__ = ["Search", "SideBySide", "search", "side_by_side"]


class Search(msgspec.Struct, frozen=True):
    """A page of found runs (``next`` is the cursor of the next page, if any), with what a
    search can be narrowed by: every source (the registered ones, then those only runs name)
    and every accelerator the runs name; ``total`` counts every run."""

    runs: list[RunView]
    sources: list[queries.Source]
    hardware: list[str]
    total: int
    asOf: int
    next: str | None = None


class SideBySide(msgspec.Struct, frozen=True):
    """Runs compared field by field, and the display name of each registered source by key."""

    comparison: Comparison
    sourceNames: dict[str, str]


def search(
    conn: Session,
    as_of: int | None,
    *,
    size: int,
    text: str | None = None,
    source: str | None = None,
    hardware: str | None = None,
    evidence: str | None = None,
    group_key: str | None = None,
    after: str | None = None,
    limit: int = 50,
) -> Search:
    """At most ``limit`` runs whose name, title, benchmark or operation contains ``text``
    (case-insensitive), of ``source`` on ``hardware`` at the ``evidence`` level in the group
    ``group_key``, found by ``runs.find_runs`` (the search
    ``GET /v1/runs`` answers too: by workload, then primary value best-first, then digest, after
    the cursor ``after``); with the sources and accelerators to narrow by.

    Raises:
        UsageError: ``source`` is not a source the log knows, ``evidence`` not an evidence
            level, or ``after`` not a cursor a page gave.
    """
    found = find_runs(
        conn,
        as_of,
        text=text,
        source=source,
        hardware=hardware,
        evidence=evidence,
        group_key=group_key,
        after=after,
        limit=limit,
    )
    listed = run_sources(conn, as_of)
    return Search(
        runs=found.views,
        sources=listed,
        hardware=queries.hardware_names(conn, as_of),
        total=sum(s.runs for s in listed),
        asOf=size if as_of is None else as_of,
        next=found.next,
    )


def side_by_side(conn: Session, refs: Sequence[str], as_of: int | None, *, size: int) -> SideBySide:
    """The runs ``refs`` name compared (``runs.compare``), with the sources' display names.

    Raises:
        UsageError: fewer than 2 or more than 8 references.
        UnknownRun, AmbiguousRun: a reference names no run, or several.
    """
    comparison = compare(conn, refs, as_of, size=size)
    return SideBySide(comparison, {s.source: s.name for s in queries.sources(conn, as_of)})
