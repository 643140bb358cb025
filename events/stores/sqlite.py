"""The log port on one SQLite database (WAL): the embedded default store.

One writer appends (a process lock plus ``BEGIN IMMEDIATE`` across processes); a batch commits
in one transaction with its tree nodes, checkpoint and the projections it touches (the
projections share the database and its transaction: the session is the writer's connection),
so a crash leaves all of it or none. Tables: ``events.stores.sqlite_schema``.
"""

from __future__ import annotations

import os
import sqlite3
import time
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING

from events.errors import LogError
from events.port import LogStore
from events.statements import sql
from events.stores.faults import (
    StatementFailed,
    StorageBusy,
    StorageDamaged,
    StorageFault,
    storage_fault,
    storage_faults,
)
from events.stores.sqlbase import CHUNK, COMMIT, SqlLog
from events.stores.sqlite_schema import (
    SCHEMA_VERSION,
    Checkpointer,
    WriterLock,
    connect,
    connect_readonly,
    create_tables,
)
from events.stores.sqlite_session import SqliteSession

__all__ = [
    "CHUNK",
    "COMMITTED_SUFFIX",
    "SqliteLog",
    "committed_path",
    "read_committed",
    "write_committed",
]


BUSY_WAIT = 5.0
"""Seconds a writer tries again to begin while SQLite answers busy without waiting."""
_SQLITE_BUSY = 5  # its primary result code (the extended ones share the low byte)

_META = sql(sqlite="SELECT key, value FROM meta")
_SET_META = sql(
    sqlite="INSERT INTO meta (key, value) VALUES (?, ?)"
    " ON CONFLICT (key) DO UPDATE SET value = excluded.value"
)
_ORIGIN = sql("SELECT value FROM meta WHERE key = 'origin'")
_HAS = sql(sqlite="SELECT 1 FROM sqlite_master WHERE name = ?")
_BEGIN_IMMEDIATE = sql(sqlite="BEGIN IMMEDIATE")

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


class SqliteLog(SqlLog):
    """The append-only log in one SQLite file (``events.port.LogStore[SqliteSession]``).
    Writes serialise on a lock; open another handle (``open_readonly``) for concurrent reads."""

    def __init__(
        self, path: Path, conn: SqliteSession, origin: str, *, readonly: bool = False
    ) -> None:
        super().__init__(conn, origin, readonly=readonly)
        self.path = path
        self._checkpointer = None if readonly else Checkpointer(path)
        self._writers = None if readonly else WriterLock(path)
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
    def _opened(cls, path: Path, conn: SqliteSession, origin: str | None) -> SqliteLog:
        create_tables(conn)
        meta = {row[0]: row[1] for row in conn.execute(_META)}
        if "schema" in meta and int(meta["schema"]) > SCHEMA_VERSION:
            raise LogError(f"{path}: schema {meta['schema']} is newer than this code understands")
        stored = meta.get("origin")
        if stored is None:
            if origin is None:
                raise LogError(f"{path}: the log has no origin yet")
            conn.executemany(_SET_META, [("origin", origin), ("schema", str(SCHEMA_VERSION))])
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
        conn: SqliteSession | None = None
        try:
            conn = connect_readonly(path)
            row = conn.execute(_ORIGIN).fetchone()
        except (StorageFault, StatementFailed) as exc:
            if conn is not None:
                conn.close()
            cause = exc.__cause__
            if not isinstance(cause, sqlite3.DatabaseError):
                raise
            fault = storage_fault(cause, path)
            if isinstance(fault, StorageDamaged) or fault is None:
                detail = f"{path}: the database cannot be read: {cause}"
                raise StorageDamaged(detail, path=str(path), reason=str(cause)) from None
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
    def session(self) -> SqliteSession:
        """The writer's connection: the projections read and write through it (in a batch, in
        the log's own transaction)."""
        session: SqliteSession = self._conn
        return session

    def has(self, name: str) -> bool:
        row = self._conn.execute(_HAS, (name,)).fetchone()
        return row is not None

    def _faults(self) -> AbstractContextManager[None]:
        return storage_faults(self.path)

    def _start(self) -> None:
        writers = self._writers
        assert writers is not None  # noqa: S101 - a read-only handle never starts (SqlLog)
        writers.acquire()
        try:
            self._begin()
        except BaseException:
            writers.release()
            raise

    def _commit(self) -> None:
        self._conn.execute(COMMIT)
        self._mark_committed()

    def _release(self) -> None:
        if self._writers is not None:
            self._writers.release()

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
                self._conn.execute(_BEGIN_IMMEDIATE)
                return
            except StorageBusy as exc:
                code = getattr(exc.__cause__, "sqlite_errorcode", 0)
                if code & 0xFF != _SQLITE_BUSY or time.monotonic() + pause > deadline:
                    raise
            time.sleep(pause)
            pause = min(pause * 2, 0.05)


if TYPE_CHECKING:  # mypy proves that the adapter fulfils the port
    _PORT: type[LogStore[SqliteSession]] = SqliteLog
