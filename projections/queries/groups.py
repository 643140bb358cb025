"""Reads of comparison groups: a group as it stood, its ranked members, a run's rank in it,
every run's rank at once, and the history of its leaders."""

from __future__ import annotations

import bisect
from collections.abc import Iterator
from typing import Any

import msgspec

from events.port import Session
from events.statements import sql
from projections.errors import UnknownGroup
from projections.queries._asof import LIVE, RUN, at
from projections.queries.state import current_size
from projections.views import LeaderChange, RunView

__all__ = [
    "GroupSummary",
    "Ranked",
    "StandingsCache",
    "all_ranks",
    "group",
    "leader_history",
    "matching_groups",
    "rank_of",
    "ranked_members",
]


_VALUES = sql(f"SELECT primary_value FROM p_runs WHERE group_key = ? AND eligible = 1 AND {LIVE}")
_LEADER = sql(f"SELECT leader FROM p_groups WHERE group_key = ? AND {LIVE}")
# Now: the values from the partial index of current eligible runs by group alone (the runs'
# rows are not read), and the group's current version.
_VALUES_NOW = sql(
    "SELECT primary_value FROM p_runs WHERE group_key = ? AND eligible = 1 AND valid_to IS NULL"
)
_LEADER_NOW = sql("SELECT leader FROM p_groups WHERE group_key = ? AND valid_to IS NULL")
_GROUP = sql(
    "SELECT kind, metric_key, direction, leader, best, policy_version FROM p_groups"
    f" WHERE group_key = ? AND {LIVE}"
)
_MEMBERS = sql(f"SELECT count(*) FROM p_runs WHERE group_key = ? AND eligible = 1 AND {LIVE}")
_RANKED = sql(f"SELECT view, direction FROM p_runs WHERE group_key = ? AND eligible = 1 AND {LIVE}")
_ALL_RANKS = sql(
    "SELECT group_key, primary_value, run_digest, direction FROM p_runs"
    f" WHERE eligible = 1 AND {LIVE}"
)
_EXACT = sql(f"SELECT 1 FROM p_groups WHERE group_key = ? AND {LIVE} LIMIT 1")
_PREFIXED = sql(
    "SELECT DISTINCT group_key FROM p_groups"
    f" WHERE group_key >= ? AND group_key < ? AND {LIVE} ORDER BY group_key LIMIT ?"
)
_LEADERS = (
    "SELECT group_key, run_digest, at, cause, policy_version, previous_run_digest FROM p_leaders"
)
_LEADERS_OF = sql(f"{_LEADERS} WHERE {LIVE} AND group_key = ? ORDER BY group_key, at, run_digest")
_LEADERS_ALL = sql(
    f"{_LEADERS} WHERE {LIVE} AND kind = 'BenchmarkRun' ORDER BY group_key, at, run_digest"
)


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
    conn: Session, key: str, p: int, sign: float, cache: StandingsCache | None, *, now: bool
) -> _Standings:
    """The standings of the group ``key`` at the size ``p``; ``now``: ``p`` was the current size
    when read (the current rows are then the live ones, read through their own indexes).

    Each statement of a reader's session is a transaction of its own, so a writer may commit
    between reading ``p`` and reading the current rows: unless the size is still ``p`` after
    them, they are read again as of ``p``. What is returned and kept is ``p``'s, always."""
    if cache is not None:
        found = cache.get((key, p))
        if found is not None:
            return found
    rows, leader = None, None
    if now:
        rows = conn.execute(_VALUES_NOW, (key,)).fetchall()
        leader = conn.execute(_LEADER_NOW, (key,)).fetchone()
        if current_size(conn) != p:
            rows = None
    if rows is None:
        rows = conn.execute(_VALUES, (key, p, p)).fetchall()
        leader = conn.execute(_LEADER, (key, p, p)).fetchone()
    found = _Standings(
        sorted({sign * r[0] for r in rows}), len(rows), leader[0] if leader else None
    )
    if cache is not None:
        if len(cache) > 20_000:
            cache.clear()
        cache[(key, p)] = found
    return found


def rank_of(
    conn: Session,
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
    standing = _standings(conn, key, p, sign, cache, now=as_of is None)
    rank = bisect.bisect_left(standing.values, sign * view.primaryValue) + 1
    return Ranked(rank, len(standing.values), standing.members, standing.leader)


class GroupSummary(msgspec.Struct, frozen=True):
    """A comparison group at a tree size: what it compares, its members and its leader."""

    comparisonKey: str
    kind: str
    metricKey: str
    direction: str
    members: int
    leader: str | None
    best: float | None
    policyVersion: str


def group(conn: Session, key: str, as_of: int | None = None) -> GroupSummary:
    """A comparison group as it stood at ``as_of``.

    Raises:
        UnknownGroup: no group has that key then.
    """
    p = at(as_of)
    row = conn.execute(_GROUP, (key, p, p)).fetchone()
    if row is None:
        raise UnknownGroup(f"no comparison group {key!r}", key=key)
    # The group's version changes with its leader; its members are its eligible run versions.
    (members,) = conn.execute(_MEMBERS, (key, p, p)).fetchone()
    kind, metric, direction, leader, best, policy = row
    return GroupSummary(key, kind, metric, direction, members, leader, best, policy)


def ranked_members(conn: Session, key: str, as_of: int | None = None) -> list[tuple[int, RunView]]:
    """The eligible runs of a group, best first, with their dense ranks."""
    p = at(as_of)
    rows = conn.execute(_RANKED, (key, p, p)).fetchall()
    views = [RUN.decode(r[0]) for r in rows]
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


def all_ranks(conn: Session, as_of: int | None = None) -> dict[str, tuple[int, int]]:
    """Dense rank and distinct-value count of every eligible run, in one scan."""
    p = at(as_of)
    groups: dict[str, list[tuple[float, str, str]]] = {}
    for key, value, digest, direction in conn.execute(_ALL_RANKS, (p, p)):
        groups.setdefault(key, []).append((value, digest, direction))
    out: dict[str, tuple[int, int]] = {}
    for members in groups.values():
        sign = -1.0 if members[0][2] == "higher" else 1.0
        values = sorted({sign * m[0] for m in members})
        position = {v: i + 1 for i, v in enumerate(values)}
        for value, digest, _ in members:
            out[digest] = (position[sign * value], len(values))
    return out


def matching_groups(
    conn: Session, ref: str, as_of: int | None = None, *, limit: int = 20
) -> list[str]:
    """The keys of the groups (and cohorts) live at ``as_of`` that ``ref`` names: its own key
    when a group has it, else every key that starts with ``ref`` (a short key, with or without
    its ``sha256:``), in key order, at most ``limit``. None for a ``ref`` that is no hex key."""
    p = at(as_of)
    ref = ref.strip().lower()
    exact = conn.execute(_EXACT, (ref, p, p)).fetchone()
    if exact is not None:
        return [ref]
    low = ref if ref.startswith("sha256:") else "sha256:" + ref
    digits = low[len("sha256:") :]
    if not digits or not all(c in "0123456789abcdef" for c in digits):
        return []
    rows = conn.execute(_PREFIXED, (low, low + "g", p, p, limit)).fetchall()
    return [r[0] for r in rows]


def leader_history(
    conn: Session, key: str | None = None, as_of: int | None = None
) -> Iterator[LeaderChange]:
    """Leader changes of one group (kernel comparison group or serving cohort), or of every
    kernel comparison group (KernelIndex keeps leader history for those only), ordered by group
    and ``at``."""
    p = at(as_of)
    params: tuple[Any, ...] = (p, p, key) if key else (p, p)
    for row in conn.execute(_LEADERS_OF if key else _LEADERS_ALL, params):
        yield LeaderChange(row[0], row[1], row[2], row[3], row[4], row[5])
