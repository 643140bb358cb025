"""The fold of a batch of entries, pure of SQL.

For each entry a ``Batch`` decodes the event, routes it to the aggregates it may concern,
folds them (pure functions in ``runs``, ``groups``, ``keyring``, ``records``) and gathers what
changed as version rows (``projections.changes``): the version an entry at position ``s`` makes
is valid from tree size ``s + 1``. Within a batch the aggregates live in memory; they are loaded
from, and the gathered rows written once at the end through, a ``projections.rows.RowStore``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol

import msgspec

from events.decoding import decode_event
from events.entries import StoredEntry
from events.keyring import KeyView, fold_keys
from events.types import (
    AnyEvent,
    ManifestRecorded,
    PolicyChanged,
    RerunClaimedV2,
    RerunCompleted,
    RerunCompletedV2,
    RerunRequested,
    RunIngested,
    RunRetracted,
    RunSuperseded,
)
from projections.changes import RowChanges
from projections.groups import MemberChange, apply_change, fold_group
from projections.records import Insert, Manifest, Update, record_ops
from projections.rows import GroupSpill, RowStore
from projections.runs import Context, carried_manifests, fold_run
from projections.tolerance import POLICY_NAME, TolerancePolicy, policy_from
from projections.views import Direction, GroupView, LeaderChange, Member, RunView

__all__ = ["CARRIED_GROUPS", "RUN_SUBJECTS", "Batch", "GroupSeed"]

_ENC = msgspec.json.Encoder()
RUN_SUBJECTS = ("run.", "rerun.")  # entry types whose subject is a run
_NOBODY: frozenset[str] = frozenset()
CARRIED_GROUPS = 20_000
"""The most groups a rebuild's batch carries over to the next whole (``Batch.carry_groups``)."""


class GroupSeed(Protocol):
    """What a group takes from the run that founds it."""

    @property
    def metricKey(self) -> str: ...  # noqa: N802 - the views' field name
    @property
    def direction(self) -> Direction: ...
    @property
    def kind(self) -> str: ...


def _member(view: RunView | None) -> tuple[str | None, Member | None]:
    if view is None:
        return None, None
    key = view.group_key
    if not view.eligible or key is None or view.primaryValue is None:
        return key, None
    return key, Member(view.observedAt, view.runDigest, float(view.primaryValue))


class Batch:
    """The fold of one batch of entries: the aggregates it touches, in memory, and the rows it
    gathers (``changes``), written by ``flush``.

    ``apply`` folds one entry. A variant that folds part of the log (``projections.shards``)
    subclasses it and overrides the three steps of ``apply`` it narrows, each a documented
    extension point: ``targets`` (which runs an event folds), ``record`` (the small
    projections' rows an event makes) and ``change_group`` (what a run's move in a group
    does); and ``flush`` (what it writes).
    """

    def __init__(
        self,
        store: RowStore,
        keys: Mapping[str, KeyView],
        tolerance: TolerancePolicy | None = None,
    ) -> None:
        self.store = store
        self.keys = keys
        # The tolerance policy in force (carried from the batch before, or read back).
        self.tolerance = tolerance if tolerance is not None else store.tolerance_policy()
        self.keys_changed = False
        self.keys_at = 0  # the tree size after the last entry that changed the keyring
        self.changes = RowChanges()
        self.runs: dict[str, RunView | None] = {}
        self.run_in_db: set[str] = set()
        self.groups: dict[str, GroupView] = {}
        self.members: dict[str, list[Member]] = {}  # each group's eligible members, walk order
        self.no_groups: bool | None = None  # the database held no group when the batch began
        self.group_in_db: set[str] = set()
        self.leader_rows: dict[str, dict[tuple[str, str | None, str], int]] = {}
        self.waiting: dict[str, set[str]] = {}
        self.waiting_loaded: set[str] = set()
        self.waiting_all = False
        self.spill: GroupSpill | None = None

    def carry_groups(self, previous: Batch, spill: GroupSpill | None = None) -> None:
        """Take over the group state a previous batch left (true only while nobody else
        writes: a rebuild). Past ``CARRIED_GROUPS`` groups, only those the previous batch
        changed stay in memory, so a rebuild's memory is bounded by a batch, not by the log:
        the others go to ``spill`` (read back from there when next needed), or without one are
        read back from the database, as an incremental batch reads them."""
        changed = previous.changes.groups.rows
        in_db = previous.group_in_db | set(changed)
        self.spill = spill
        if len(previous.groups) <= CARRIED_GROUPS:
            self.groups = previous.groups
            self.members = previous.members
            self.group_in_db = in_db
            self.leader_rows = previous.leader_rows
            return
        kept = {k: v for k, v in previous.groups.items() if k in changed}
        if spill is not None:
            spill.put(
                (k, (v, previous.members[k], previous.leader_rows[k], k in in_db))
                for k, v in previous.groups.items()
                if k not in kept
            )
        self.groups = kept
        self.members = {k: previous.members[k] for k in kept}
        self.group_in_db = {k for k in in_db if k in kept}
        self.leader_rows = {k: previous.leader_rows[k] for k in kept}

    # --- loading ---------------------------------------------------------------------------

    def run(self, digest: str) -> RunView | None:
        """The run as the batch has it (loaded on first use)."""
        if digest not in self.runs:
            view = self.store.current_run(digest)
            self.runs[digest] = view
            if view is not None:
                self.run_in_db.add(digest)
        return self.runs[digest]

    def preload(self, subjects: Iterable[str]) -> None:
        """Fetch what the batch will look at in a few queries instead of one per entry: every
        waiting reference (few: only runs with unresolved references wait), and the runs the
        entries name as subjects (``subjects``: those of its run and rerun entries)."""
        self.waiting_all = True
        for digest, run in self.store.waiting():
            self.waiting.setdefault(digest, set()).add(run)
        for digest, view in self.store.current_runs(sorted(set(subjects))):
            self.runs[digest] = view
            if view is not None:
                self.run_in_db.add(digest)

    def waiting_for(self, digest: str) -> set[str]:
        """The runs waiting on ``digest`` (the set itself: callers may change it)."""
        if not self.waiting_all and digest not in self.waiting_loaded:
            self.waiting_loaded.add(digest)
            self.waiting.setdefault(digest, set()).update(self.store.waiting_on(digest))
        return self.waiting.setdefault(digest, set())

    def waiters(self, digest: str) -> set[str] | frozenset[str]:
        """``waiting_for`` to read: a digest nobody waits on adds nothing to the batch."""
        if self.waiting_all:
            return self.waiting.get(digest, _NOBODY)
        return self.waiting_for(digest)

    def has_waiting(self) -> bool:
        """Whether any run of the batch waits on a manifest."""
        return any(self.waiting.values())

    def group(self, key: str, template: GroupSeed) -> GroupView:
        """The group as the batch has it (loaded on first use, else founded by ``template``)."""
        if key in self.groups:
            return self.groups[key]
        spilled = self.spill.take(key) if self.spill is not None else None
        if spilled is not None:
            group, self.members[key], self.leader_rows[key], in_db = spilled
            if in_db:
                self.group_in_db.add(key)
            self.groups[key] = group
            return group
        if self.no_groups is None:
            self.no_groups = not self.store.has_groups()
        # A first import finds no group in the database: skip the look.
        loaded = None if self.no_groups else self.store.group(key)
        if loaded is None:
            group = GroupView(key, template.metricKey, template.direction, template.kind)
        else:
            self.group_in_db.add(key)
            group = loaded.view
            self.members[key] = loaded.members
            self.leader_rows[key] = loaded.leader_rows
        self.groups[key] = group
        self.members.setdefault(key, [])
        self.leader_rows.setdefault(key, {})
        return group

    # --- applying --------------------------------------------------------------------------

    def role(self, signer: str, seq: int) -> str | None:
        """The role of key ``signer`` at position ``seq``, if it was valid then."""
        key = self.keys.get(signer)
        return key.role if key is not None and key.valid_at(seq) else None

    def apply(self, entry: StoredEntry) -> None:
        """Fold one entry (the next in log order).

        Raises:
            EventError: the entry does not decode.
        """
        event = decode_event(entry)
        role = self.role(entry.signer, entry.seq)
        signer = self.keys.get(entry.signer)
        ctx = Context(
            entry.seq,
            entry.recordedAt,
            role,
            entry.payload_digest,
            entry.signer,
            signer.name if signer is not None else "",
            self.tolerance,
        )
        if type(event) is PolicyChanged and event.policy == POLICY_NAME and ctx.permits(event):
            # In force from the next entry on; a policy whose parameters are not one is void.
            self.tolerance = policy_from(event.version, event.parameters) or self.tolerance
        if entry.type.startswith("key."):  # only key events change the keyring
            keys = fold_keys(self.keys, event, entry.seq, entry.signer)
            if keys is not self.keys:
                self.keys, self.keys_changed, self.keys_at = keys, True, entry.seq + 1
        carried = carried_manifests(event) if isinstance(event, RunIngested) else {}
        for digest in self.targets(event, carried):
            self._fold_run(digest, event, ctx)
        self.record(event, ctx, carried)

    def targets(self, event: AnyEvent, carried: dict[str, Any]) -> list[str]:
        """The runs ``event`` folds, sorted: its own run, and the runs waiting on a manifest it
        brings (``carried``: those a run.ingested carries, by digest). Extension point."""
        match event:
            case RunIngested():
                targets = {event.runDigest}
                for digest in carried:
                    targets |= self.waiters(digest)
                return sorted(targets)
            case ManifestRecorded():
                return sorted(self.waiters(event.digest))
            case (
                RunSuperseded()
                | RunRetracted()
                | RerunRequested()
                | RerunClaimedV2()
                | RerunCompleted()
                | RerunCompletedV2()
            ):
                return [event.runDigest]
            case _:
                return []

    def _fold_run(self, digest: str, event: AnyEvent, ctx: Context) -> None:
        old = self.run(digest)
        new = fold_run(digest, old, event, ctx)
        if new is None or new == old:
            return
        self._set_run(digest, old, new, ctx)

    def _set_run(self, digest: str, old: RunView | None, new: RunView, ctx: Context) -> None:
        changes = self.changes
        self.runs[digest] = new
        changes.runs.add(digest, ctx.seq + 1, new, had_db_row=digest in self.run_in_db)
        before = set(old.waitingOn) if old is not None else set()
        after = set(new.waitingOn)
        for d in before - after:
            self.waiting_for(d).discard(digest)
            changes.waiting_del.add((d, digest))
            changes.waiting_add.discard((d, digest))
        for d in after - before:
            self.waiting_for(d).add(digest)
            changes.waiting_add.add((d, digest))
            changes.waiting_del.discard((d, digest))
        if old is None:
            changes.aliases.extend((alias, digest, ctx.seq + 1) for alias in new.aliases)
        old_key, old_member = _member(old)
        new_key, new_member = _member(new)
        if (old_key, old_member) == (new_key, new_member):
            return
        if old_key is not None and old_member is not None and old_key != new_key:
            self.change_group(old_key, old, MemberChange(old_member, None), ctx.seq)
        if new_key is not None and (new_member is not None or old_key == new_key):
            before_member = old_member if old_key == new_key else None
            self.change_group(new_key, new, MemberChange(before_member, new_member), ctx.seq)

    def change_group(
        self, key: str, template: GroupSeed | None, change: MemberChange, seq: int
    ) -> None:
        """Fold a run's move in group ``key`` at position ``seq`` (``template``: the run, which
        founds the group if it is new). Extension point."""
        assert template is not None  # noqa: S101 - a member change always comes from a run
        old = self.group(key, template)
        members = self.members[key]
        apply_change(members, change)
        new = fold_group(old, change, members)
        if new == old:
            return
        self.groups[key] = new
        self.changes.groups.add(key, seq + 1, new, had_db_row=key in self.group_in_db)
        if new.history != old.history:
            self._diff_leaders(key, old.history, new.history, seq + 1)

    def _diff_leaders(
        self, key: str, old: tuple[LeaderChange, ...], new: tuple[LeaderChange, ...], at: int
    ) -> None:
        current = self.leader_rows[key]
        leaders_new = self.changes.leaders_new
        ident = {(c.runDigest, c.previousRunDigest, c.at): c for c in new}
        for row_id in [r for r in current if r not in ident]:
            since = current.pop(row_id)
            pending = leaders_new.get((key, row_id[0], since))
            if pending is not None and since == at:
                del leaders_new[(key, row_id[0], since)]
            elif pending is not None:
                pending[7] = at  # its valid_to
            else:
                self.changes.leaders_closed.append((at, key, row_id[0], since))
        for row_id, change in ident.items():
            if row_id in current:
                continue
            current[row_id] = at
            leaders_new[(key, change.runDigest, at)] = [
                key,
                change.runDigest,
                change.previousRunDigest,
                change.at,
                change.cause,
                change.policyVersion,
                at,
                None,
                self.groups[key].kind,
            ]

    def record(self, event: AnyEvent, ctx: Context, carried: dict[str, Any]) -> None:
        """Gather the small projections' rows ``event`` makes (``records.record_ops``) and
        who signed its entry. Extension point."""
        at = ctx.seq + 1
        changes = self.changes
        changes.signed.append((ctx.signer, ctx.seq))
        for op in record_ops(event, ctx, carried):
            if type(op) is Manifest:
                if op.digest not in changes.manifests:
                    manifest = op.manifest
                    title = manifest["metadata"].get("title")
                    changes.manifests[op.digest] = (
                        manifest["kind"],
                        manifest["metadata"]["name"],
                        at,
                        _ENC.encode(manifest),
                        title if isinstance(title, str) else None,
                    )
            elif type(op) is Insert:
                changes.inserts.setdefault(op.table, []).append(op.row)
            else:
                assert type(op) is Update  # noqa: S101 - the three kinds of Op
                changes.updates.setdefault(op.statement, []).append(op.row)

    def flush(self) -> None:
        """Write what the batch gathered (and the keyring, if it changed). Extension point."""
        if self.keys_changed:
            self.changes.keys, self.changes.keys_at = self.keys, self.keys_at
        self.store.write(self.changes)
