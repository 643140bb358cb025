"""Materialising the folds in SQLite, in the append transaction or by replay from position 0.

For each entry the materialiser decodes the event, routes it to the aggregates it may concern,
folds them (pure functions in ``runs``, ``groups``, ``keyring``) and records what changed as
version rows: the version an entry at position ``s`` makes is valid from tree size ``s + 1``.
Within a batch the aggregates live in memory; the rows are written once, at the end.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Protocol

import msgspec

from events.bulk import paused_gc
from events.decoding import decode_event
from events.entries import StoredEntry
from events.types import (
    AnyEvent,
    ManifestRecorded,
    RerunCompleted,
    RunIngested,
    RunRetracted,
    RunSuperseded,
)
from projections import schema
from projections.groups import MemberChange, apply_change, fold_group
from projections.keyring import KeyView, fold_keys
from projections.records import Insert, Manifest, Update, record_ops
from projections.runs import Context, carried_manifests, fold_run
from projections.views import Direction, GroupView, LeaderChange, Member, RunView

__all__ = ["RUN_SUBJECTS", "GroupSeed", "Materializer", "format_rows", "load_keys"]

_ENC = msgspec.json.Encoder()
_RUN = msgspec.json.Decoder(RunView)
_KEY = msgspec.json.Decoder(KeyView)
NAME = "all"
# The format of what the folds store. Bump it whenever a fold or a table changes what it
# writes: projections written in another format are stale, and the ledger rebuilds them from
# the log when it opens the data directory.
# 2: a run's own manifest is no longer copied into p_manifests.
# 3: p_groups has no member count (a version per leader change, not per member joining).
FORMAT = 3
_FORMAT_ROW = "format"


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


def load_keys(conn: sqlite3.Connection) -> dict[str, KeyView]:
    """Every key the projection knows."""
    out = {}
    for key_id, role, name, public, since, until, reason, rotated in conn.execute(
        "SELECT key_id, role, name, public_key, valid_from, revoked_at, revoked_reason, rotated_to FROM p_keys"
    ):
        out[key_id] = KeyView(key_id, role, name, public, since, until, reason, rotated)
    return out


class _Versions:
    """Version rows of one versioned table, gathered during a batch."""

    def __init__(self) -> None:
        self.rows: dict[Any, list[list[Any]]] = {}  # key -> [[valid_from, valid_to, payload]]
        self.close_db: dict[Any, int] = {}  # key -> valid_to for the row current before the batch

    def add(self, key: Any, valid_from: int, payload: Any, *, had_db_row: bool) -> None:
        versions = self.rows.setdefault(key, [])
        if versions and versions[-1][0] == valid_from:
            versions[-1][2] = payload  # two changes at one position: the last one stands
            return
        if versions:
            versions[-1][1] = valid_from
        elif had_db_row:
            self.close_db[key] = valid_from
        versions.append([valid_from, None, payload])


class _Batch:
    """The in-memory state of one batch of entries."""

    def __init__(self, conn: sqlite3.Connection, keys: Mapping[str, KeyView]) -> None:
        self.conn = conn
        self.keys = keys
        self.keys_changed = False
        self.runs: dict[str, RunView | None] = {}
        self.run_in_db: set[str] = set()
        self.run_versions = _Versions()
        self.groups: dict[str, GroupView] = {}
        self.members: dict[str, list[Member]] = {}  # each group's eligible members, walk order
        self.no_groups: bool | None = None  # the database held no group when the batch began
        self.group_in_db: set[str] = set()
        self.group_versions = _Versions()
        self.leader_rows: dict[str, dict[tuple[str, str | None, str], int]] = {}
        self.leader_closed: list[tuple[int, str, str, int]] = []
        self.leader_new: dict[tuple[str, str, int], list[Any]] = {}
        self.waiting: dict[str, set[str]] = {}
        self.waiting_loaded: set[str] = set()
        self.waiting_all = False
        self.waiting_add: set[tuple[str, str]] = set()
        self.waiting_del: set[tuple[str, str]] = set()
        self.aliases: list[tuple[str, str, int]] = []
        self.manifests: dict[str, tuple[str, str, int, bytes]] = {}
        self.rows: dict[str, list[tuple[Any, ...]]] = {}
        self.updates: dict[str, list[tuple[Any, ...]]] = {}

    def carry_groups(self, previous: _Batch) -> None:
        """Take over the group state a previous batch left (true only while nobody else
        writes: a rebuild)."""
        self.groups = previous.groups
        self.members = previous.members
        self.group_in_db = previous.group_in_db | set(previous.group_versions.rows)
        self.leader_rows = previous.leader_rows

    # --- loading ---------------------------------------------------------------------------

    def run(self, digest: str) -> RunView | None:
        if digest not in self.runs:
            row = self.conn.execute(
                "SELECT view FROM p_runs WHERE run_digest = ? AND valid_to IS NULL", (digest,)
            ).fetchone()
            self.runs[digest] = None if row is None else _RUN.decode(row[0])
            if row is not None:
                self.run_in_db.add(digest)
        return self.runs[digest]

    def preload(self, subjects: Iterable[str]) -> None:
        """Fetch what the batch will look at in a few queries instead of one per entry: every
        waiting reference (few: only runs with unresolved references wait), and the runs the
        entries name as subjects (``subjects``: those of its run and rerun entries)."""
        self.waiting_all = True
        for digest, run in self.conn.execute("SELECT digest, run_digest FROM p_waiting"):
            self.waiting.setdefault(digest, set()).add(run)
        subjects = sorted(set(subjects))
        for i in range(0, len(subjects), 500):
            chunk = subjects[i : i + 500]
            marks = ",".join("?" * len(chunk))
            found = {
                digest: body
                for digest, body in self.conn.execute(
                    f"SELECT run_digest, view FROM p_runs WHERE valid_to IS NULL AND run_digest IN ({marks})",  # noqa: S608
                    chunk,
                )
            }
            for digest in chunk:
                body = found.get(digest)
                self.runs[digest] = None if body is None else _RUN.decode(body)
                if body is not None:
                    self.run_in_db.add(digest)

    def waiting_for(self, digest: str) -> set[str]:
        """The runs waiting on ``digest`` (the set itself: callers may change it)."""
        if not self.waiting_all and digest not in self.waiting_loaded:
            self.waiting_loaded.add(digest)
            rows = self.conn.execute("SELECT run_digest FROM p_waiting WHERE digest = ?", (digest,))
            self.waiting.setdefault(digest, set()).update(r[0] for r in rows)
        return self.waiting.setdefault(digest, set())

    def waiters(self, digest: str) -> set[str] | frozenset[str]:
        """``waiting_for`` to read: a digest nobody waits on adds nothing to the batch."""
        if self.waiting_all:
            return self.waiting.get(digest, _NOBODY)
        return self.waiting_for(digest)

    def group(self, key: str, template: GroupSeed) -> GroupView:
        if key in self.groups:
            return self.groups[key]
        if self.no_groups is None:
            self.no_groups = self.conn.execute("SELECT 1 FROM p_groups LIMIT 1").fetchone() is None
        meta = None
        if not self.no_groups:  # a first import finds no group in the database: skip the look
            meta = self.conn.execute(
                "SELECT kind, metric_key, direction, best, policy_version FROM p_groups"
                " WHERE group_key = ? AND valid_to IS NULL",
                (key,),
            ).fetchone()
        if meta is None:
            group = GroupView(key, template.metricKey, template.direction, template.kind)
        else:
            self.group_in_db.add(key)
            members = list(
                sorted(
                    Member(obs, digest, value)
                    for obs, digest, value in self.conn.execute(
                        "SELECT observed_at, run_digest, primary_value FROM p_runs"
                        " WHERE group_key = ? AND eligible = 1 AND valid_to IS NULL",
                        (key,),
                    )
                )
            )
            rows = self.conn.execute(
                "SELECT run_digest, previous_run_digest, at, cause, policy_version, valid_from"
                " FROM p_leaders WHERE group_key = ? AND valid_to IS NULL ORDER BY at, run_digest",
                (key,),
            ).fetchall()
            history = tuple(LeaderChange(key, r[0], r[2], r[3], r[4], r[1]) for r in rows)
            self.leader_rows[key] = {(r[0], r[1], r[2]): r[5] for r in rows}
            value_of = {m.runDigest: m.value for m in members}
            values = tuple(value_of[h.runDigest] for h in history)
            group = GroupView(key, meta[1], meta[2], meta[0], history, values, meta[4])
            self.members[key] = members

        self.groups[key] = group
        self.members.setdefault(key, [])
        self.leader_rows.setdefault(key, {})
        return group

    # --- applying --------------------------------------------------------------------------

    def role(self, signer: str, seq: int) -> str | None:
        key = self.keys.get(signer)
        return key.role if key is not None and key.valid_at(seq) else None

    def apply(self, entry: StoredEntry) -> None:
        event = decode_event(entry)
        ctx = Context(
            entry.seq, entry.recordedAt, self.role(entry.signer, entry.seq), entry.payload_digest
        )
        if entry.type.startswith("key."):  # only key events change the keyring
            keys = fold_keys(self.keys, event, entry.seq, entry.signer)
            if keys is not self.keys:
                self.keys, self.keys_changed = keys, True
        carried = carried_manifests(event) if isinstance(event, RunIngested) else {}
        for digest in self._targets(event, carried):
            self._fold_run(digest, event, ctx)
        self._record(event, ctx, carried)

    def _targets(self, event: AnyEvent, carried: dict[str, Any]) -> list[str]:
        match event:
            case RunIngested():
                targets = {event.runDigest}
                for digest in carried:
                    targets |= self.waiters(digest)
                return sorted(targets)
            case ManifestRecorded():
                return sorted(self.waiters(event.digest))
            case RunSuperseded() | RunRetracted() | RerunCompleted():
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
        self.runs[digest] = new
        self.run_versions.add(digest, ctx.seq + 1, new, had_db_row=digest in self.run_in_db)
        before = set(old.waitingOn) if old is not None else set()
        after = set(new.waitingOn)
        for d in before - after:
            self.waiting_for(d).discard(digest)
            self.waiting_del.add((d, digest))
            self.waiting_add.discard((d, digest))
        for d in after - before:
            self.waiting_for(d).add(digest)
            self.waiting_add.add((d, digest))
            self.waiting_del.discard((d, digest))
        if old is None:
            self.aliases.extend((alias, digest, ctx.seq + 1) for alias in new.aliases)
        old_key, old_member = _member(old)
        new_key, new_member = _member(new)
        if (old_key, old_member) == (new_key, new_member):
            return
        if old_key is not None and old_member is not None and old_key != new_key:
            self._change_group(old_key, old, MemberChange(old_member, None), ctx.seq)
        if new_key is not None and (new_member is not None or old_key == new_key):
            before_member = old_member if old_key == new_key else None
            self._change_group(new_key, new, MemberChange(before_member, new_member), ctx.seq)

    def _change_group(
        self, key: str, template: GroupSeed | None, change: MemberChange, seq: int
    ) -> None:
        assert template is not None  # noqa: S101 - a member change always comes from a run
        old = self.group(key, template)
        members = self.members[key]
        apply_change(members, change)
        new = fold_group(old, change, members)
        if new == old:
            return
        self.groups[key] = new
        self.group_versions.add(key, seq + 1, new, had_db_row=key in self.group_in_db)
        if new.history != old.history:
            self._diff_leaders(key, old.history, new.history, seq + 1)

    def _diff_leaders(
        self, key: str, old: tuple[LeaderChange, ...], new: tuple[LeaderChange, ...], at: int
    ) -> None:
        current = self.leader_rows[key]
        ident = {(c.runDigest, c.previousRunDigest, c.at): c for c in new}
        for row_id in [r for r in current if r not in ident]:
            since = current.pop(row_id)
            pending = self.leader_new.get((key, row_id[0], since))
            if pending is not None and since == at:
                del self.leader_new[(key, row_id[0], since)]
            elif pending is not None:
                pending[7] = at  # its valid_to
            else:
                self.leader_closed.append((at, key, row_id[0], since))
        for row_id, change in ident.items():
            if row_id in current:
                continue
            current[row_id] = at
            self.leader_new[(key, change.runDigest, at)] = [
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

    def _record(self, event: AnyEvent, ctx: Context, carried: dict[str, Any]) -> None:
        at = ctx.seq + 1
        for op in record_ops(event, ctx, carried):
            if type(op) is Manifest:
                self._manifest(op.digest, op.manifest, at)
            elif type(op) is Insert:
                self.rows.setdefault(op.table, []).append(op.row)
            else:
                assert type(op) is Update  # noqa: S101 - the three kinds of Op
                self.updates.setdefault(op.statement, []).append(op.row)

    def _manifest(self, digest: str, manifest: dict[str, Any], at: int) -> None:
        if digest not in self.manifests:
            self.manifests[digest] = (
                manifest["kind"],
                manifest["metadata"]["name"],
                at,
                _ENC.encode(manifest),
            )

    # --- writing ---------------------------------------------------------------------------

    def flush(self) -> None:
        conn = self.conn
        conn.executemany(
            "UPDATE p_runs SET valid_to = ? WHERE run_digest = ? AND valid_to IS NULL",
            [(v, k) for k, v in self.run_versions.close_db.items()],
        )
        run_rows = []
        for digest, versions in self.run_versions.rows.items():
            for valid_from, valid_to, view in versions:
                run_rows.append(
                    (
                        digest,
                        valid_from,
                        valid_to,
                        view.kind,
                        view.group_key,
                        int(view.eligible),
                        view.primaryValue,
                        view.direction,
                        view.observedAt,
                        view.source,
                        view.evidenceLevel,
                        view.hardware,
                        view.status,
                        _ENC.encode(view),
                    )
                )
        conn.executemany("INSERT INTO p_runs VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)", run_rows)
        conn.executemany(
            "UPDATE p_groups SET valid_to = ? WHERE group_key = ? AND valid_to IS NULL",
            [(v, k) for k, v in self.group_versions.close_db.items()],
        )
        group_rows = []
        for key, versions in self.group_versions.rows.items():
            for valid_from, valid_to, g in versions:
                group_rows.append(
                    (
                        key,
                        valid_from,
                        valid_to,
                        g.kind,
                        g.metricKey,
                        g.direction,
                        g.leader,
                        g.best,
                        g.policyVersion,
                    )
                )
        conn.executemany("INSERT INTO p_groups VALUES (?,?,?,?,?,?,?,?,?)", group_rows)
        conn.executemany(
            "UPDATE p_leaders SET valid_to = ? WHERE group_key = ? AND run_digest = ? AND valid_from = ?",
            self.leader_closed,
        )
        conn.executemany(
            "INSERT INTO p_leaders VALUES (?,?,?,?,?,?,?,?,?)", list(self.leader_new.values())
        )
        conn.executemany(
            "DELETE FROM p_waiting WHERE digest = ? AND run_digest = ?", sorted(self.waiting_del)
        )
        conn.executemany("INSERT OR IGNORE INTO p_waiting VALUES (?, ?)", sorted(self.waiting_add))
        conn.executemany("INSERT OR IGNORE INTO p_aliases VALUES (?, ?, ?)", self.aliases)
        conn.executemany(
            "INSERT OR IGNORE INTO p_manifests VALUES (?, ?, ?, ?, ?)",
            [(d, *rest) for d, rest in self.manifests.items()],
        )
        for table, rows in self.rows.items():
            marks = ",".join("?" * len(rows[0]))
            conn.executemany(f"INSERT OR IGNORE INTO {table} VALUES ({marks})", rows)  # noqa: S608
        for what, rows in self.updates.items():
            conn.executemany(_UPDATES[what], rows)
        if self.keys_changed:
            conn.executemany(
                "INSERT OR REPLACE INTO p_keys VALUES (?,?,?,?,?,?,?,?)",
                [
                    (
                        k.keyId,
                        k.role,
                        k.name,
                        k.publicKey,
                        k.since,
                        k.until,
                        k.revokedReason,
                        k.rotatedTo,
                    )
                    for k in self.keys.values()
                ],
            )


_NOBODY: frozenset[str] = frozenset()
RUN_SUBJECTS = ("run.", "rerun.")  # entry types whose subject is a run
_UPDATES = {
    "attestation_withdrawn": "UPDATE p_attestations SET withdrawn_at = ?, reason = ? WHERE id = ? AND withdrawn_at IS NULL",
    "attestation_hidden": "UPDATE p_attestations SET hidden_at = ?, reason = ? WHERE id = ? AND hidden_at IS NULL",
    "report_resolved": "UPDATE p_reports SET resolved_at = ?, resolution = ?, note = ? WHERE id = ? AND resolved_at IS NULL",
}


class Materializer:
    """Applies committed entries to the projection tables of one connection."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        schema.create(conn)
        self._keys: dict[str, KeyView] | None = None
        self._carried: _Batch | None = None

    def position(self) -> int:
        """The tree size the projections have applied."""
        row = self.conn.execute(
            "SELECT position FROM p_state WHERE projection = ?", (NAME,)
        ).fetchone()
        return 0 if row is None else int(row[0])

    def stale(self) -> bool:
        """True if the projections hold entries folded in another format than ``FORMAT`` (by
        an older version of the folds): they must be rebuilt from the log."""
        row = self.conn.execute(
            "SELECT position FROM p_state WHERE projection = ?", (_FORMAT_ROW,)
        ).fetchone()
        return self.position() > 0 and (row is None or int(row[0]) != FORMAT)

    def apply(self, entries: Sequence[StoredEntry]) -> None:
        """Fold ``entries`` (consecutive, starting at ``position()``) into the projections, in
        the caller's transaction.

        Raises:
            EventError: an entry does not decode.
        """
        if not entries:
            return
        if self._keys is None:
            self._keys = load_keys(self.conn)
        batch = _Batch(self.conn, self._keys)
        if self._carried is not None:
            batch.carry_groups(self._carried)
        try:
            batch.preload(e.subject for e in entries if e.type.startswith(RUN_SUBJECTS))
            for entry in entries:
                batch.apply(entry)
            batch.flush()
        except BaseException:
            self._keys = None  # the caller rolls back; reload next time
            raise
        self._keys = dict(batch.keys)
        if self._carried is not None:
            self._carried = batch
        position = entries[-1].seq + 1
        self.conn.executemany("INSERT OR REPLACE INTO p_state VALUES (?, ?)", format_rows(position))

    def __call__(self, conn: sqlite3.Connection, entries: Sequence[StoredEntry]) -> None:
        """The store's projector hook."""
        self.apply(entries)

    def rebuild(
        self, entries: Iterable[StoredEntry], *, batch_size: int = 4000, indexes: bool = True
    ) -> int:
        """Drop every projection and replay ``entries`` from position 0 (in the caller's
        transaction). Returns the number of entries applied. ``indexes=False``: leave the
        indexes out (a scratch copy that is only compared)."""
        with paused_gc():
            schema.drop(self.conn)
            # Reads during the rebuild (runs, waiting runs, leaders) use the primary keys;
            # groups are carried from batch to batch, never loaded.
            schema.create(self.conn, indexes=False)
            self._keys = {}
            # Nobody else writes while the rebuild runs, so the groups folded by one batch stay
            # true for the next: they are carried over instead of reloaded from the database.
            self._carried = _Batch(self.conn, {})
            count = 0
            try:
                for chunk in _chunks(entries, batch_size):
                    self.apply(chunk)
                    count += len(chunk)
            finally:
                self._carried = None
            if indexes:
                schema.create(self.conn)
            return count

    def replace_with(self, rebuilt: sqlite3.Connection, schemas: Sequence[str]) -> None:
        """Replace every projection with the rebuilt one that ``rebuilt`` reads from its
        attached ``schemas`` (``projections.shards``), in the caller's transaction."""
        schema.drop(self.conn)
        schema.create(self.conn, indexes=False)
        for table in schema.TABLES:
            rows = rebuilt.execute(schema.rebuilt_rows(schemas, table))
            marks = ",".join("?" * len(rows.description))
            self.conn.executemany(f"INSERT INTO {table} VALUES ({marks})", rows)  # noqa: S608
        schema.create(self.conn)
        self._keys = None


def format_rows(position: int) -> list[tuple[str, int]]:
    """The p_state rows of projections that have applied ``position`` entries."""
    return [(NAME, position), (_FORMAT_ROW, FORMAT)]


def _chunks(items: Iterable[StoredEntry], size: int) -> Iterator[list[StoredEntry]]:
    chunk: list[StoredEntry] = []
    for item in items:
        chunk.append(item)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk
