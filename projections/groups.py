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
from collections.abc import Sequence

import msgspec

from projections.views import Direction, GroupView, LeaderChange, Member

__all__ = ["MemberChange", "apply_change", "fold_group", "leader_history"]

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
) -> tuple[tuple[LeaderChange, ...], tuple[float, ...]]:
    """The leader changes of a group whose eligible members are ``members`` (walk order), and
    each leader's value."""
    out: list[LeaderChange] = []
    values: list[float] = []
    previous: str | None = None
    for m in members:
        if not values or _better(direction, m.value, values[-1]):
            out.append(LeaderChange(key, m.runDigest, m.observedAt, "new_run", policy, previous))
            values.append(m.value)
            previous = m.runDigest
    return tuple(out), tuple(values)


def _with_new_member(
    group: GroupView, new: Member
) -> tuple[tuple[LeaderChange, ...], tuple[float, ...]]:
    """The history after ``new`` joins (nothing else changing): the leaders before it stay; it
    leads if it beats the leader before it; then only the later leaders that still beat it stay
    (they are a suffix: leaders' values only improve). O(leaders), not O(members)."""
    history, values = group.history, group.leaderValues
    where = (new.observedAt, new.runDigest)
    k = bisect.bisect_left([(h.at, h.runDigest) for h in history], where)
    if k and not _better(group.direction, new.value, values[k - 1]):
        return history, values
    lead = LeaderChange(
        group.comparisonKey,
        new.runDigest,
        new.observedAt,
        "new_run",
        group.policyVersion,
        history[k - 1].runDigest if k else None,
    )
    later = [
        (h, v)
        for h, v in zip(history[k:], values[k:], strict=True)
        if _better(group.direction, v, new.value)
    ]
    if later:
        first, value = later[0]
        later[0] = (msgspec.structs.replace(first, previousRunDigest=new.runDigest), value)
    return (
        (*history[:k], lead, *(h for h, _ in later)),
        (*values[:k], new.value, *(v for _, v in later)),
    )


def fold_group(group: GroupView, change: MemberChange, members: Sequence[Member]) -> GroupView:
    """The group after one member change; ``members`` are its eligible members (walk order)
    with the change already applied. Pure. A joining run costs O(log n + leaders); a run
    leaving (retracted, superseded) or moving rewalks the group, O(n)."""
    if change.before is None and change.after is not None:
        history, values = _with_new_member(group, change.after)
    else:
        history, values = leader_history(
            group.comparisonKey, tuple(members), group.direction, group.policyVersion
        )
    return msgspec.structs.replace(group, history=history, leaderValues=values)


def apply_change(members: list[Member], change: MemberChange) -> None:
    """Apply a member change to a walk-ordered member list, in place."""
    if change.before is not None:
        at = bisect.bisect_left(members, change.before)
        if at < len(members) and members[at] == change.before:
            del members[at]
    if change.after is not None:
        bisect.insort(members, change.after)
