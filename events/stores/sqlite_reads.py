"""Reads of the log on one session: the tree, the entries and the checkpoints
(``events.port.LogReader``), in the SQL both stores speak. ``events.stores.sqlbase.SqlLog``
adds the writes; each adapter says how a read's errors are told (``_reading``)."""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from typing import Any

from events.errors import LogCorrupted, LogError
from events.merkle import EMPTY_ROOT, CompactRange, consistency_proof, inclusion_proof, subtree_hash
from events.port import EntryHeader, EntryRow, SignedCheckpoint
from events.statements import sql
from events.stores.faults import StatementFailed, StorageBusy, StorageFault, storage_fault
from events.stores.sqlite_schema import node_id

__all__ = ["SqliteReads"]

_CHECKPOINT = "SELECT size, note, root, signed_at FROM checkpoints"
_HEADER = "SELECT seq, type, subject, recorded_at FROM entries"
_MEMO_FROM = 4  # a node of level 4 covers 16 leaves
_MEMO_NODES = 1 << 14  # at most about 3 MiB per read-only handle (a million-entry log has 62,500)

_SIZE = sql("SELECT max(seq) FROM entries")
_LEAF_HASH = sql("SELECT leaf_hash FROM entries WHERE seq = ?")
_NODE = sql("SELECT hash FROM tree_nodes WHERE id = ?")
_LEAF_HASHES = sql("SELECT leaf_hash FROM entries WHERE seq >= ? AND seq < ? ORDER BY seq")
_NODES_IN = sql("SELECT hash FROM tree_nodes WHERE id >= ? AND id < ? ORDER BY id")
_NODES = sql("SELECT id, hash FROM tree_nodes")
LEAVES = sql("SELECT seq, leaf FROM entries WHERE seq >= ? AND seq < ? ORDER BY seq")
_LEAF = sql("SELECT leaf FROM entries WHERE seq = ?")
ROWS = sql(
    "SELECT seq, recorded_at, type, subject, payload_digest, leaf_hash, leaf"
    " FROM entries WHERE seq >= ? AND seq < ? ORDER BY seq"
)
HEADERS = sql(f"{_HEADER} WHERE seq >= ? AND seq < ? ORDER BY seq")
_HEADERS_AT = sql(f"{_HEADER} WHERE seq IN ({{marks}})")
# The leaf of a run's entry (run.*, rerun.*) only for the shard of its run.
_SHARD_ROWS = sql(
    sqlite="""SELECT seq, type, subject,
    CASE WHEN (substr(type, 1, 4) = 'run.' OR substr(type, 1, 6) = 'rerun.')
        AND coalesce(unicode(substr(subject, -1)), 0) % ? != ?
    THEN NULL ELSE leaf END
    FROM entries WHERE seq < ? ORDER BY seq"""
)
_LATEST = sql(f"{_CHECKPOINT} ORDER BY size DESC LIMIT 1")
_CHECKPOINT_OF = sql(f"{_CHECKPOINT} WHERE size = ?")
_AT_OR_BELOW = sql(f"{_CHECKPOINT} WHERE size <= ? ORDER BY size DESC LIMIT 1")
_AT_INSTANT = sql(f"{_CHECKPOINT} WHERE signed_at <= ? ORDER BY size DESC LIMIT 1")
_CHECKPOINTS = sql(f"{_CHECKPOINT} ORDER BY size")
_COSIGNED = sql("SELECT line FROM cosignatures WHERE size = ? ORDER BY witness, key_id")
_RECORDED_AT = sql("SELECT recorded_at FROM entries WHERE seq = ?")
_FIND = sql("SELECT payload_digest, seq FROM entries WHERE payload_digest IN ({marks})")
_LAST_RECORDED = sql("SELECT recorded_at FROM entries ORDER BY seq DESC LIMIT 1")


@contextlib.contextmanager
def _reading() -> Iterator[None]:
    """A damaged database file is the log's fault, said in the port's terms (LogCorrupted); a
    database locked too long is not (``StorageBusy``: try again)."""
    try:
        yield
    except (StorageFault, StatementFailed) as exc:
        cause = exc.__cause__
        if not isinstance(cause, sqlite3.DatabaseError):
            raise
        fault = storage_fault(cause, None)
        if isinstance(fault, StorageBusy):
            raise fault from None
        raise LogCorrupted(f"the database cannot be read: {cause}") from None


def _checkpoint(row: tuple[int, bytes, bytes, str] | None) -> SignedCheckpoint | None:
    return (
        None if row is None else SignedCheckpoint(int(row[0]), bytes(row[1]), bytes(row[2]), row[3])
    )


class SqliteReads:
    """Every read of the log port on one session. Not safe to share across threads for
    writes; the tree's right edge is loaded on first use (a verifier that reads a damaged log
    row by row never needs it), cached, and reloaded when the log grew elsewhere."""

    def __init__(self, conn: Any, origin: str, *, memo: bool = False) -> None:
        self._conn = conn
        self._origin = origin
        self._lock = threading.RLock()
        self._loaded: CompactRange | None = None
        # Tree nodes of level ``_MEMO_FROM`` and up, by (level, index): a read-only handle sees
        # committed nodes only, and a committed node never changes, so the high nodes that
        # every proof and every edge reload needs are read once (the low ones, seldom read
        # twice, are not kept). A writer's handle may read nodes that a rollback takes back:
        # it keeps none.
        self._memo: dict[tuple[int, int], bytes] | None = {} if memo else None

    def _reading(self) -> contextlib.AbstractContextManager[None]:
        """The block's database errors in the port's terms (``LogCorrupted``, ``StorageBusy``)."""
        return _reading()

    @property
    def _edge(self) -> CompactRange:
        if self._loaded is None:
            self._loaded = self._load_edge()
        return self._loaded

    @_edge.setter
    def _edge(self, edge: CompactRange) -> None:
        self._loaded = edge

    @property
    def origin(self) -> str:
        return self._origin

    # --- the tree ----------------------------------------------------------------------------

    def _stored_size(self) -> int:
        row = self._conn.execute(_SIZE).fetchone()
        return 0 if row[0] is None else int(row[0]) + 1

    def _load_edge(self) -> CompactRange:
        return CompactRange.load(self._stored_size(), self.read_node)

    def read_node(self, level: int, index: int) -> bytes:
        memo = self._memo
        if memo is None or level < _MEMO_FROM:
            return self._read_node(level, index)
        node = memo.get((level, index))
        if node is None:
            if len(memo) >= _MEMO_NODES:
                memo.clear()
            node = memo[level, index] = self._read_node(level, index)
        return node

    def _read_node(self, level: int, index: int) -> bytes:
        if level == 0:
            row = self._conn.execute(_LEAF_HASH, (index,)).fetchone()
        else:
            row = self._conn.execute(_NODE, (node_id(level, index),)).fetchone()
        if row is None:
            raise LogError(f"tree node ({level}, {index}) is not stored")
        return bytes(row[0])

    def node_range(self, level: int, start: int, end: int) -> list[bytes]:
        with self._reading():
            if level == 0:
                rows = self._conn.execute(_LEAF_HASHES, (start, end)).fetchall()
            else:
                rows = self._conn.execute(
                    _NODES_IN, (node_id(level, start), node_id(level, end))
                ).fetchall()
        if len(rows) != end - start:
            raise LogError(f"tree nodes ({level}, {start}..{end}) are not all stored")
        return [bytes(r[0]) for r in rows]

    def nodes(self) -> Iterator[tuple[int, int, bytes]]:
        with self._reading():
            for key, h in self._conn.execute(_NODES):
                yield int(key) >> 40, int(key) & ((1 << 40) - 1), bytes(h)

    @property
    def size(self) -> int:
        return self._edge.size

    def refresh(self) -> int:
        with self._lock:
            if self._stored_size() != self._edge.size:
                self._edge = self._load_edge()
            return self._edge.size

    def root(self, size: int | None = None) -> bytes:
        if size is None or size == self._edge.size:
            return self._edge.root()
        self._check_size(size)
        return subtree_hash(0, size, self.read_node) if size else EMPTY_ROOT

    def _check_size(self, size: int) -> None:
        current = self.refresh()
        if not 0 <= size <= current:
            raise LogError(f"the log has {current} entries, not {size}", size=size)

    def inclusion_proof(self, index: int, size: int) -> list[bytes]:
        self._check_size(size)
        return inclusion_proof(index, size, self.read_node)

    def consistency_proof(self, old: int, new: int) -> list[bytes]:
        self._check_size(new)
        return consistency_proof(old, new, self.read_node)

    # --- reading entries ---------------------------------------------------------------------

    def leaves(self, start: int = 0, end: int | None = None) -> Iterator[tuple[int, bytes]]:
        with self._reading():
            stop = self._stored_size() if end is None else end
            cursor = self._conn.execute(LEAVES, (start, stop))
            for seq, leaf in cursor:
                yield seq, bytes(leaf)

    def leaf(self, seq: int) -> bytes | None:
        row = self._conn.execute(_LEAF, (seq,)).fetchone()
        return None if row is None else bytes(row[0])

    def rows(self, start: int = 0, end: int | None = None) -> Iterator[EntryRow]:
        stop = 2**62 if end is None else end
        with self._reading():
            for row in self._conn.execute(ROWS, (start, stop)):
                seq, at, type_, subject, digest, lh, leaf = row
                yield EntryRow(int(seq), at, type_, subject, digest, bytes(lh), bytes(leaf))

    def headers(self, start: int = 0, end: int | None = None) -> Iterator[EntryHeader]:
        stop = 2**62 if end is None else end
        for row in self._conn.execute(HEADERS, (start, stop)):
            yield EntryHeader(*row)

    def headers_at(self, positions: Sequence[int]) -> dict[int, EntryHeader]:
        out: dict[int, EntryHeader] = {}
        for i in range(0, len(positions), 500):
            chunk = list(positions[i : i + 500])
            for row in self._conn.execute(_HEADERS_AT.marks(len(chunk)), chunk):
                out[int(row[0])] = EntryHeader(*row)
        return out

    def shard_rows(
        self, size: int, shard: int, workers: int
    ) -> Iterator[tuple[int, str, str, bytes | None]]:
        """``(seq, type, subject, leaf)`` of the first ``size`` entries, for one shard of a
        parallel rebuild (``projections.shards``): the leaf of an entry whose subject is a run
        (``run.*``, ``rerun.*``) is read only by the shard of that run (the last character's code
        point modulo ``workers``), and is None for the others. SQLite skips those blobs."""
        yield from self._conn.execute(_SHARD_ROWS, (workers, shard, size))

    def latest_checkpoint(self) -> SignedCheckpoint | None:
        return self._cosigned(_checkpoint(self._conn.execute(_LATEST).fetchone()))

    def checkpoint(self, size: int) -> SignedCheckpoint | None:
        return self._cosigned(_checkpoint(self._conn.execute(_CHECKPOINT_OF, (size,)).fetchone()))

    def checkpoint_at_or_below(self, size: int) -> SignedCheckpoint | None:
        return self._cosigned(_checkpoint(self._conn.execute(_AT_OR_BELOW, (size,)).fetchone()))

    def checkpoint_at_instant(self, instant: str) -> SignedCheckpoint | None:
        return self._cosigned(_checkpoint(self._conn.execute(_AT_INSTANT, (instant,)).fetchone()))

    def checkpoints(self) -> Iterator[SignedCheckpoint]:
        with self._reading():
            rows = self._conn.execute(_CHECKPOINTS).fetchall()
        for row in rows:
            checkpoint = self._cosigned(_checkpoint(row))
            assert checkpoint is not None  # noqa: S101 - a row was read
            yield checkpoint

    def _cosigned(self, checkpoint: SignedCheckpoint | None) -> SignedCheckpoint | None:
        """``checkpoint`` with the cosignature lines witnesses gave it (``cosignatures``: kept
        beside the append-only note, appended to it as it is read), by witness name."""
        if checkpoint is None:
            return None
        lines = self._conn.execute(_COSIGNED, (checkpoint.size,)).fetchall()
        if not lines:
            return checkpoint
        added = "".join(f"{line}\n" for (line,) in lines).encode()
        return checkpoint._replace(note=checkpoint.note + added)

    def size_at_instant(self, instant: str) -> int:
        conn = self._conn
        row = conn.execute(_SIZE).fetchone()
        lo, hi = 0, 0 if row[0] is None else int(row[0]) + 1
        while lo < hi:
            mid = (lo + hi) // 2
            (at,) = conn.execute(_RECORDED_AT, (mid,)).fetchone()
            if at <= instant:
                lo = mid + 1
            else:
                hi = mid
        return lo

    def find(self, digests: Sequence[str]) -> dict[str, int]:
        found: dict[str, int] = {}
        for i in range(0, len(digests), 500):
            chunk = list(digests[i : i + 500])
            for digest, seq in self._conn.execute(_FIND.marks(len(chunk)), chunk):
                found[digest] = int(seq)
        return found

    def _last_recorded(self) -> str:
        last = self._conn.execute(_LAST_RECORDED).fetchone()
        return str(last[0]) if last else ""
