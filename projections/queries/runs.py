"""Reads of runs: one run as it stood, its versions and aliases, what a reference names, and
runs listed in the search's order."""

from __future__ import annotations

import re
from collections.abc import Iterator

from events.port import Session
from events.statements import sql
from projections.errors import AmbiguousRun, MalformedReference, UnknownRun
from projections.queries._asof import LIVE, RUN, at
from projections.queries.search import search_runs
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
_UUID = re.compile(r"^[0-9a-fA-F]{8}(-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}\Z")
_ALIAS = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*:[^\x00-\x1f\x7f]+\Z")  # <source>:<externalId>

_VIEW = sql(f"SELECT view FROM p_runs WHERE run_digest = ? AND {LIVE}")
_DIGESTS = sql(f"SELECT run_digest FROM p_runs WHERE {LIVE} ORDER BY run_digest")
_DIGESTS_AFTER = sql(
    f"SELECT run_digest FROM p_runs WHERE run_digest > ? AND {LIVE} ORDER BY run_digest LIMIT ?"
)
_COUNT = sql(f"SELECT count(*) FROM p_runs WHERE {LIVE}")
_ANY = sql("SELECT 1 FROM p_runs LIMIT 1")
_LIVE_ONE = sql(f"SELECT 1 FROM p_runs WHERE run_digest = ? AND {LIVE} LIMIT 1")
_PREFIXED = sql(
    "SELECT DISTINCT run_digest FROM p_runs WHERE run_digest >= ? AND run_digest < ?"
    f" AND {LIVE} LIMIT 20"
)
_ALIASED = sql(
    "SELECT a.run_digest FROM p_aliases a WHERE a.alias = ? AND a.valid_from <= ?"
    " ORDER BY a.run_digest"
)
_VERSIONS = sql(
    "SELECT valid_from, view FROM p_runs WHERE run_digest = ? AND valid_from <= ?"
    " ORDER BY valid_from"
)
_ALIASES_OF = sql(
    "SELECT alias FROM p_aliases WHERE run_digest = ? AND valid_from <= ? ORDER BY alias"
)
_ALL_ALIASES = sql("SELECT alias, run_digest FROM p_aliases WHERE valid_from <= ? ORDER BY alias")


def run_view(conn: Session, digest: str, as_of: int | None = None) -> RunView | None:
    """The run as it stood at ``as_of``."""
    p = at(as_of)
    row = conn.execute(_VIEW, (digest, p, p)).fetchone()
    return None if row is None else RUN.decode(row[0])


def run_digests(conn: Session, as_of: int | None = None) -> list[str]:
    """The digest of every run the log held at ``as_of`` (whatever its status), in order."""
    p = at(as_of)
    return [r[0] for r in conn.execute(_DIGESTS, (p, p))]


def iter_run_digests(conn: Session, as_of: int | None = None, *, page: int = 4096) -> Iterator[str]:
    """``run_digests``, read a page at a time (by digest, from the last one read): memory
    bounded by a page, not by the index, and no statement left open between pages."""
    p, last = at(as_of), ""
    while True:
        digests = [r[0] for r in conn.execute(_DIGESTS_AFTER, (last, p, p, page))]
        yield from digests
        if len(digests) < page:
            return
        last = digests[-1]


def count_runs(conn: Session, as_of: int | None = None) -> int:
    """How many runs the log held at ``as_of`` (whatever their status)."""
    p = at(as_of)
    return int(conn.execute(_COUNT, (p, p)).fetchone()[0])


def has_runs(conn: Session) -> bool:
    """Whether the log holds any run (in any version)."""
    return conn.execute(_ANY).fetchone() is not None


def resolve_run(conn: Session, ref: str, as_of: int | None = None) -> str:
    """The run digest a reference names: a full ``sha256:`` digest, a short id (the first 12 or
    more hex digits), ``kernelindex:<uuid>`` or a source alias ``<source>:<externalId>`` (an
    external id may hold ``/``: ``kernelbot:submission/7``).

    Raises:
        MalformedReference: ``ref`` is none of those forms (it can name no run).
        UnknownRun: nothing matches; asked ``as_of`` a past size, the detail says so (and
            whether the run entered the log later).
        AmbiguousRun: the reference names several runs (``details["candidates"]``).
    """
    ref = ref.strip()
    _check_reference(ref)
    candidates = _candidates(conn, ref, at(as_of))
    if not candidates:
        raise _unknown(conn, ref, as_of)
    if len(candidates) > 1:
        candidates = _current_of_corrections(conn, candidates, as_of)
    if len(candidates) > 1:
        raise AmbiguousRun(
            f"{ref!r} names {len(candidates)} runs; choose one by digest",
            reference=ref,
            candidates=candidates,
        )
    return candidates[0]


REFERENCE_FORMS = (
    "a short id (12 or more lowercase hex digits), sha256:<64 hex digits>, kernelindex:<uuid> "
    "or <source>:<externalId>"
)
"""What a run reference looks like, in words (for the errors that refuse one)."""


def _check_reference(ref: str) -> None:
    """Refuse a reference that is none of the forms a run is named by.

    Raises:
        MalformedReference: say which form it missed and what the forms are.
    """
    why = None
    if ref.startswith("sha256:"):
        if not _FULL.match(ref):
            why = "a sha256: digest has 64 lowercase hex digits"
    elif ref.startswith("kernelindex:"):
        if not _UUID.match(ref.removeprefix("kernelindex:")):
            why = "a kernelindex: id is a UUID"
    elif ":" in ref:
        if not _ALIAS.match(ref):
            why = "an alias is <source>:<externalId>, both non-empty"
    elif not _HEX.match(ref):
        why = "a short id has 12 or more lowercase hex digits" if ref else "it is empty"
    if why is not None:
        raise MalformedReference(
            f"{ref!r} is not a run reference ({why}); a reference is {REFERENCE_FORMS}",
            reference=ref,
        )


def _candidates(conn: Session, ref: str, p: int) -> list[str]:
    """The digests a well-formed reference names at size ``p`` (any number of them)."""
    candidates: list[str] = []
    if _FULL.match(ref):
        live = conn.execute(_LIVE_ONE, (ref, p, p)).fetchone()
        candidates = [ref] if live is not None else []
    elif _HEX.match(ref):
        low = "sha256:" + ref
        rows = conn.execute(_PREFIXED, (low, low + "g", p, p)).fetchall()
        candidates = [r[0] for r in rows]
    if not candidates and ":" in ref:
        rows = conn.execute(_ALIASED, (ref, p)).fetchall()
        candidates = [r[0] for r in rows]
    return candidates


def _unknown(conn: Session, ref: str, as_of: int | None) -> UnknownRun:
    """The error for a reference that names nothing: asked as of a past size, it says which,
    and whether the log held nothing then or the run entered it later."""
    if as_of is None:
        return UnknownRun(f"no run matches {ref!r}", reference=ref)
    if as_of == 0:
        why = "the log held no entries then"
    elif _candidates(conn, ref, at(None)):
        why = "the run was not in the log yet; it entered later"
    else:
        why = "nor does any now"
    return UnknownRun(
        f"no run matches {ref!r} as of tree size {as_of} (asOf {as_of}): {why}",
        reference=ref,
        asOf=as_of,
    )


def _current_of_corrections(conn: Session, candidates: list[str], as_of: int | None) -> list[str]:
    """The candidates an alias names, less those superseded by another of them: an alias that
    names one source row, corrected over time, names its current run. Runs that merely share an
    external id (KernelBot reuses them) supersede nothing and stay ambiguous."""
    names = set(candidates)
    views = {c: run_view(conn, c, as_of) for c in candidates}
    return [c for c in candidates if (v := views[c]) is None or v.supersededBy not in names]


def run_versions(conn: Session, digest: str, as_of: int | None = None) -> list[tuple[int, RunView]]:
    """Every version of a run up to ``as_of``: (position of the entry that made it, view)."""
    rows = conn.execute(_VERSIONS, (digest, at(as_of)))
    return [(int(r[0]) - 1, RUN.decode(r[1])) for r in rows]


def aliases_of(conn: Session, digest: str, as_of: int | None = None) -> list[str]:
    """The aliases of a run at ``as_of``, sorted."""
    rows = conn.execute(_ALIASES_OF, (digest, at(as_of)))
    return [r[0] for r in rows]


def all_aliases(conn: Session, as_of: int | None = None) -> dict[str, list[str]]:
    """Every run's aliases, in one scan."""
    out: dict[str, list[str]] = {}
    for alias, digest in conn.execute(_ALL_ALIASES, (at(as_of),)):
        out.setdefault(digest, []).append(alias)
    return out


def list_runs(
    conn: Session,
    as_of: int | None = None,
    *,
    group_key: str | None = None,
    source: str | None = None,
    evidence: str | None = None,
    hardware: str | None = None,
    limit: int | None = None,
) -> Iterator[RunView]:
    """Runs (of a group, a source, an evidence level, an accelerator) in the order of the
    search (``search_runs``: by workload, then primary value best-first, then digest)."""
    found = search_runs(
        conn,
        as_of,
        group_key=group_key,
        source=source,
        evidence=evidence,
        hardware=hardware,
        limit=limit,
    )
    for view, _ in found:
        yield view
