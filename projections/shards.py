"""A rebuild of every projection on every core, into scratch databases: what ``benchproof
replay`` compares with the incrementally maintained projections.

The rebuild splits the log by run. Each of ``workers`` processes (``python -m
projections.shards``) reads the log on its own read-only handle (``SqliteLog.open_readonly``),
routes each entry by its type and subject columns (``SqliteLog.shard_rows``), reads the leaves
it needs (checking them against those columns), and folds the runs whose digest falls in its
shard (``shard_of``) into its own scratch database.
Runs depend on each other in only a few ways, and each is covered:

- every entry whose subject is a run (run.*, rerun.*) is folded and recorded by its run's shard;
  every other entry is recorded by shard 0 (attestations, reports, citations, sources,
  policies, manifests recorded on their own, keys);
- key and policy events are folded by every shard (a rerun's signer must hold the rerunner
  role; a rerun is judged by the tolerance policy in force at its position);
- a manifest that runs wait on may arrive with any run, or on its own: a shard that has waiting
  runs reads every run.ingested and manifest.recorded entry for them;
- a group's members come from every shard: each shard sends its member changes to the calling
  process, which merges them in log order and folds the groups and leader histories into a
  scratch database of its own;
- a run event filed under a subject that is not its run cannot be routed: the shard that reads
  it says so (``Unshardable``), and the caller rebuilds in one process instead.

A table's rows are then the union of the scratch databases (``schema.rebuilt_rows``); a
manifest that several shards recorded keeps its first position. Tests check that they equal
the incremental projections, for random logs too.
"""

from __future__ import annotations

import contextlib
import gc
import heapq
import pickle
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import islice
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple

from events.bulk import paused_gc
from events.entries import StoredEntry, read_entry
from events.errors import EventError, LogCorrupted, LogError
from events.keyring import KeyView
from events.port import Session
from events.stores import scratch
from events.stores.sqlite import SqliteLog
from events.types import (
    AnyEvent,
    RerunClaimedV2,
    RerunCompleted,
    RerunCompletedV2,
    RerunRequested,
    RunIngested,
    RunRetracted,
    RunSuperseded,
)
from projections import schema
from projections.batch import RUN_SUBJECTS, Batch, GroupSeed
from projections.groups import MemberChange
from projections.materialize import FORMAT, Materializer
from projections.rows import GroupSpill, RowStore
from projections.runs import Context
from projections.shardpipe import HEADER, Worker
from projections.tolerance import TolerancePolicy
from projections.views import Direction

__all__ = [
    "Change",
    "Unshardable",
    "open_rebuilt",
    "open_scratch",
    "rebuild_in_one",
    "rebuild_sharded",
    "shard_of",
]


class Unshardable(LogError):
    """A run event whose subject is not its run: the log cannot be split by subject (the
    caller rebuilds in one process)."""


def shard_of(subject: str, workers: int) -> int:
    """The shard that folds the run ``subject``: its last character's code point modulo the
    number of shards (a digest's last hex digit spreads runs evenly; ``SqliteLog.shard_rows``
    computes the same in SQL)."""
    return (ord(subject[-1]) if subject else 0) % workers


def open_scratch(path: Path) -> Session:
    """A fresh scratch database (``events.stores.scratch``) with the projection tables,
    without indexes."""
    conn = scratch.open_scratch(path)
    schema.create(conn, indexes=False)
    return conn


def open_rebuilt(paths: Sequence[Path]) -> tuple[Session, list[str]]:
    """A session that reads a sharded rebuild (``rebuild_sharded``'s paths: the shards, then
    the groups' database), and the schemas a table's rows come from (``schema.rebuilt_rows``)."""
    *shards, groups = paths
    session, names = scratch.open_attached(groups, shards)
    return session, names


def rebuild_in_one(
    path: Path, entries: Iterable[StoredEntry], *, batch_size: int = 4000
) -> tuple[Session, list[str]]:
    """Rebuild every projection from ``entries`` (the log from position 0) into a fresh scratch
    database at ``path``, in this process; return a connection that reads it and its schema.

    Raises:
        LogCorrupted, EventError: an entry does not read or decode.
    """
    conn = open_scratch(path)
    try:
        conn.execute(scratch.BEGIN)
        Materializer(conn).rebuild(entries, batch_size=batch_size, indexes=False)
        conn.execute(scratch.COMMIT)
    except BaseException:
        conn.close()
        raise
    return conn, ["main"]


class _Seed(NamedTuple):
    metricKey: str
    direction: Direction
    kind: str


# A member change as a shard sends it: (seq, run digest, order within the shard), group key,
# the change, and what a new group takes from the run. Sorted by the first three: log order,
# then the order the plain fold visits runs (by digest) and changes a run's groups.
Change = tuple[int, str, int, str, MemberChange, _Seed]


_WAITED_ON = ("run.ingested.v1", "manifest.recorded.v1")
# Events whose subject must be their run: another subject cannot be routed to its shard.
_RUN_EVENTS = (
    RunIngested,
    RunSuperseded,
    RunRetracted,
    RerunRequested,
    RerunClaimedV2,
    RerunCompleted,
    RerunCompletedV2,
)
# Folded by every shard: the keyring (a rerun's signer must hold the rerunner role) and the
# policies (a rerun is judged by the tolerance policy in force at its position).
_EVERY_SHARD = ("key.", "policy.")


class _ShardBatch(Batch):
    """A batch of one shard: folds only the runs of its shard, records only the entries it
    owns, and keeps its member changes for the group fold instead of folding groups."""

    def __init__(
        self,
        store: RowStore,
        keys: dict[str, KeyView],
        shard: int,
        workers: int,
        tolerance: TolerancePolicy | None,
    ) -> None:
        super().__init__(store, keys, tolerance)
        self.shard, self.workers = shard, workers
        self.owned = False
        self.member_changes: list[Change] = []
        self.order = 0

    def apply_owned(self, entry: StoredEntry, owned: bool) -> None:
        self.owned = owned
        self.apply(entry)

    def targets(self, event: AnyEvent, carried: dict[str, Any]) -> list[str]:
        if (
            self.owned
            and isinstance(event, _RUN_EVENTS)
            and shard_of(event.runDigest, self.workers) != self.shard
        ):
            raise Unshardable(f"a {type(event).__name__} entry's subject is not its run")
        targets = super().targets(event, carried)
        return [d for d in targets if shard_of(d, self.workers) == self.shard]

    def record(self, event: AnyEvent, ctx: Context, carried: dict[str, Any]) -> None:
        if self.owned:
            super().record(event, ctx, carried)

    def change_group(
        self, key: str, template: GroupSeed | None, change: MemberChange, seq: int
    ) -> None:
        assert template is not None  # noqa: S101 - a member change always comes from a run
        member = change.after if change.after is not None else change.before
        assert member is not None  # noqa: S101 - a change has a before or an after
        seed = _Seed(template.metricKey, template.direction, template.kind)
        self.member_changes.append((seq, member.runDigest, self.order, key, change, seed))
        self.order += 1

    def flush(self) -> None:
        if self.shard != 0:
            self.keys_changed = False  # shard 0 writes the keyring
        super().flush()


def _fold_shard(
    log: Path,
    size: int,
    shard: int,
    workers: int,
    out: Path,
    batch: int,
    send: Callable[[list[Change]], None],
) -> int:
    """Fold shard ``shard`` of the first ``size`` entries of ``log`` into ``out``; ``send``
    hears each batch's member changes. Returns the number of entries read."""
    conn = open_scratch(out)
    store = RowStore(conn)
    keys: dict[str, KeyView] = {}
    tolerance: TolerancePolicy | None = None  # carried: only shard 0 records the policies
    count = 0
    with contextlib.closing(SqliteLog.open_readonly(log)) as db:
        # An entry's route, from its type and subject columns: the leaf itself is read only
        # where the shard will fold or record the entry (a run's entry, by its run's shard; any
        # other, by all).
        rows = db.shard_rows(size, shard, workers)
        conn.execute(scratch.BEGIN)
        while chunk := list(islice(rows, batch)):
            b = _ShardBatch(store, keys, shard, workers, tolerance)
            subjects = [
                subject
                for _, kind, subject, leaf in chunk
                if leaf is not None and kind.startswith(RUN_SUBJECTS)
            ]
            b.preload(subjects)
            for seq, kind, subject, leaf in chunk:
                owned = leaf is not None and (kind.startswith(RUN_SUBJECTS) or shard == 0)
                if leaf is not None and (owned or kind.startswith(_EVERY_SHARD)):
                    entry = read_entry(leaf, position=seq)
                elif kind in _WAITED_ON and b.has_waiting():
                    # Another shard's run may bring what one of ours waits on.
                    found = db.leaf(seq)
                    if found is None:
                        raise LogCorrupted(f"entry {seq} has no leaf", position=seq)
                    entry = read_entry(found, position=seq)
                else:
                    continue
                if (entry.type, entry.subject) != (kind, subject):
                    raise LogCorrupted(
                        f"entry {seq}: its type and subject columns are not its leaf's",
                        position=seq,
                    )
                b.apply_owned(entry, owned)
            b.flush()
            keys, tolerance = dict(b.keys), b.tolerance
            count += len(chunk)
            send(b.member_changes)
            del b, chunk
            gc.collect(1)  # the collector is paused: a batch's cyclic garbage goes here
        conn.execute(scratch.COMMIT)
    conn.close()
    return count


def _serve(log: str, size: int, shard: int, workers: int, out: str, batch: int) -> None:
    pipe: BinaryIO = sys.stdout.buffer

    def send(kind: bytes, body: bytes) -> None:
        pipe.write(HEADER.pack(kind, len(body)))
        pipe.write(body)

    def changes(items: list[Change]) -> None:
        send(b"C", pickle.dumps(items, protocol=pickle.HIGHEST_PROTOCOL))

    try:
        with paused_gc():
            count = _fold_shard(Path(log), size, shard, workers, Path(out), batch, changes)
        send(b"D", str(count).encode())
    except EventError as exc:  # raised again by the calling process, as it is
        send(b"E", pickle.dumps((type(exc), exc.detail, exc.details)))
    except Exception as exc:  # noqa: BLE001 - reported to the calling process, which raises
        failure = LogError(f"a rebuild worker failed: {type(exc).__name__}: {exc}")
        send(b"E", pickle.dumps((LogError, failure.detail, {})))
    pipe.flush()


def _fold_groups(conn: Session, changes: Iterator[Change], batch: int) -> None:
    """Fold the merged member changes into the groups and leader histories of ``conn``, in
    batches that end between positions (a position's changes make one version)."""
    store = RowStore(conn)
    spill = GroupSpill(conn)
    b = Batch(store, {})
    done, last = 0, -1
    for seq, _, _, key, change, seed in changes:
        if done >= batch and seq != last:
            b.flush()
            b, previous, done = Batch(store, {}), b, 0
            b.carry_groups(previous, spill)
        b.change_group(key, seed, change, seq)
        done, last = done + 1, seq
    b.flush()


def rebuild_sharded(
    log: Path, size: int, out: Path, *, workers: int = 2, batch: int = 4000
) -> list[Path]:
    """Rebuild every projection from the first ``size`` entries of the log at ``log`` into
    fresh scratch databases under the folder ``out``: one per shard, and one for the groups and
    the projection state. Returns their paths; ``schema.rebuilt_rows`` reads a table from them.

    Raises:
        LogError: a worker failed, or the log holds fewer entries. LogCorrupted, EventError:
        an entry does not read or decode.
    """
    paths = [out / f"shard-{i}.db" for i in range(workers)]
    groups = out / "groups.db"
    with contextlib.ExitStack() as stack:
        running = []
        for i, path in enumerate(paths):
            errors = stack.enter_context(tempfile.TemporaryFile())
            command = [sys.executable, "-m", "projections.shards"]
            args = [str(log), str(size), str(i), str(workers), str(path), str(batch)]
            worker = Worker([*command, *args], errors)
            stack.callback(worker.stop)
            running.append(worker)
        conn = open_scratch(groups)
        stack.callback(conn.close)
        conn.execute(scratch.BEGIN)
        with paused_gc():
            merged = heapq.merge(*(w.changes() for w in running), key=lambda c: c[:3])
            _fold_groups(conn, merged, batch)
        counts = {w.count for w in running}
        if counts != {size}:
            raise LogError(f"the log holds {min(counts)} entries, not {size}")
        RowStore(conn).set_state(size, FORMAT)
        conn.execute(scratch.COMMIT)
    return [*paths, groups]


if __name__ == "__main__":
    from projections import shards

    _log, _size, _shard, _workers, _out, _batch = sys.argv[1:7]
    shards._serve(_log, int(_size), int(_shard), int(_workers), _out, int(_batch))
