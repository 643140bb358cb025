"""The log store: an append-only SQLite database (WAL) of exact leaf bytes, the RFC 6962 tree
over them, and the signed checkpoints.

- ``entries`` holds each leaf as the exact bytes committed, its leaf hash and its payload's
  content digest (UNIQUE: appending the same statement twice returns the existing entry).
- ``tree_nodes`` holds every perfect subtree (level >= 1; level 0 is ``entries.leaf_hash``),
  grown incrementally from the tree's right edge.
- ``checkpoints`` holds the signed note of every size a batch committed; the latest always
  covers every committed entry, because it is written in the batch's own transaction.
- Triggers refuse UPDATE and DELETE on all three. One writer appends (a process lock plus
  ``BEGIN IMMEDIATE`` across processes); a batch commits in one transaction with its tree nodes,
  checkpoint and the projections it touches, so a crash leaves all of it or none.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path

import msgspec
import sqlite_utils

from events.bulk import paused_gc
from events.checkpoints import checkpoint_body
from events.entries import Pending, StoredEntry, encode_leaf, payload_digest
from events.errors import LogError
from events.merkle import (
    EMPTY_ROOT,
    CompactRange,
    consistency_proof,
    inclusion_proof,
    leaf_hash,
    subtree_hash,
)

__all__ = ["Appended", "LogStore", "format_instant", "node_id", "size_at_instant"]

SCHEMA_VERSION = 1

ChunkSigner = Callable[[list[list[Pending]]], Iterator[list[bytes]]]
"""Signs chunks of pendings and yields, chunk by chunk in order, their DSSE envelopes as JSON
bytes (signing may run ahead on other threads while the store writes earlier chunks)."""
CHUNK = 1024
NoteSigner = Callable[[str], bytes]
"""Signs a checkpoint body as a C2SP signed note and returns the note bytes."""
Projector = Callable[[sqlite3.Connection, Sequence[StoredEntry]], None]
"""Updates the projections with newly committed entries, inside the append transaction."""

_APPEND_ONLY = """
CREATE TRIGGER IF NOT EXISTS {table}_no_update BEFORE UPDATE ON {table}
BEGIN SELECT RAISE(ABORT, '{table} is append-only'); END;
CREATE TRIGGER IF NOT EXISTS {table}_no_delete BEFORE DELETE ON {table}
BEGIN SELECT RAISE(ABORT, '{table} is append-only'); END;
"""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS entries (
    seq INTEGER PRIMARY KEY,
    recorded_at TEXT NOT NULL,
    type TEXT NOT NULL,
    subject TEXT NOT NULL,
    payload_digest TEXT NOT NULL UNIQUE,
    leaf_hash BLOB NOT NULL,
    leaf BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS tree_nodes (
    id INTEGER PRIMARY KEY,  -- level << 40 | index: one integer key, no second index to keep
    hash BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS checkpoints (
    size INTEGER PRIMARY KEY,
    root BLOB NOT NULL,
    signed_at TEXT NOT NULL,
    note BLOB NOT NULL
);
"""


class _Checkpointer:
    """Moves committed WAL frames into the database file on its own thread and connection, so a
    commit pays only for its WAL write and fsync (the writer's connection has automatic
    checkpoints off). PASSIVE checkpoints never block the writer; the last one, at close,
    empties the WAL."""

    INTERVAL = 1.0

    def __init__(self, path: Path) -> None:
        self._path = path
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="wal-checkpoint", daemon=True)
        self._thread.start()

    def _checkpoint(self, mode: str) -> None:
        conn = sqlite3.connect(self._path, timeout=60)
        try:
            conn.execute(f"PRAGMA wal_checkpoint({mode})")
        finally:
            conn.close()

    def _run(self) -> None:
        while not self._stop.wait(self.INTERVAL):
            try:
                self._checkpoint("PASSIVE")
            except sqlite3.Error:
                continue  # busy or closing: the next round will do it

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        # Another process may hold the database; its own close will checkpoint then.
        with contextlib.suppress(sqlite3.Error):
            self._checkpoint("TRUNCATE")


def node_id(level: int, index: int) -> int:
    """The key of a perfect subtree in ``tree_nodes``: ``level << 40 | index``."""
    return level << 40 | index


def size_at_instant(conn: sqlite3.Connection, instant: str) -> int:
    """The tree size when the log had recorded everything up to ``instant``. Recording times
    never decrease along the log, so this is a binary search over positions."""
    row = conn.execute("SELECT max(seq) FROM entries").fetchone()
    lo, hi = 0, 0 if row[0] is None else int(row[0]) + 1
    while lo < hi:
        mid = (lo + hi) // 2
        (at,) = conn.execute("SELECT recorded_at FROM entries WHERE seq = ?", (mid,)).fetchone()
        if at <= instant:
            lo = mid + 1
        else:
            hi = mid
    return lo


def format_instant(when: datetime) -> str:
    """RFC 3339 UTC with milliseconds and ``Z``: the log's own recording time."""
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z"


class Appended(msgspec.Struct, frozen=True):
    """Where a pending event landed: its position, and whether this call appended it."""

    seq: int
    new: bool
    payloadDigest: str


class LogStore:
    """The append-only log in one SQLite file. Not thread-safe for writes except through
    ``append`` (which serialises on a lock); use ``reader()`` for concurrent reads."""

    def __init__(self, path: Path, conn: sqlite3.Connection, origin: str) -> None:
        self.path = path
        self.origin = origin
        self._conn = conn
        self._lock = threading.RLock()
        self._edge = self._load_edge()
        self._checkpointer = _Checkpointer(path)

    # --- opening -----------------------------------------------------------------------------

    @classmethod
    def open(cls, path: Path, *, origin: str | None = None, create: bool = False) -> LogStore:
        """Open (or, with ``create``, create) the log database at ``path``.

        Raises:
            LogError: the file does not exist and ``create`` is false, or its origin differs
                from ``origin``, or its schema is newer than this code.
        """
        if not create and not path.exists():
            raise LogError(f"no log at {path} (run `benchproof init`)")
        conn = connect(path)
        db = sqlite_utils.Database(conn)
        with conn:
            conn.executescript(_SCHEMA)
            for table in ("entries", "tree_nodes", "checkpoints"):
                conn.executescript(_APPEND_ONLY.format(table=table))
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

    def close(self) -> None:
        self._checkpointer.stop()
        self._conn.close()

    @property
    def connection(self) -> sqlite3.Connection:
        """The writer's connection (projections read and write through it in a batch)."""
        return self._conn

    # --- the tree ----------------------------------------------------------------------------

    def _stored_size(self) -> int:
        row = self._conn.execute("SELECT max(seq) FROM entries").fetchone()
        return 0 if row[0] is None else int(row[0]) + 1

    def _load_edge(self) -> CompactRange:
        return CompactRange.load(self._stored_size(), self.read_node)

    def read_node(self, level: int, index: int) -> bytes:
        """The hash of the perfect subtree ``(level, index)``.

        Raises:
            LogError: the node is not stored (beyond the tree, or the store is damaged).
        """
        if level == 0:
            row = self._conn.execute(
                "SELECT leaf_hash FROM entries WHERE seq = ?", (index,)
            ).fetchone()
        else:
            row = self._conn.execute(
                "SELECT hash FROM tree_nodes WHERE id = ?", (node_id(level, index),)
            ).fetchone()
        if row is None:
            raise LogError(f"tree node ({level}, {index}) is not stored")
        return bytes(row[0])

    @property
    def size(self) -> int:
        """The number of committed entries (as this process last saw them)."""
        return self._edge.size

    def refresh(self) -> int:
        """Catch up with entries another process appended; return the size."""
        with self._lock:
            if self._stored_size() != self._edge.size:
                self._edge = self._load_edge()
            return self._edge.size

    def root(self, size: int | None = None) -> bytes:
        """MTH of the first ``size`` entries (default: all)."""
        if size is None or size == self._edge.size:
            return self._edge.root()
        self._check_size(size)
        return subtree_hash(0, size, self.read_node) if size else EMPTY_ROOT

    def _check_size(self, size: int) -> None:
        current = self.refresh()
        if not 0 <= size <= current:
            raise LogError(f"the log has {current} entries, not {size}", size=size)

    def inclusion_proof(self, index: int, size: int) -> list[bytes]:
        """RFC 6962 inclusion proof of entry ``index`` in the tree of ``size`` entries.

        Raises:
            LogError: ``size`` is beyond the log. ProofError: ``index`` is not below ``size``.
        """
        self._check_size(size)
        return inclusion_proof(index, size, self.read_node)

    def consistency_proof(self, old: int, new: int) -> list[bytes]:
        """RFC 6962 consistency proof from ``old`` to ``new`` entries.

        Raises:
            LogError: ``new`` is beyond the log. ProofError: unless ``0 < old <= new``.
        """
        self._check_size(new)
        return consistency_proof(old, new, self.read_node)

    # --- reading entries ---------------------------------------------------------------------

    def leaves(self, start: int = 0, end: int | None = None) -> Iterator[tuple[int, bytes]]:
        """``(seq, leaf bytes)`` in order, for ``start <= seq < end``."""
        stop = self._stored_size() if end is None else end
        cursor = self._conn.execute(
            "SELECT seq, leaf FROM entries WHERE seq >= ? AND seq < ? ORDER BY seq", (start, stop)
        )
        for seq, leaf in cursor:
            yield seq, bytes(leaf)

    def latest_checkpoint(self) -> tuple[int, bytes] | None:
        """``(size, signed note)`` of the newest checkpoint, or None before the first."""
        row = self._conn.execute(
            "SELECT size, note FROM checkpoints ORDER BY size DESC LIMIT 1"
        ).fetchone()
        return None if row is None else (int(row[0]), bytes(row[1]))

    def checkpoint(self, size: int) -> bytes | None:
        """The signed note of the checkpoint at ``size``, if one was published."""
        row = self._conn.execute("SELECT note FROM checkpoints WHERE size = ?", (size,)).fetchone()
        return None if row is None else bytes(row[0])

    def seq_at_or_before(self, instant: str) -> int:
        """The tree size as it stood at ``instant`` (entries recorded at or before it)."""
        return size_at_instant(self._conn, instant)

    def find(self, digests: Sequence[str]) -> dict[str, int]:
        """The positions of entries whose payload digests are among ``digests``."""
        found: dict[str, int] = {}
        for i in range(0, len(digests), 500):
            chunk = list(digests[i : i + 500])
            marks = ",".join("?" * len(chunk))
            for digest, seq in self._conn.execute(
                f"SELECT payload_digest, seq FROM entries WHERE payload_digest IN ({marks})",  # noqa: S608
                chunk,
            ):
                found[digest] = int(seq)
        return found

    # --- appending ---------------------------------------------------------------------------

    def append(
        self,
        pending: Sequence[Pending],
        *,
        sign: ChunkSigner,
        sign_checkpoint: NoteSigner,
        now: datetime,
        project: Projector | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> list[Appended]:
        """Append a batch in one transaction: entries, tree nodes, the projections (through
        ``project``) and a signed checkpoint covering them. Entries whose payload the log already
        holds are not appended again; their existing positions are returned.

        The batch is written in chunks as their signatures arrive, so signing (on the signer's
        threads) overlaps with writing; the transaction still commits the batch whole or not at
        all.

        Raises:
            LogError: the batch could not be committed (nothing of it was).
        """
        if any(not p.signer for p in pending):
            raise LogError("every pending event must name the key that signs it (Pending.signer)")
        digests = [payload_digest(p.payload, p.payload_type, p.signer) for p in pending]
        conn = self._conn
        with self._lock, paused_gc():
            # Look for what the log holds under the write lock, once: no other writer can slip
            # an entry in between the look and the write.
            conn.execute("BEGIN IMMEDIATE")
            try:
                known = self.find(digests)
                first: dict[str, int] = {}
                for i, d in enumerate(digests):
                    if d not in known and d not in first:
                        first[d] = i
                appended: set[str] = set()
                if first:
                    todo = list(first.values())
                    appended = self._write(
                        [pending[i] for i in todo],
                        [digests[i] for i in todo],
                        sign,
                        sign_checkpoint,
                        now,
                        project,
                        known,
                        progress,
                    )
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                self._edge = self._load_edge()
                raise
            return [
                Appended(known[d], d in appended and first.get(d) == i, d)
                for i, d in enumerate(digests)
            ]

    def _write(
        self,
        items: list[Pending],
        digests: list[str],
        sign: ChunkSigner,
        sign_checkpoint: NoteSigner,
        now: datetime,
        project: Projector | None,
        known: dict[str, int],
        progress: Callable[[int], None] | None = None,
    ) -> set[str]:
        """Write the batch inside the caller's transaction; fill ``known`` with every position;
        return the digests appended. The caller commits (or rolls back and reloads the edge)."""
        conn = self._conn
        if self._stored_size() != self._edge.size:
            self._edge = self._load_edge()
        last = conn.execute("SELECT recorded_at FROM entries ORDER BY seq DESC LIMIT 1").fetchone()
        recorded_at = max(format_instant(now), last[0] if last else "")
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
            conn.executemany(
                "INSERT INTO entries (seq, recorded_at, type, subject, payload_digest, leaf_hash, leaf)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                rows,
            )
            conn.executemany("INSERT INTO tree_nodes (id, hash) VALUES (?, ?)", nodes)
            if project is not None:
                project(conn, stored)
            appended.update(e.payload_digest for e in stored)
            if progress is not None:
                progress(len(chunk))
        if appended:
            root = edge.root()
            note = sign_checkpoint(checkpoint_body(self.origin, edge.size, root))
            conn.execute(
                "INSERT INTO checkpoints (size, root, signed_at, note) VALUES (?, ?, ?, ?)",
                (edge.size, root, recorded_at, note),
            )
        self._edge = edge
        return appended

    def publish_checkpoint(self, sign_checkpoint: NoteSigner, now: datetime) -> tuple[int, bytes]:
        """Sign a checkpoint for the current size if the latest one is behind (or absent), and
        return the latest ``(size, note)``."""
        with self._lock:
            size = self.refresh()
            latest = self.latest_checkpoint()
            if latest is not None and latest[0] == size:
                return latest
            root = self.root()
            note = sign_checkpoint(checkpoint_body(self.origin, size, root))
            with self._conn:
                self._conn.execute(
                    "INSERT OR IGNORE INTO checkpoints (size, root, signed_at, note) VALUES (?, ?, ?, ?)",
                    (size, root, format_instant(now), note),
                )
            latest = self.latest_checkpoint()
            assert latest is not None  # noqa: S101 - just written
            return latest


def connect(path: Path) -> sqlite3.Connection:
    """A connection in WAL mode with durable commits (``synchronous=FULL``) and autocommit off
    (transactions are explicit)."""
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=60)
    conn.execute("PRAGMA cache_size=-65536")  # 64 MiB: a batch's pages stay in memory
    conn.execute("PRAGMA wal_autocheckpoint=0")  # the store's checkpointer thread does it
    conn.execute("PRAGMA journal_mode=WAL")

    conn.execute("PRAGMA synchronous=FULL")
    conn.execute("PRAGMA foreign_keys=ON")
    conn.execute("PRAGMA busy_timeout=60000")
    return conn


def stored_entries(
    store: LogStore, start: int = 0, end: int | None = None
) -> Iterator[StoredEntry]:
    """The entries ``start <= seq < end`` as projections see them (payload decoded).

    Raises:
        LogCorrupted: a leaf or payload does not decode.
    """
    from events.entries import read_entry

    for seq, leaf in store.leaves(start, end):
        yield read_entry(leaf, position=seq)
