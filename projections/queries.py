"""Reads of the projections, each as the view stood at a tree size (``as_of``).

Every read is an index lookup on version rows (``valid_from <= p`` and ``valid_to`` NULL or
``> p``), never a replay. ``as_of=None`` means the current state.
"""

from __future__ import annotations

import bisect
import re
import sqlite3
from collections.abc import Iterator
from typing import Any

import msgspec

from events.decoding import decode_event
from events.entries import read_entry
from events.types import RunIngested
from projections.errors import AmbiguousRun, UnknownGroup, UnknownRun
from projections.views import LeaderChange, RunView

__all__ = [
    "Attestation",
    "GroupSummary",
    "Ranked",
    "Report",
    "aliases_of",
    "attestations",
    "group",
    "latest_for_row",
    "leader_history",
    "list_runs",
    "manifest",
    "rank_of",
    "reports",
    "resolve_run",
    "run_exists",
    "run_view",
]

_RUN = msgspec.json.Decoder(RunView)
_JSON = msgspec.json.Decoder()
_HEX = re.compile(r"^[0-9a-f]{12,64}\Z")
_FULL = re.compile(r"^sha256:[0-9a-f]{64}\Z")
_FAR = 2**62


def _at(as_of: int | None) -> int:
    return _FAR if as_of is None else as_of


_LIVE = "valid_from <= ? AND (valid_to IS NULL OR valid_to > ?)"


def manifest(
    conn: sqlite3.Connection, digest: str, as_of: int | None = None
) -> dict[str, Any] | None:
    """The manifest with spec digest ``digest``, if the log held it at ``as_of``. A run's own
    manifest is read from its run.ingested entry (the projections keep only the manifests runs
    reference: a run manifest is in the log once, not copied)."""
    row = conn.execute(
        "SELECT body FROM p_manifests WHERE digest = ? AND valid_from <= ?", (digest, _at(as_of))
    ).fetchone()
    if row is None:
        return _run_manifest(conn, digest, as_of)
    body: dict[str, Any] = _JSON.decode(row[0])
    return body


def _run_manifest(
    conn: sqlite3.Connection, digest: str, as_of: int | None
) -> dict[str, Any] | None:
    # A run's first version is made by its run.ingested entry at position valid_from - 1.
    row = conn.execute(
        "SELECT min(valid_from) FROM p_runs WHERE run_digest = ? AND valid_from <= ?",
        (digest, _at(as_of)),
    ).fetchone()
    if row[0] is None:
        return None
    seq = int(row[0]) - 1
    leaf = conn.execute("SELECT leaf FROM entries WHERE seq = ?", (seq,)).fetchone()
    if leaf is None:
        return None
    event = decode_event(read_entry(bytes(leaf[0]), position=seq))
    if not isinstance(event, RunIngested) or event.runDigest != digest:
        return None
    return event.manifests["run"]


def _present(conn: sqlite3.Connection, sql: str, digests: list[str]) -> set[str]:
    """Which of ``digests`` the query (``... IN ({marks})``) finds, 500 at a time."""
    found: set[str] = set()
    for i in range(0, len(digests), 500):
        chunk = digests[i : i + 500]
        found.update(
            r[0] for r in conn.execute(sql.format(marks=",".join("?" * len(chunk))), chunk)
        )
    return found


def known_manifests(conn: sqlite3.Connection, digests: list[str]) -> set[str]:
    """Which of ``digests`` the log holds as manifests now."""
    return _present(conn, "SELECT digest FROM p_manifests WHERE digest IN ({marks})", digests)


def run_exists(conn: sqlite3.Connection, digests: list[str]) -> set[str]:
    """Which of ``digests`` are runs the log holds now."""
    return _present(
        conn,
        "SELECT run_digest FROM p_runs WHERE valid_to IS NULL AND run_digest IN ({marks})",
        digests,
    )


def latest_for_row(conn: sqlite3.Connection, row_key: str) -> str | None:
    """The newest run ingested from the source row ``row_key``, if any."""
    row = conn.execute(
        "SELECT run_digest FROM p_rowkeys WHERE row_key = ? ORDER BY valid_from DESC LIMIT 1",
        (row_key,),
    ).fetchone()
    return None if row is None else str(row[0])


def run_view(conn: sqlite3.Connection, digest: str, as_of: int | None = None) -> RunView | None:
    """The run as it stood at ``as_of``."""
    p = _at(as_of)
    row = conn.execute(
        f"SELECT view FROM p_runs WHERE run_digest = ? AND {_LIVE}", (digest, p, p)
    ).fetchone()
    return None if row is None else _RUN.decode(row[0])


def resolve_run(conn: sqlite3.Connection, ref: str, as_of: int | None = None) -> str:
    """The run digest a reference names: a full ``sha256:`` digest, a short id (the first 12 or
    more hex digits), ``kernelindex:<uuid>`` or a source alias ``<source>:<externalId>``.

    Raises:
        UnknownRun: nothing matches (malformed references included).
        AmbiguousRun: the reference names several runs (``details["candidates"]``).
    """
    p = _at(as_of)
    ref = ref.strip()
    candidates: list[str] = []
    if _FULL.match(ref):
        candidates = [ref] if run_view(conn, ref, as_of) is not None else []
    elif _HEX.match(ref):
        low = "sha256:" + ref
        rows = conn.execute(
            f"SELECT DISTINCT run_digest FROM p_runs WHERE run_digest >= ? AND run_digest < ? AND {_LIVE} LIMIT 20",
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
        (digest, _at(as_of)),
    )
    return [(int(r[0]) - 1, _RUN.decode(r[1])) for r in rows]


def entry_types(conn: sqlite3.Connection, positions: list[int]) -> dict[int, tuple[str, str]]:
    """(type, recordedAt) of the entries at ``positions``."""
    out: dict[int, tuple[str, str]] = {}
    for i in range(0, len(positions), 500):
        chunk = positions[i : i + 500]
        marks = ",".join("?" * len(chunk))
        for seq, type_, at in conn.execute(
            f"SELECT seq, type, recorded_at FROM entries WHERE seq IN ({marks})", chunk
        ):
            out[int(seq)] = (type_, at)
    return out


def aliases_of(conn: sqlite3.Connection, digest: str, as_of: int | None = None) -> list[str]:
    rows = conn.execute(
        "SELECT alias FROM p_aliases WHERE run_digest = ? AND valid_from <= ? ORDER BY alias",
        (digest, _at(as_of)),
    )
    return [r[0] for r in rows]


class Ranked(msgspec.Struct, frozen=True):
    """A run's place in its group: dense rank ``rank`` of ``of`` distinct values, among
    ``members`` eligible runs."""

    rank: int
    of: int
    members: int
    leader: str | None


class _Standings(msgspec.Struct, frozen=True):
    values: list[float]  # distinct values, best first (negated for higher-is-better)
    members: int
    leader: str | None


StandingsCache = dict[tuple[str, int], _Standings]
"""A group's standings as of a tree size never change once computed, so a reader of one
database may keep them by (group, size): a rank is then a binary search, flat with the group's
size. The cache belongs to the caller (one per database)."""


def _standings(
    conn: sqlite3.Connection, key: str, p: int, sign: float, cache: StandingsCache | None
) -> _Standings:
    if cache is not None:
        found = cache.get((key, p))
        if found is not None:
            return found
    rows = conn.execute(
        f"SELECT primary_value FROM p_runs WHERE group_key = ? AND eligible = 1 AND {_LIVE}",
        (key, p, p),
    ).fetchall()
    leader = conn.execute(
        f"SELECT leader FROM p_groups WHERE group_key = ? AND {_LIVE}", (key, p, p)
    ).fetchone()
    found = _Standings(
        sorted({sign * r[0] for r in rows}), len(rows), leader[0] if leader else None
    )
    if cache is not None:
        if len(cache) > 20_000:
            cache.clear()
        cache[(key, p)] = found
    return found


def current_size(conn: sqlite3.Connection) -> int:
    """The tree size the projections have applied."""
    row = conn.execute("SELECT position FROM p_state WHERE projection = 'all'").fetchone()
    return 0 if row is None else int(row[0])


def rank_of(
    conn: sqlite3.Connection,
    view: RunView,
    as_of: int | None = None,
    cache: StandingsCache | None = None,
) -> Ranked | None:
    """Dense rank of an eligible run in its group (ties only on equal values); ``cache`` keeps
    group standings between calls on the same database."""
    key = view.group_key
    if not view.eligible or key is None or view.primaryValue is None:
        return None
    p = current_size(conn) if as_of is None else as_of
    sign = -1.0 if view.direction == "higher" else 1.0
    standing = _standings(conn, key, p, sign, cache)
    rank = bisect.bisect_left(standing.values, sign * view.primaryValue) + 1
    return Ranked(rank, len(standing.values), standing.members, standing.leader)


class GroupSummary(msgspec.Struct, frozen=True):
    comparisonKey: str
    kind: str
    metricKey: str
    direction: str
    members: int
    leader: str | None
    best: float | None
    policyVersion: str


def group(conn: sqlite3.Connection, key: str, as_of: int | None = None) -> GroupSummary:
    """A comparison group as it stood at ``as_of``.

    Raises:
        UnknownGroup: no group has that key then.
    """
    p = _at(as_of)
    row = conn.execute(
        "SELECT kind, metric_key, direction, leader, best, policy_version FROM p_groups"
        f" WHERE group_key = ? AND {_LIVE}",
        (key, p, p),
    ).fetchone()
    if row is None:
        raise UnknownGroup(f"no comparison group {key!r}", key=key)
    # The group's version changes with its leader; its members are its eligible run versions.
    (members,) = conn.execute(
        f"SELECT count(*) FROM p_runs WHERE group_key = ? AND eligible = 1 AND {_LIVE}",
        (key, p, p),
    ).fetchone()
    kind, metric, direction, leader, best, policy = row
    return GroupSummary(key, kind, metric, direction, members, leader, best, policy)


def ranked_members(
    conn: sqlite3.Connection, key: str, as_of: int | None = None
) -> list[tuple[int, RunView]]:
    """The eligible runs of a group, best first, with their dense ranks."""
    p = _at(as_of)
    rows = conn.execute(
        f"SELECT view, direction FROM p_runs WHERE group_key = ? AND eligible = 1 AND {_LIVE}",
        (key, p, p),
    ).fetchall()
    views = [_RUN.decode(r[0]) for r in rows]
    if not views:
        return []
    sign = -1.0 if views[0].direction == "higher" else 1.0
    views.sort(key=lambda v: (sign * (v.primaryValue or 0.0), v.observedAt, v.runDigest))
    out, rank, last = [], 0, None
    for v in views:
        if v.primaryValue != last:
            rank += 1
            last = v.primaryValue
        out.append((rank, v))
    return out


def leader_history(
    conn: sqlite3.Connection, key: str | None = None, as_of: int | None = None
) -> Iterator[LeaderChange]:
    """Leader changes of one group (kernel comparison group or serving cohort), or of every
    kernel comparison group (KernelIndex keeps leader history for those only), ordered by group
    and ``at``."""
    p = _at(as_of)
    where = f"{_LIVE}" + (" AND group_key = ?" if key else " AND kind = 'BenchmarkRun'")

    params: tuple[Any, ...] = (p, p, key) if key else (p, p)
    for row in conn.execute(
        "SELECT group_key, run_digest, at, cause, policy_version, previous_run_digest FROM p_leaders"
        f" WHERE {where} ORDER BY group_key, at, run_digest",
        params,
    ):
        yield LeaderChange(row[0], row[1], row[2], row[3], row[4], row[5])


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
    p = _at(as_of)
    clauses: list[str] = [_LIVE]
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
        yield _RUN.decode(body)


class Attestation(msgspec.Struct, frozen=True, omit_defaults=True):
    id: str
    runDigest: str
    attester: str
    predicateType: str
    predicate: dict[str, Any]
    position: int
    recordedAt: str
    withdrawn: bool = False
    hidden: bool = False


def attestations(
    conn: sqlite3.Connection, digest: str, as_of: int | None = None, *, include_hidden: bool = False
) -> list[Attestation]:
    p = _at(as_of)
    out = []
    for row in conn.execute(
        "SELECT id, run_digest, attester, predicate_type, predicate, valid_from, recorded_at, withdrawn_at, hidden_at"
        " FROM p_attestations WHERE run_digest = ? AND valid_from <= ? ORDER BY valid_from",
        (digest, p),
    ):
        withdrawn = row[7] is not None and row[7] <= p
        hidden = row[8] is not None and row[8] <= p
        if hidden and not include_hidden:
            continue
        out.append(
            Attestation(
                row[0],
                row[1],
                row[2],
                row[3],
                _JSON.decode(row[4]),
                row[5] - 1,
                row[6],
                withdrawn,
                hidden,
            )
        )
    return out


class Report(msgspec.Struct, frozen=True, omit_defaults=True):
    id: str
    runDigest: str
    category: str
    text: str
    position: int
    recordedAt: str
    resolution: str | None = None
    note: str | None = None


def reports(conn: sqlite3.Connection, digest: str, as_of: int | None = None) -> list[Report]:
    p = _at(as_of)
    out = []
    for row in conn.execute(
        "SELECT id, run_digest, category, text, valid_from, recorded_at, resolved_at, resolution, note"
        " FROM p_reports WHERE run_digest = ? AND valid_from <= ? ORDER BY valid_from",
        (digest, p),
    ):
        resolved = row[6] is not None and row[6] <= p
        out.append(
            Report(
                row[0],
                row[1],
                row[2],
                row[3],
                row[4] - 1,
                row[5],
                row[7] if resolved else None,
                row[8] if resolved else None,
            )
        )
    return out


def all_ranks(conn: sqlite3.Connection, as_of: int | None = None) -> dict[str, tuple[int, int]]:
    """Dense rank and distinct-value count of every eligible run, in one scan."""
    p = _at(as_of)
    groups: dict[str, list[tuple[float, str, str]]] = {}
    for key, value, digest, direction in conn.execute(
        f"SELECT group_key, primary_value, run_digest, direction FROM p_runs WHERE eligible = 1 AND {_LIVE}",
        (p, p),
    ):
        groups.setdefault(key, []).append((value, digest, direction))
    out: dict[str, tuple[int, int]] = {}
    for members in groups.values():
        sign = -1.0 if members[0][2] == "higher" else 1.0
        values = sorted({sign * m[0] for m in members})
        position = {v: i + 1 for i, v in enumerate(values)}
        for value, digest, _ in members:
            out[digest] = (position[sign * value], len(values))
    return out


def all_aliases(conn: sqlite3.Connection, as_of: int | None = None) -> dict[str, list[str]]:
    """Every run's aliases, in one scan."""
    out: dict[str, list[str]] = {}
    for alias, digest in conn.execute(
        "SELECT alias, run_digest FROM p_aliases WHERE valid_from <= ? ORDER BY alias",
        (_at(as_of),),
    ):
        out.setdefault(digest, []).append(alias)
    return out
