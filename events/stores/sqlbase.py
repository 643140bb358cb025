"""What every SQL store of the log does alike: the append transaction, the batch written with
its tree nodes, projections and checkpoint, and mirrored leaves taken in (``events.port``).

``SqlLog`` runs on a session of either store (``events.port.Session``: SQLite's,
``events.stores.sqlite_session``, or PostgreSQL's, ``events.stores.pgsql``), sending the
statements below in the SQL both speak. Each adapter says how it takes the writers' lock,
begins, commits and names its storage faults.
"""

from __future__ import annotations

import base64
import contextlib
import gc
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any

from events.bulk import paused_gc
from events.checkpoints import checkpoint_body
from events.entries import Pending, StoredEntry, encode_leaf, format_instant, payload_digest
from events.errors import LogError
from events.merkle import leaf_hash
from events.mirroring import MirrorCheck, MirrorRow, check_mirrored, check_note_names
from events.port import (
    Appended,
    ChunkSigner,
    LeafCheck,
    Mirrored,
    NoteSigner,
    Projector,
    SignedCheckpoint,
)
from events.statements import Statement, sql
from events.stores.sqlite_reads import SqliteReads
from events.stores.sqlite_schema import node_id
from events.tiles import MAX_LEAF, LeafTooLarge

__all__ = ["CHUNK", "SqlLog"]

CHUNK = 1024

_INSERT_ENTRY = sql(
    "INSERT INTO entries (seq, recorded_at, type, subject, payload_digest, leaf_hash, leaf)"
    " VALUES (?, ?, ?, ?, ?, ?, ?)"
)
_INSERT_NODE = sql("INSERT INTO tree_nodes (id, hash) VALUES (?, ?)")
_INSERT_CHECKPOINT = sql(
    "INSERT INTO checkpoints (size, root, signed_at, note) VALUES (?, ?, ?, ?)"
    " ON CONFLICT DO NOTHING"
)
_INSERT_COSIGNATURE = sql(
    "INSERT INTO cosignatures (size, witness, key_id, line) VALUES (?, ?, ?, ?)"
    " ON CONFLICT DO NOTHING"
)
ROLLBACK = sql("ROLLBACK")
COMMIT = sql("COMMIT")


def _signer_of(line: str) -> tuple[str, bytes]:
    """The (name, key ID) of a note signature line.

    Raises:
        LogError: not a signature line.
    """
    name, _, sig64 = line.removeprefix("\u2014 ").partition(" ")
    try:
        raw = base64.b64decode(sig64, validate=True)
    except ValueError:
        raw = b""
    if not line.startswith("\u2014 ") or not name or len(raw) < 5:
        raise LogError("not a note signature line")
    return name, raw[:4]


def _too_large(type_: str, subject: str, size: int) -> LeafTooLarge:
    """The refusal of an entry whose leaf an entry bundle cannot hold (C2SP tlog-tiles: each
    leaf is prefixed with its length in 16 bits)."""
    return LeafTooLarge(
        f"the entry {type_} {subject} is {size:,} bytes, over the log's limit of {MAX_LEAF:,} "
        "bytes per entry (an entry bundle's 16-bit length): nothing of the batch was appended",
        entryType=type_,
        subject=subject,
        size=size,
        limit=MAX_LEAF,
    )


class SqlLog(SqliteReads):
    """The writes of the log port on one SQL session (``self._conn``); reads are
    ``SqliteReads``'. Writes serialise on a lock; open another handle for concurrent reads."""

    SNAPSHOT: Statement = sql(sqlite="BEGIN")
    """The statement that begins a read snapshot (SQLite's deferred ``BEGIN`` starts it at the
    first read)."""

    def __init__(self, conn: Any, origin: str, *, readonly: bool = False) -> None:
        super().__init__(conn, origin, memo=readonly)
        self.readonly = readonly
        self._depth = 0
        self._doomed = False
        self._due: tuple[NoteSigner, datetime] | None = None  # a checkpoint to sign at commit
        self.on_rollback: list[Callable[[], None]] = []  # told when a transaction is undone
        # Inside a write transaction, under the writers' lock, only this handle appends: the
        # stored size and the last recording time are read once and then followed, not asked
        # again at every check (one round trip each on PostgreSQL). Forgotten when it ends.
        self._held_size: int | None = None
        self._held_recorded: str | None = None

    @property
    def session(self) -> Any:
        """The writer's connection: the projections read and write through it (in a batch, in
        the log's own transaction)."""
        return self._conn

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Any]:
        with self._faults(), self._transaction() as session:
            yield session

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[Any]:
        with self._lock:
            if self._depth:
                yield from self._inner()
                return
            if self.readonly:
                raise LogError("this handle on the log is read-only")
            self._start()
            self._depth, self._doomed = 1, False
            committed = False
            try:
                yield self._conn
                if self._doomed:
                    raise LogError(
                        "a block inside this transaction failed: nothing of it is committed"
                    )
                if self._due is not None:  # one checkpoint covers every append of the block
                    self._sign_checkpoint(*self._due)
                self._commit()
                committed = True
            finally:
                self._depth, self._due = 0, None
                self._held_size = self._held_recorded = None
                if not committed:
                    # Whatever failed (the block, or COMMIT itself: the database may keep the
                    # transaction open then), nothing of it stays, and the edge is re-read.
                    try:
                        if self._conn.in_transaction:
                            self._conn.execute(ROLLBACK)
                    finally:
                        self._loaded = None
                        self._release()
                        for hook in self.on_rollback:  # e.g. caches of what was folded
                            hook()
                else:
                    self._release()

    # --- what each database does its own way ---------------------------------------------------

    def _faults(self) -> AbstractContextManager[None]:
        """Turns the database's errors of storage into ``StorageFault``s."""
        raise NotImplementedError

    def _start(self) -> None:
        """Take the writers' lock and begin a write transaction (nothing held if it raises)."""
        raise NotImplementedError

    def _commit(self) -> None:
        """Commit the write transaction (durably)."""
        raise NotImplementedError

    def _release(self) -> None:
        """Let the next writer in (after a commit or a rollback)."""
        raise NotImplementedError

    def _inner(self) -> Iterator[Any]:
        """A block inside an open transaction: if it raises, the whole transaction is doomed
        (rolled back when it ends, even if the caller caught the error meanwhile)."""
        self._depth += 1
        try:
            yield self._conn
        except BaseException:
            self._doomed = True
            raise
        finally:
            self._depth -= 1

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[Any]:
        with self._lock:
            self._conn.execute(self.SNAPSHOT)
            try:
                yield self._conn
            finally:
                self._conn.execute(COMMIT)

    def close(self) -> None:
        """Close the handle (each adapter lets go of what it holds)."""
        raise NotImplementedError

    def has(self, name: str) -> bool:
        """Whether the database holds a table or an index of that name."""
        raise NotImplementedError

    # --- appending ---------------------------------------------------------------------------

    def append(
        self,
        pending: Sequence[Pending],
        *,
        sign: ChunkSigner,
        sign_checkpoint: NoteSigner,
        now: datetime,
        project: Projector[Any] | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> list[Appended]:
        if any(not p.signer for p in pending):
            raise LogError("every pending event must name the key that signs it (Pending.signer)")
        digests = [payload_digest(p.payload, p.payload_type, p.signer) for p in pending]
        with paused_gc(), self.transaction():
            # Look for what the log holds under the write lock, once: no other writer can slip
            # an entry in between the look and the write.
            known = self.find(digests)
            first: dict[str, int] = {}
            for i, d in enumerate(digests):
                if d not in known and d not in first:
                    first[d] = i
            appended: set[str] = set()
            if first:
                todo = list(first.values())
                items = [pending[i] for i in todo]
                appended = self._write(
                    items, [digests[i] for i in todo], sign, now, project, known, progress
                )
                if appended:  # signed when the outermost transaction commits
                    self._due = (sign_checkpoint, now)
        return [
            Appended(known[d], d in appended and first.get(d) == i, d)
            for i, d in enumerate(digests)
        ]

    def _write(
        self,
        items: list[Pending],
        digests: list[str],
        sign: ChunkSigner,
        now: datetime,
        project: Projector[Any] | None,
        known: dict[str, int],
        progress: Callable[[int], None] | None = None,
    ) -> set[str]:
        """Write the batch inside the caller's transaction; fill ``known`` with every position;
        return the digests appended."""
        if self._stored_size() != self._edge.size:
            self._edge = self._load_edge()
        recorded_at = max(format_instant(now), self._last_recorded())
        keep = list(zip(items, digests, strict=True))
        chunks = [keep[i : i + CHUNK] for i in range(0, len(keep), CHUNK)]
        to_sign = [[item for item, _ in chunk if item.envelope is None] for chunk in chunks]
        edge, appended = self._edge, set[str]()
        for chunk, envelopes in zip(chunks, sign(to_sign), strict=True):
            signed = iter(envelopes)
            rows, nodes, stored = [], [], []
            for item, digest in chunk:
                envelope = item.envelope if item.envelope is not None else next(signed)
                seq = edge.size
                leaf = encode_leaf(seq, recorded_at, item.type, item.subject, envelope)
                if len(leaf) > MAX_LEAF:
                    raise _too_large(item.type, item.subject, len(leaf))
                lh = leaf_hash(leaf)
                for level, index, h in edge.append(lh):
                    if level:
                        nodes.append((node_id(level, index), h))
                rows.append((seq, recorded_at, item.type, item.subject, digest, lh, leaf))
                known[digest] = seq
                stored.append(
                    StoredEntry(
                        seq,
                        recorded_at,
                        item.type,
                        item.subject,
                        item.payload_type,
                        item.payload,
                        digest,
                        item.signer,
                        item.decoded,
                    )
                )
            self._insert(rows, nodes)
            if project is not None:
                project(self._conn, stored)
            appended.update(e.payload_digest for e in stored)
            if progress is not None:
                progress(len(chunk))
        self._held_size, self._held_recorded = edge.size, recorded_at
        return appended

    def _insert(
        self, rows: Sequence[tuple[object, ...]], nodes: Sequence[tuple[int, bytes]]
    ) -> None:
        self._held_size = self._held_recorded = None  # asked again after a write
        self._conn.executemany(_INSERT_ENTRY, rows)
        self._conn.executemany(_INSERT_NODE, nodes)

    def _stored_size(self) -> int:
        if self._depth and self._held_size is not None:
            return self._held_size
        size = super()._stored_size()
        if self._depth:
            self._held_size = size
        return size

    def _last_recorded(self) -> str:
        if self._depth and self._held_recorded is not None:
            return self._held_recorded
        recorded = super()._last_recorded()
        if self._depth:
            self._held_recorded = recorded
        return recorded

    def _sign_checkpoint(self, sign_checkpoint: NoteSigner, now: datetime) -> None:
        """Sign and store a checkpoint of the current edge, inside the caller's transaction."""
        root = self._edge.root()
        note = sign_checkpoint(checkpoint_body(self.origin, self._edge.size, root))
        signed_at = max(format_instant(now), self._last_recorded())
        self._store_checkpoint(SignedCheckpoint(self._edge.size, note, root, signed_at))

    def _store_checkpoint(self, checkpoint: SignedCheckpoint) -> None:
        self._conn.execute(
            _INSERT_CHECKPOINT,
            (checkpoint.size, checkpoint.root, checkpoint.signed_at, checkpoint.note),
        )

    def append_leaves(
        self,
        start: int,
        leaves: Sequence[bytes],
        checkpoint: SignedCheckpoint,
        *,
        check: LeafCheck | None = None,
        project: Projector[Any] | None = None,
    ) -> Mirrored:
        with paused_gc(), self.transaction():
            self.refresh()
            end = min(self._edge.size, start + len(leaves))
            held = [leaf for _, leaf in self.leaves(start, end)]
            check_note_names(checkpoint, self.origin)
            for seq in range(max(end, start), start + len(leaves)):  # the ones it lacks
                if len(leaves[seq - start]) > MAX_LEAF:
                    raise _too_large("mirrored", f"at {seq}", len(leaves[seq - start]))
            rows, edge, nodes = check_mirrored(
                self._edge, self._last_recorded(), start, leaves, held, checkpoint, self.find
            )
            entries = [r.entry for r in rows]
            if check is not None:
                check(entries)
            self._insert_mirrored(rows, nodes)
            self._edge = edge
            if project is not None and entries:
                project(self._conn, entries)
            self._store_checkpoint(checkpoint)
        return Mirrored(len(rows), self._edge.size)

    def _insert_mirrored(
        self, rows: Sequence[MirrorRow], nodes: Sequence[tuple[int, int, bytes]]
    ) -> None:
        self._insert(
            [
                (e.seq, e.recordedAt, e.type, e.subject, e.payload_digest, lh, leaf)
                for e, lh, leaf in rows
            ],
            [(node_id(level, index), h) for level, index, h in nodes],
        )

    def append_leaf_pieces(
        self,
        start: int,
        pieces: Iterable[Sequence[bytes]],
        checkpoint: SignedCheckpoint,
    ) -> Mirrored:
        with paused_gc(), self.transaction():
            size = self.refresh()
            if start != size:
                raise LogError(
                    f"the log holds {size} entries: pieces of leaves must start there, not at {start}"
                )
            check_note_names(checkpoint, self.origin)
            check = MirrorCheck(self._edge, self._last_recorded(), self.find)
            taken = 0
            for leaves in pieces:
                for i, leaf in enumerate(leaves):
                    if len(leaf) > MAX_LEAF:
                        raise _too_large("mirrored", f"at {start + taken + i}", len(leaf))
                rows, nodes = check.take(leaves)
                self._insert_mirrored(rows, nodes)
                taken += len(rows)
                del rows, nodes, leaves
                gc.collect(1)  # the collector is paused: a piece's cyclic garbage goes here
            self._edge = check.finish(checkpoint)
            self._store_checkpoint(checkpoint)
        return Mirrored(taken, self._edge.size)

    def add_cosignatures(self, size: int, lines: Sequence[str]) -> bytes | None:
        """Add witnesses' cosignature lines (``— name base64...``, verified by the caller) to
        the stored checkpoint of ``size``: one line per (name, key ID), the first kept, so that
        a checkpoint gains a witness once. Returns the note as stored after (None: no
        checkpoint of that size). Every reader of the note (``/checkpoint``, receipts,
        mirrors, exports) then holds the cosignatures.

        Raises:
            LogError: a line that is not a note signature line.
        """
        rows = []
        for line in lines:
            text = line.rstrip("\n")
            name, key_id = _signer_of(text)
            rows.append((size, name, key_id, text))
        with self.transaction() as conn:
            if self.checkpoint(size) is None:
                return None
            for row in rows:
                conn.execute(_INSERT_COSIGNATURE, row)
        stored = self.checkpoint(size)
        return None if stored is None else stored.note

    def publish_checkpoint(self, sign_checkpoint: NoteSigner, now: datetime) -> SignedCheckpoint:
        with self.transaction():
            size = self.refresh()
            latest = self.latest_checkpoint()
            if latest is None or latest.size != size:
                self._sign_checkpoint(sign_checkpoint, now)
                latest = self.latest_checkpoint()
        assert latest is not None  # noqa: S101 - just written
        return latest
