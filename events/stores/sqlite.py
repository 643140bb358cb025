"""The log port on one SQLite database (WAL): the embedded default store.

One writer appends (a process lock plus ``BEGIN IMMEDIATE`` across processes); a batch commits
in one transaction with its tree nodes, checkpoint and the projections it touches (the
projections share the database and its transaction: the session is the writer's connection),
so a crash leaves all of it or none. Tables: ``events.stores.sqlite_schema``.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from events.bulk import paused_gc
from events.checkpoints import checkpoint_body
from events.entries import Pending, StoredEntry, encode_leaf, format_instant, payload_digest
from events.errors import LogError
from events.merkle import (
    leaf_hash,
)
from events.mirroring import check_mirrored, check_note_names
from events.port import (
    Appended,
    ChunkSigner,
    LeafCheck,
    LogStore,
    Mirrored,
    NoteSigner,
    Projector,
    SignedCheckpoint,
)
from events.stores.faults import StorageDamaged, storage_fault, storage_faults
from events.stores.sqlite_reads import SqliteReads
from events.stores.sqlite_schema import (
    SCHEMA_VERSION,
    Checkpointer,
    WriterLock,
    connect,
    connect_readonly,
    create_tables,
    node_id,
)
from events.tiles import MAX_LEAF, LeafTooLarge

__all__ = [
    "CHUNK",
    "COMMITTED_SUFFIX",
    "SqliteLog",
    "committed_path",
    "read_committed",
    "write_committed",
]

CHUNK = 1024

BUSY_WAIT = 5.0
"""Seconds a writer tries again to begin while SQLite answers busy without waiting."""
_SQLITE_BUSY = 5  # its primary result code (the extended ones share the low byte)

COMMITTED_SUFFIX = "-committed"
"""Beside the database, ``<db>-committed`` holds the log size the last commit reached (written
after each commit that grew the log, under the writers' lock; sizes only grow). A database
that holds fewer entries than that lost committed ones (the file or its ``-wal`` was truncated,
or an older copy was put in its place): a writer refuses to open it."""


def committed_path(db: Path) -> Path:
    """The file that holds the size the last commit of the log at ``db`` reached."""
    return db.with_name(db.name + COMMITTED_SUFFIX)


def write_committed(db: Path, size: int) -> None:
    """Record ``size`` as the size the log at ``db`` reached (a backup's copy, a restore)."""
    mark = committed_path(db)
    tmp = mark.with_name(mark.name + ".tmp")
    tmp.write_text(f"{size}\n", encoding="ascii")
    os.replace(tmp, mark)  # never an empty mark, which would turn the check off


def read_committed(db: Path) -> int | None:
    """The size the last commit of the log at ``db`` reached, if marked."""
    try:
        text = committed_path(db).read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return int(text) if text.isdigit() else None


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


class SqliteLog(SqliteReads):
    """The append-only log in one SQLite file (``events.port.LogStore[sqlite3.Connection]``).
    Writes serialise on a lock; open another handle (``open_readonly``) for concurrent reads."""

    def __init__(
        self, path: Path, conn: sqlite3.Connection, origin: str, *, readonly: bool = False
    ) -> None:
        super().__init__(conn, origin, memo=readonly)
        self.path = path
        self._depth = 0
        self._doomed = False
        self._due: tuple[NoteSigner, datetime] | None = None  # a checkpoint to sign at commit
        self._checkpointer = None if readonly else Checkpointer(path)
        self._writers = None if readonly else WriterLock(path)
        self.on_rollback: list[Callable[[], None]] = []  # told when a transaction is undone
        self._committed = -1  # the size last written to ``<db>-committed``
        self._committed_fd: int | None = None

    # --- opening -----------------------------------------------------------------------------

    @classmethod
    def open(cls, path: Path, *, origin: str | None = None, create: bool = False) -> SqliteLog:
        """Open (or, with ``create``, create) the log database at ``path``.

        Raises:
            LogError: the file does not exist and ``create`` is false, or its origin differs
                from ``origin``, or its schema is newer than this code.
        """
        if not create and not path.exists():
            raise LogError(f"no log at {path} (run `benchproof init`)")
        with storage_faults(path):
            conn = connect(path)
            log: SqliteLog | None = None
            try:
                log = cls._opened(path, conn, origin)
                log._check_committed()
            except BaseException:
                if log is not None:
                    log.close()
                conn.close()
                raise
        return log

    @classmethod
    def _opened(cls, path: Path, conn: sqlite3.Connection, origin: str | None) -> SqliteLog:
        create_tables(conn)
        # Imported here: a read-only handle (a rebuild worker's) does not pay for its import.
        import sqlite_utils

        db = sqlite_utils.Database(conn)
        meta = {row[0]: row[1] for row in db.execute("SELECT key, value FROM meta")}
        if "schema" in meta and int(meta["schema"]) > SCHEMA_VERSION:
            raise LogError(f"{path}: schema {meta['schema']} is newer than this code understands")
        stored = meta.get("origin")
        if stored is None:
            if origin is None:
                raise LogError(f"{path}: the log has no origin yet")
            with conn:
                db.table("meta").insert_all(
                    [
                        {"key": "origin", "value": origin},
                        {"key": "schema", "value": str(SCHEMA_VERSION)},
                    ],
                    replace=True,
                )
            stored = origin
        elif origin is not None and origin != stored:
            raise LogError(f"{path}: the log's origin is {stored!r}, not {origin!r}")
        return cls(path, conn, stored)

    @classmethod
    def open_readonly(cls, path: Path) -> SqliteLog:
        """A read-only handle on the log at ``path`` (it changes nothing, not even the WAL's
        checkpointing).

        Raises:
            LogError: there is no log there.
        """
        if not path.exists():
            raise LogError(f"no log at {path}")
        conn: sqlite3.Connection | None = None
        try:
            conn = connect_readonly(path)
            row = conn.execute("SELECT value FROM meta WHERE key = 'origin'").fetchone()
        except sqlite3.DatabaseError as exc:
            if conn is not None:
                conn.close()
            fault = storage_fault(exc, path)
            if isinstance(fault, StorageDamaged) or fault is None:
                detail = f"{path}: the database cannot be read: {exc}"
                raise StorageDamaged(detail, path=str(path), reason=str(exc)) from None
            raise fault from None
        return cls(path, conn, "" if row is None else str(row[0]), readonly=True)

    def _check_committed(self) -> None:
        """Refuse a database that holds fewer entries than its commits reached (``-committed``).

        Raises:
            StorageDamaged: it does; the file or its ``-wal`` lost committed entries.
        """
        committed = read_committed(self.path)
        self._committed = committed if committed is not None else -1
        if committed is None:
            return
        size = self.refresh()
        if size < committed:
            mark = committed_path(self.path)
            raise StorageDamaged(
                f"{self.path} holds {size} entries, but its commits reached {committed} "
                f"({mark.name}): the database or its -wal file was truncated or replaced by an "
                f"older copy. Restore it from a backup; to accept the shorter log, remove {mark}",
                path=str(self.path),
                size=size,
                committed=committed,
            )

    def _mark_committed(self) -> None:
        """Record the size this commit reached (no fsync: it guards against a damaged or
        replaced file, and it only ever follows a commit, so it never runs ahead of it)."""
        size = self._edge.size
        if size <= self._committed:
            return
        try:
            if self._committed_fd is None:
                self._committed_fd = os.open(
                    committed_path(self.path), os.O_WRONLY | os.O_CREAT, 0o644
                )
            os.pwrite(self._committed_fd, f"{size}\n".encode(), 0)
        except OSError:
            return  # the commit stands; the mark is written by the next one
        self._committed = size

    def close(self) -> None:
        if self._checkpointer is not None:
            self._checkpointer.stop()
        if self._writers is not None:
            self._writers.close()
        if self._committed_fd is not None:
            os.close(self._committed_fd)
            self._committed_fd = None
        self._conn.close()

    @property
    def session(self) -> sqlite3.Connection:
        """The writer's connection: the projections read and write through it (in a batch, in
        the log's own transaction)."""
        return self._conn

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        with storage_faults(self.path), self._transaction() as conn:
            yield conn

    def _begin(self) -> None:
        """``BEGIN IMMEDIATE``, again after a pause while SQLite answers busy without waiting,
        for ``BUSY_WAIT`` seconds at most. It skips its busy handler (waiting could deadlock)
        when this connection has a read open, from another thread, while another connection
        (the key challenges', a replay's) holds the database's write lock; nothing is begun
        then, and the other's write ends soon."""
        deadline = time.monotonic() + BUSY_WAIT
        pause = 0.001
        while True:
            try:
                self._conn.execute("BEGIN IMMEDIATE")
                return
            except sqlite3.OperationalError as exc:
                code = getattr(exc, "sqlite_errorcode", 0)
                if code & 0xFF != _SQLITE_BUSY or time.monotonic() + pause > deadline:
                    raise
            time.sleep(pause)
            pause = min(pause * 2, 0.05)

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            if self._depth:
                yield from self._inner()
                return
            writers = self._writers
            if writers is None:
                raise LogError("this handle on the log is read-only")
            writers.acquire()
            try:
                self._begin()
            except BaseException:
                writers.release()
                raise
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
                self._conn.execute("COMMIT")
                committed = True
                self._mark_committed()
            finally:
                self._depth, self._due = 0, None
                if not committed:
                    # Whatever failed (the block, or COMMIT itself: SQLite may keep the
                    # transaction open then), nothing of it stays, and the edge is re-read.
                    try:
                        if self._conn.in_transaction:
                            self._conn.execute("ROLLBACK")
                    finally:
                        self._loaded = None
                        writers.release()
                        for hook in self.on_rollback:  # e.g. caches of what was folded
                            hook()
                else:
                    writers.release()

    def _inner(self) -> Iterator[sqlite3.Connection]:
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
    def snapshot(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._conn.execute("BEGIN")  # deferred: the snapshot starts at the first read
            try:
                yield self._conn
            finally:
                self._conn.execute("COMMIT")

    # --- appending ---------------------------------------------------------------------------

    def append(
        self,
        pending: Sequence[Pending],
        *,
        sign: ChunkSigner,
        sign_checkpoint: NoteSigner,
        now: datetime,
        project: Projector[sqlite3.Connection] | None = None,
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
        project: Projector[sqlite3.Connection] | None,
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
        return appended

    def _insert(
        self, rows: Sequence[tuple[object, ...]], nodes: Sequence[tuple[int, bytes]]
    ) -> None:
        self._conn.executemany(
            "INSERT INTO entries (seq, recorded_at, type, subject, payload_digest, leaf_hash, leaf)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            rows,
        )
        self._conn.executemany("INSERT INTO tree_nodes (id, hash) VALUES (?, ?)", nodes)

    def _sign_checkpoint(self, sign_checkpoint: NoteSigner, now: datetime) -> None:
        """Sign and store a checkpoint of the current edge, inside the caller's transaction."""
        root = self._edge.root()
        note = sign_checkpoint(checkpoint_body(self.origin, self._edge.size, root))
        signed_at = max(format_instant(now), self._last_recorded())
        self._store_checkpoint(SignedCheckpoint(self._edge.size, note, root, signed_at))

    def _store_checkpoint(self, checkpoint: SignedCheckpoint) -> None:
        self._conn.execute(
            "INSERT OR IGNORE INTO checkpoints (size, root, signed_at, note) VALUES (?, ?, ?, ?)",
            (checkpoint.size, checkpoint.root, checkpoint.signed_at, checkpoint.note),
        )

    def append_leaves(
        self,
        start: int,
        leaves: Sequence[bytes],
        checkpoint: SignedCheckpoint,
        *,
        check: LeafCheck | None = None,
        project: Projector[sqlite3.Connection] | None = None,
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
            self._insert(
                [
                    (e.seq, e.recordedAt, e.type, e.subject, e.payload_digest, r.leaf_hash, r.leaf)
                    for e, r in zip(entries, rows, strict=True)
                ],
                [(node_id(level, index), h) for level, index, h in nodes],
            )
            self._edge = edge
            if project is not None and entries:
                project(self._conn, entries)
            self._store_checkpoint(checkpoint)
        return Mirrored(len(rows), self._edge.size)

    def publish_checkpoint(self, sign_checkpoint: NoteSigner, now: datetime) -> SignedCheckpoint:
        with self.transaction():
            size = self.refresh()
            latest = self.latest_checkpoint()
            if latest is None or latest.size != size:
                self._sign_checkpoint(sign_checkpoint, now)
                latest = self.latest_checkpoint()
        assert latest is not None  # noqa: S101 - just written
        return latest


if TYPE_CHECKING:  # mypy proves that the adapter fulfils the port
    _PORT: type[LogStore[sqlite3.Connection]] = SqliteLog
