"""The log port: what every store of the log must do, whatever keeps the bytes.

The log is an append-only sequence of exact leaf bytes (``events.entries``), the RFC 6962 tree
over them and the signed checkpoints of its sizes. A store keeps all three and answers reads in
ranges; it appends a batch of pendings in one transaction (entries, tree nodes, a signed
checkpoint and, through a projector, the projections), and it takes in leaves that another log
wrote (a mirror), byte for byte and at the same positions, after checking them.

``events.stores.sqlite.SqliteLog`` is the embedded adapter (one SQLite file) and
``events.stores.postgres.PgLog`` the one for many machines (a PostgreSQL schema); they share
their SQL in ``events.stores.sqlbase`` and are the only code that writes SQL on the log tables.
``tests/contract/test_store.py`` is the behaviour every adapter must show.

A store is generic in its *session* (``Session``): the database handle that the projections
read and write through. It is the writer's connection, so that one transaction commits the
entries and the projections they touch together. A session sends statements written for its
store (``events.statements``): the SQL both stores speak where they agree, each store's own
where they differ.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any, NamedTuple, Protocol, TypeVar

import msgspec

from events.entries import Pending, StoredEntry
from events.statements import Dialect, Statement

__all__ = [
    "Appended",
    "ChunkSigner",
    "Cursor",
    "EntryHeader",
    "EntryRow",
    "LeafCheck",
    "LogReader",
    "LogStore",
    "Mirrored",
    "NoteSigner",
    "Projector",
    "Session",
    "SignedCheckpoint",
    "stored_entries",
]


class Cursor(Protocol):
    """The rows a statement answered, as a session's ``execute`` returns them."""

    @property
    def rowcount(self) -> int: ...

    @property
    def description(self) -> Any: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...

    def close(self) -> None: ...


class Session(Protocol):
    """A database session of a store (``events.stores``): what the projections and the service's
    own tables send their statements through. Transactions are the store's: a session runs
    statements inside whatever the store began.

    A session sends ``Statement``s (``events.statements``), each in the text written for its
    store (``dialect``); parameters are bound in order, never interpolated. The driver's errors
    never leave it: a fault of the storage is raised as a ``StorageFault``, any other refusal
    (a constraint, a statement the schema does not take) as a ``StatementFailed``
    (``events.stores.faults``), the driver's error as its cause. Values come back as Python's
    own: ``int``, ``float``, ``str``, ``bytes`` and None."""

    @property
    def dialect(self) -> Dialect:
        """Which store's SQL this session speaks."""
        ...

    def execute(self, statement: Statement, parameters: Sequence[Any] = (), /) -> Cursor: ...

    def executemany(self, statement: Statement, rows: Iterable[Sequence[Any]], /) -> Cursor: ...

    @property
    def in_transaction(self) -> bool: ...

    def close(self) -> None: ...


S = TypeVar("S")
S_co = TypeVar("S_co", covariant=True)

ChunkSigner = Callable[[list[list[Pending]]], Iterator[list[bytes]]]
"""Signs chunks of pendings and yields, chunk by chunk in order, their DSSE envelopes as JSON
bytes (signing may run ahead on other threads while the store writes earlier chunks)."""
NoteSigner = Callable[[str], bytes]
"""Signs a checkpoint body as a C2SP signed note and returns the note bytes."""
Projector = Callable[[S, Sequence[StoredEntry]], None]
"""Updates the projections with newly committed entries, inside the append transaction, through
the store's session."""
LeafCheck = Callable[[Sequence[StoredEntry]], None]
"""Checks leaves another log wrote before a mirror takes them (signatures, roles); raises to
refuse the whole batch."""


class Appended(msgspec.Struct, frozen=True):
    """Where a pending event landed: its position, and whether this call appended it."""

    seq: int
    new: bool
    payloadDigest: str


class SignedCheckpoint(NamedTuple):
    """A signed checkpoint as stored: the tree size, the signed note (C2SP), the root it signs
    and when it was signed (the log's own recording time)."""

    size: int
    note: bytes
    root: bytes
    signed_at: str


class EntryHeader(NamedTuple):
    """The columns of an entry that routing and listing need, without its leaf."""

    seq: int
    type: str
    subject: str
    recorded_at: str


class EntryRow(NamedTuple):
    """An entry as stored: its columns, its stored leaf hash and its exact leaf bytes. A verifier
    checks every column against the leaf."""

    seq: int
    recorded_at: str
    type: str
    subject: str
    payload_digest: str
    leaf_hash: bytes
    leaf: bytes


class Mirrored(msgspec.Struct, frozen=True):
    """What ``append_leaves`` did: the leaves it took in and the size it reached."""

    appended: int
    size: int


class LogReader(Protocol):
    """Reads of the log, by position and by size. Every method answers from committed state."""

    @property
    def origin(self) -> str:
        """The log's identity (the checkpoint origin line)."""
        ...

    @property
    def size(self) -> int:
        """The number of committed entries, as this handle last saw them."""
        ...

    def refresh(self) -> int:
        """Catch up with entries another process appended; return the size."""
        ...

    def leaves(self, start: int = 0, end: int | None = None) -> Iterator[tuple[int, bytes]]:
        """``(seq, leaf bytes)`` in order, for ``start <= seq < end`` (default: to the end)."""
        ...

    def leaf(self, seq: int) -> bytes | None:
        """The leaf at ``seq``, if the log holds one."""
        ...

    def rows(self, start: int = 0, end: int | None = None) -> Iterator[EntryRow]:
        """Stored entries with their columns, in order (gaps, if the store is damaged, show)."""
        ...

    def headers(self, start: int = 0, end: int | None = None) -> Iterator[EntryHeader]:
        """Entry headers (no leaf bytes), in order, for ``start <= seq < end``."""
        ...

    def headers_at(self, positions: Sequence[int]) -> dict[int, EntryHeader]:
        """Entry headers of the entries at ``positions`` that the log holds."""
        ...

    def read_node(self, level: int, index: int) -> bytes:
        """The hash of the perfect subtree ``(level, index)`` (level 0: a leaf hash).

        Raises:
            LogError: the node is not stored.
        """
        ...

    def node_range(self, level: int, start: int, end: int) -> list[bytes]:
        """The hashes of the perfect subtrees ``(level, start)`` .. ``(level, end - 1)``, in
        order (level 0: leaf hashes): what a C2SP tile holds.

        Raises:
            LogError: one of them is not stored.
        """
        ...

    def nodes(self) -> Iterator[tuple[int, int, bytes]]:
        """Every stored perfect subtree of level 1 and up: ``(level, index, hash)``."""
        ...

    def root(self, size: int | None = None) -> bytes:
        """The tree head of the first ``size`` entries (default: all)."""
        ...

    def inclusion_proof(self, index: int, size: int) -> list[bytes]:
        """RFC 6962 inclusion proof of entry ``index`` in the tree of ``size`` entries."""
        ...

    def consistency_proof(self, old: int, new: int) -> list[bytes]:
        """RFC 6962 consistency proof from ``old`` to ``new`` entries."""
        ...

    def latest_checkpoint(self) -> SignedCheckpoint | None:
        """The newest checkpoint, or None before the first."""
        ...

    def checkpoint(self, size: int) -> SignedCheckpoint | None:
        """The checkpoint of exactly ``size`` entries, if one was signed."""
        ...

    def checkpoint_at_or_below(self, size: int) -> SignedCheckpoint | None:
        """The newest checkpoint of at most ``size`` entries."""
        ...

    def checkpoint_at_instant(self, instant: str) -> SignedCheckpoint | None:
        """The newest checkpoint signed at or before ``instant`` (RFC 3339, the log's own
        time): the one a reader could have held then."""
        ...

    def checkpoints(self) -> Iterator[SignedCheckpoint]:
        """Every checkpoint, by size."""
        ...

    def size_at_instant(self, instant: str) -> int:
        """The tree size when the log had recorded everything up to ``instant`` (RFC 3339, the
        log's own recording times, which never decrease along the log)."""
        ...

    def find(self, digests: Sequence[str]) -> dict[str, int]:
        """The positions of entries whose payload digests are among ``digests``."""
        ...

    def close(self) -> None: ...


class LogStore(LogReader, Protocol[S_co]):
    """A log that can be appended to. ``S_co`` is the session type the projections use."""

    @property
    def session(self) -> S_co:
        """The database session the projections read and write through (outside
        ``transaction()`` it reads committed state)."""
        ...

    def transaction(self) -> AbstractContextManager[S_co]:
        """One write transaction under the writer's lock: commits when the block ends, rolls
        back (and forgets what it had appended) when it raises, or when COMMIT fails.
        Re-entrant: an inner block is part of the outer one, and an inner block that raised
        dooms the whole transaction (it rolls back at the end with a LogError, even if the
        caller caught the inner error)."""
        ...

    def snapshot(self) -> AbstractContextManager[S_co]:
        """A read snapshot for the block: the session sees the log and the projections as they
        stood when it began. Appends by other processes are neither seen nor blocked; this
        handle's own writer waits until the block ends (one session cannot both read a snapshot
        and write)."""
        ...

    def append(
        self,
        pending: Sequence[Pending],
        *,
        sign: ChunkSigner,
        sign_checkpoint: NoteSigner,
        now: datetime,
        project: Projector[S_co] | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> list[Appended]:
        """Append a batch in one transaction: entries, tree nodes, the projections (through
        ``project``) and a signed checkpoint covering them. Entries whose payload the log
        already holds are not appended again; their positions are returned.

        Raises:
            LogError: the batch could not be committed (nothing of it was).
        """
        ...

    def append_leaves(
        self,
        start: int,
        leaves: Sequence[bytes],
        checkpoint: SignedCheckpoint,
        *,
        check: LeafCheck | None = None,
        project: Projector[S_co] | None = None,
    ) -> Mirrored:
        """Take in leaves another log wrote, at positions ``start``, ``start + 1``, ...: the
        same bytes at the same positions. Leaves the store holds already must be byte-equal
        (otherwise the logs have forked); the new ones must each decode and name their own
        position, record times must not decrease, ``check`` must accept them, and the tree they
        complete must have ``checkpoint.root`` at ``checkpoint.size`` (the caller has verified
        the checkpoint's signature). All of it commits in one transaction with the checkpoint,
        or nothing does.

        Raises:
            LogError: a gap, a fork, a root that is not the checkpoint's. LogCorrupted: a leaf
            does not decode or names another position. Whatever ``check`` raises.
        """
        ...

    def append_leaf_pieces(
        self, start: int, pieces: Iterable[Sequence[bytes]], checkpoint: SignedCheckpoint
    ) -> Mirrored:
        """``append_leaves`` of a whole log read piece by piece (a store taking in a log it
        does not hold any of: ``start`` must be its size): each piece is checked and written
        in turn, so only one is in memory; the checks are ``append_leaves``'s, and all of it
        commits in one transaction with the checkpoint, or nothing does.

        Raises:
            LogError: ``start`` is not the store's size, or as ``append_leaves``.
            LogCorrupted: as ``append_leaves``.
        """
        ...

    def publish_checkpoint(self, sign_checkpoint: NoteSigner, now: datetime) -> SignedCheckpoint:
        """Sign a checkpoint for the current size if the latest one is behind (or absent), and
        return the latest."""
        ...

    def add_cosignatures(self, size: int, lines: Sequence[str]) -> bytes | None:
        """Add witnesses' cosignature lines to the stored checkpoint of ``size`` (one per
        witness key); the note as stored after, or None if no checkpoint has that size."""
        ...


def stored_entries(log: LogReader, start: int = 0, end: int | None = None) -> Iterator[StoredEntry]:
    """The entries ``start <= seq < end`` as projections see them (payload decoded).

    Raises:
        LogCorrupted: a leaf or payload does not decode.
    """
    from events.entries import read_entry

    for seq, leaf in log.leaves(start, end):
        yield read_entry(leaf, position=seq)
