"""Comparison groups (and serving cohorts): a group with its ranked runs, and leader history.
Every read answers as of a tree size (``as_of``; None for now, the size read as ``size``)."""

from __future__ import annotations

import re
from typing import NamedTuple

import msgspec

from events.port import Session
from projections import queries
from projections.errors import UnknownGroup
from projections.queries.groups import matching_groups
from projections.views import LeaderChange, RunView
from service.app.runs import RunSummary, manifest_title, summary
from service.errors import UsageError

__all__ = [
    "Board",
    "GroupPage",
    "Ranked",
    "Standing",
    "board",
    "group_history",
    "group_page",
    "leader_history",
    "named_group",
    "resolve_group",
    "standing",
]


class Ranked(msgspec.Struct, frozen=True):
    """A run of a group with its dense rank (ties share one)."""

    rank: int
    run: RunSummary


class GroupPage(msgspec.Struct, frozen=True):
    """A group and its ranked runs, best first."""

    group: queries.GroupSummary
    runs: list[Ranked]
    asOf: int


class Standing(NamedTuple):
    """A group and its eligible runs, best first, with their dense ranks."""

    group: queries.GroupSummary
    members: list[tuple[int, RunView]]


class Board(NamedTuple):
    """A group's leaderboard: the group, its ranked members, its leader history, the view of
    every run these name (the members' own, then the others' as of the same size), and the
    titles of the best-ranked run's operation and workload manifests (None if none)."""

    group: queries.GroupSummary
    members: list[tuple[int, RunView]]
    history: list[LeaderChange]
    runs: dict[str, RunView]
    operationTitle: str | None
    workloadTitle: str | None


_GROUP_REF = re.compile(r"(sha256:)?[0-9a-f]{1,64}\Z", re.IGNORECASE)


def resolve_group(conn: Session, ref: str, as_of: int | None) -> str:
    """The key of the group ``ref`` names: its full key, or a unique prefix of it (with or
    without ``sha256:``), as runs take a short id.

    Raises:
        UnknownGroup: no group (at ``as_of``) has a key that starts with ``ref``.
        UsageError: ``ref`` is no key or prefix of one (bad input), or the prefix names several
            groups (the message lists them, at most 20).
    """
    if not _GROUP_REF.match(ref.strip()):
        raise UsageError(
            f"{ref!r} is not a group key: a key is sha256:<64 hex digits>, and any prefix of"
            " its hex digits names it when no other key shares that prefix",
            key=ref,
        )
    found = matching_groups(conn, ref, as_of, limit=21)
    if not found:
        raise UnknownGroup(f"no comparison group matches {ref!r}", key=ref)
    if len(found) > 1:
        many = len(found) > 20
        listed = ", ".join(found[:20]) + (", …" if many else "")
        raise UsageError(
            f"{ref!r} names {'more than 20' if many else len(found)} comparison groups;"
            f" choose one by a longer key: {listed}",
            candidates=found[:20],
        )
    return found[0]


_SHORT_GROUP = re.compile(r"(sha256:)?[0-9a-f]{12,63}\Z")


def named_group(conn: Session, ref: str, as_of: int | None) -> str:
    """The key of the group a page or an API path names: a short key (12 to 63 hex digits,
    with or without ``sha256:``) is resolved as ``resolve_group`` does; anything else is taken
    as the key itself (no group may have it, which the reader of the group then says).

    Raises:
        UnknownGroup: no group has a key that starts with the short key.
        UsageError: the short key names several groups.
    """
    if _SHORT_GROUP.match(ref):
        return resolve_group(conn, ref, as_of)
    return ref


def standing(conn: Session, key: str, as_of: int | None) -> Standing:
    """The group ``key`` and its ranked members.

    Raises:
        UnknownGroup: no group has this key (at ``as_of``).
    """
    return Standing(queries.group(conn, key, as_of), queries.ranked_members(conn, key, as_of))


def group_page(conn: Session, key: str, as_of: int | None, *, size: int) -> GroupPage:
    """The group ``key`` and its ranked runs as lists show them.

    Raises:
        UnknownGroup: no group has this key (at ``as_of``).
    """
    group, members = standing(conn, key, as_of)
    ranked = [Ranked(rank, summary(view)) for rank, view in members]
    return GroupPage(group, ranked, size if as_of is None else as_of)


def group_history(conn: Session, key: str, as_of: int | None) -> list[LeaderChange]:
    """The leader changes of the group ``key`` (ranking-v1), oldest first.

    Raises:
        UnknownGroup: no group has this key (at ``as_of``).
    """
    queries.group(conn, key, as_of)
    return leader_history(conn, key, as_of)


def leader_history(conn: Session, key: str | None, as_of: int | None) -> list[LeaderChange]:
    """The leader changes of the group ``key`` (none if it has no history), or with no key of
    every kernel comparison group, by group and time."""
    return list(queries.leader_history(conn, key, as_of))


def board(conn: Session, key: str, as_of: int | None) -> Board:
    """The leaderboard of the group ``key``.

    Raises:
        UnknownGroup: no group has this key (at ``as_of``).
    """
    group, members = standing(conn, key, as_of)
    history = leader_history(conn, key, as_of)
    runs = {view.runDigest: view for _, view in members}
    for change in history:
        for digest in (change.runDigest, change.previousRunDigest):
            if digest and digest not in runs:
                view = queries.run_view(conn, digest, as_of)
                if view is not None:
                    runs[digest] = view
    first = members[0][1] if members else None
    return Board(
        group,
        members,
        history,
        runs,
        manifest_title(conn, first.operationDigest, as_of) if first else None,
        manifest_title(conn, first.workloadDigest, as_of) if first else None,
    )
