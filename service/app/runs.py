"""Runs: one run by any reference (its dossier), pages and listings of runs, comparisons.

A reference is a short id, a ``sha256:`` digest, ``kernelindex:<uuid>`` or an alias
``<source>:<externalId>``; one that names no run raises ``UnknownRun``, one that names several
``AmbiguousRun`` (its ``details["candidates"]`` lists them). Every read answers as of a tree size
(``as_of``; None for now, the size the caller read as ``size``).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import NamedTuple, get_args

import msgspec

from events.port import LogReader, Session
from projections import queries
from projections.errors import AmbiguousRun, UnknownRun
from projections.queries.search import run_sources
from projections.views import EvidenceLevel, RunView
from service.app.cursors import one_page, run_after, run_cursor
from service.errors import UsageError
from service.readmodel.dossier import Dossier, build_dossier, short_id

__all__ = [
    "EVIDENCE_LEVELS",
    "Candidate",
    "Comparison",
    "FoundRuns",
    "ListedRun",
    "RunPage",
    "RunSheet",
    "RunSummary",
    "candidate_runs",
    "candidates",
    "compare",
    "find_runs",
    "list_runs",
    "manifest_title",
    "run_page",
    "run_sheet",
    "show_run",
    "summary",
]


class RunSummary(msgspec.Struct, frozen=True, omit_defaults=True):
    """A run as lists show it."""

    runDigest: str
    shortId: str
    kind: str
    name: str
    status: str
    source: str
    evidenceLevel: str
    observedAt: str
    title: str | None = None
    workload: str | None = None  # what the search orders by first (pages of runs only)
    comparisonKey: str | None = None
    cohortKey: str | None = None
    primaryValue: float | None = None
    primaryUnit: str | None = None
    metricKey: str | None = None
    hardware: str | None = None
    externalId: str | None = None


class RunPage(msgspec.Struct, frozen=True):
    """A page of runs by workload, then primary value best-first, then digest; ``next`` is the
    cursor of the next page, if any (pass it back as ``after``)."""

    items: list[RunSummary]
    asOf: int
    next: str | None = None


class Comparison(msgspec.Struct, frozen=True, omit_defaults=True):
    """Runs side by side: the parts of the comparison key of each, and the first that differs."""

    runs: list[RunSummary]
    comparable: bool
    fields: dict[str, list[str | None]]
    asOf: int
    firstMismatch: str | None = None


class ListedRun(NamedTuple):
    """A run of a full listing, with its rank (rank, distinct values) and aliases."""

    view: RunView
    rank: tuple[int, int] | None
    aliases: list[str]


class RunSheet(msgspec.Struct, frozen=True):
    """A run's dossier with what its page names it by: its source as registered (None if the
    source is not registered at the size read) and the title of its operation's manifest."""

    dossier: Dossier
    source: queries.Source | None
    operationTitle: str | None


class Candidate(NamedTuple):
    """A run an ambiguous reference names: its digest and its view (None if it had none at the
    size read)."""

    digest: str
    view: RunView | None


def summary(view: RunView, workload: str | None = None) -> RunSummary:
    """The list shape of a run view (``workload``: its sort key's, on pages of runs)."""
    return RunSummary(
        runDigest=view.runDigest,
        shortId=short_id(view.runDigest),
        kind=view.kind,
        name=view.name,
        status=view.status,
        source=view.source,
        evidenceLevel=view.evidenceLevel,
        observedAt=view.observedAt,
        title=view.title,
        comparisonKey=view.comparisonKey,
        cohortKey=view.cohortKey,
        primaryValue=view.primaryValue,
        primaryUnit=view.primaryUnit,
        metricKey=view.metricKey,
        hardware=view.hardware,
        externalId=view.externalId,
        workload=workload,
    )


def candidates(exc: Exception) -> list[str]:
    """The digests of the runs an ambiguous reference names (``AmbiguousRun``; none for any
    other error)."""
    found = exc.details.get("candidates") if isinstance(exc, AmbiguousRun) else None
    return [str(c) for c in found] if isinstance(found, list) else []


def show_run(
    conn: Session,
    log: LogReader,
    ref: str,
    as_of: int | None,
    *,
    size: int,
    standings: queries.StandingsCache | None = None,
) -> Dossier:
    """The dossier of the run ``ref`` names (``standings`` keeps group standings between calls).

    Raises:
        UnknownRun: nothing matches (malformed references included).
        AmbiguousRun: the reference names several runs.
    """
    digest = queries.resolve_run(conn, ref, as_of)
    dossier = build_dossier(conn, log, digest, as_of, size=size, standings=standings)
    if dossier is None:
        raise UnknownRun(f"no run matches {ref!r}", reference=ref)
    return dossier


def run_sheet(
    conn: Session,
    log: LogReader,
    ref: str,
    as_of: int | None,
    *,
    size: int,
    standings: queries.StandingsCache | None = None,
) -> RunSheet:
    """The dossier of the run ``ref`` names (``show_run``), its registered source and the title
    of its operation.

    Raises:
        UnknownRun: nothing matches (malformed references included).
        AmbiguousRun: the reference names several runs.
    """
    dossier = show_run(conn, log, ref, as_of, size=size, standings=standings)
    source = next((s for s in queries.sources(conn, as_of) if s.source == dossier.source), None)
    title = manifest_title(conn, dossier.identity.get("operationDigest"), as_of)
    return RunSheet(dossier, source, title)


def candidate_runs(conn: Session, exc: Exception, as_of: int | None) -> list[Candidate]:
    """The runs an ambiguous reference names (``candidates``), each with its view."""
    return [Candidate(digest, queries.run_view(conn, digest, as_of)) for digest in candidates(exc)]


def manifest_title(conn: Session, digest: str | None, as_of: int | None) -> str | None:
    """The ``metadata.title`` of the manifest ``digest`` as the log held it at ``as_of`` (None
    with no digest, no such manifest or no title)."""
    body = queries.manifest(conn, digest, as_of) if digest else None
    title = (body or {}).get("metadata", {}).get("title")
    return title if isinstance(title, str) else None


EVIDENCE_LEVELS: tuple[str, ...] = get_args(EvidenceLevel)
"""The evidence levels a run can have (``evidenceLevel`` takes one of them)."""


class FoundRuns(NamedTuple):
    """A page of runs in the search's order, the workload each sorts by, and the cursor of the
    next page (None: the last)."""

    views: list[RunView]
    workloads: list[str]
    next: str | None


def _blank(value: str | None) -> str | None:
    value = (value or "").strip()
    return value or None


def find_runs(
    conn: Session,
    as_of: int | None,
    *,
    text: str | None = None,
    source: str | None = None,
    hardware: str | None = None,
    evidence: str | None = None,
    group_key: str | None = None,
    after: str | None = None,
    limit: int = 100,
) -> FoundRuns:
    """The search the home page and ``GET /v1/runs`` share: at most ``limit`` runs whose name,
    title, benchmark or operation contains ``text`` (case-insensitive), narrowed by source,
    accelerator, evidence level and comparison group (blank: any), by workload, then primary
    value best-first, then digest, after the cursor ``after`` (a previous page's ``next``).

    Raises:
        UsageError: ``evidence`` is not an evidence level, ``source`` is a source the log does
            not know at ``as_of``, or ``after`` is not a cursor a page gave; ``details`` names
            the ``parameter`` and what it ``allowed``.
    """
    evidence, source = _blank(evidence), _blank(source)
    check_filters(conn, as_of, evidence=evidence, source=source)
    found = queries.search_runs(
        conn,
        as_of,
        text=_blank(text),
        source=source,
        hardware=_blank(hardware),
        evidence=evidence,
        group_key=_blank(group_key),
        after=run_after(after),
        limit=limit + 1,
    )
    page, last = one_page(found, limit, lambda f: run_cursor(f.key))
    return FoundRuns([f.view for f in page], [f.key.workload for f in page], last)


def check_filters(
    conn: Session, as_of: int | None, *, evidence: str | None, source: str | None
) -> None:
    """An evidence level and a source to filter runs by must be ones that exist (at ``as_of``).

    Raises:
        UsageError: either is not; ``details`` names the ``parameter`` and what it ``allowed``.
    """
    if evidence is not None and evidence not in EVIDENCE_LEVELS:
        raise UsageError(
            f"evidenceLevel must be one of {', '.join(EVIDENCE_LEVELS)}, not {evidence!r}",
            parameter="evidenceLevel",
            allowed=list(EVIDENCE_LEVELS),
        )
    if source is not None:
        known = [s.source for s in run_sources(conn, as_of)]
        if source not in known:
            raise UsageError(
                f"source must be a source the log knows ({', '.join(known) or 'none yet'}),"
                f" not {source!r}",
                parameter="source",
                allowed=known,
            )


def run_page(
    conn: Session,
    as_of: int | None,
    *,
    size: int,
    text: str | None = None,
    group_key: str | None = None,
    source: str | None = None,
    evidence: str | None = None,
    hardware: str | None = None,
    after: str | None = None,
    limit: int = 100,
) -> RunPage:
    """At most ``limit`` runs found by ``find_runs`` (the home page's search), after the cursor
    ``after``.

    Raises:
        UsageError: a filter or the cursor is not one the search takes (``find_runs``).
    """
    found = find_runs(
        conn,
        as_of,
        text=text,
        source=source,
        evidence=evidence,
        hardware=hardware,
        group_key=group_key,
        after=after,
        limit=limit,
    )
    items = [summary(v, w) for v, w in zip(found.views, found.workloads, strict=True)]
    return RunPage(items, size if as_of is None else as_of, found.next)


def list_runs(
    conn: Session,
    as_of: int | None,
    *,
    group_key: str | None = None,
    source: str | None = None,
    evidence: str | None = None,
) -> Iterator[ListedRun]:
    """Every run (of a group, a source, an evidence level) in the search's order (by workload,
    then primary value best-first, then digest), with its rank and aliases (each read in one
    scan, not per run).

    Raises:
        UsageError: an evidence level or source that does not exist (``check_filters``), at
            once, before anything is listed.
    """
    check_filters(conn, as_of, evidence=evidence, source=source)
    return _listed(conn, as_of, group_key=group_key, source=source, evidence=evidence)


def _listed(
    conn: Session,
    as_of: int | None,
    *,
    group_key: str | None,
    source: str | None,
    evidence: str | None,
) -> Iterator[ListedRun]:
    ranks = queries.all_ranks(conn, as_of)
    aliases = queries.all_aliases(conn, as_of)
    for view in queries.list_runs(
        conn, as_of, group_key=group_key, source=source, evidence=evidence
    ):
        yield ListedRun(view, ranks.get(view.runDigest), aliases.get(view.runDigest, []))


_COMPARED = (
    "kind",
    "operationDigest",
    "workloadDigest",
    "protocolKey",
    "environmentKey",
    "correctnessKey",
    "metricKey",
)


def compare(conn: Session, refs: Sequence[str], as_of: int | None, *, size: int) -> Comparison:
    """Compare the runs ``refs`` name (2 to 8; blank ones are ignored) field by field.

    The first material mismatch is the first part of the comparison key that differs (or is
    missing); runs with none are comparable (one comparison group).

    Raises:
        UsageError: fewer than 2 or more than 8 references.
        UnknownRun, AmbiguousRun: a reference names no run, or several.
    """
    wanted = [r.strip() for r in refs if r.strip()]
    if not 2 <= len(wanted) <= 8:
        raise UsageError(f"compare takes 2 to 8 runs, not {len(wanted)}")
    views = []
    for ref in wanted:
        view = queries.run_view(conn, queries.resolve_run(conn, ref, as_of), as_of)
        assert view is not None  # noqa: S101 - resolved just above
        views.append(view)
    fields = {f: [getattr(v, f) for v in views] for f in _COMPARED}
    mismatch = next((f for f in _COMPARED if len(set(fields[f])) > 1 or None in fields[f]), None)
    at = size if as_of is None else as_of
    return Comparison([summary(v) for v in views], mismatch is None, fields, at, mismatch)
