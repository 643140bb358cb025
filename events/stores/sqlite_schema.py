"""The SQLite adapter's tables, connections, WAL checkpointer and writers' lock.

- ``entries`` holds each leaf as the exact bytes committed, its leaf hash and its payload's
  content digest (UNIQUE: appending the same statement twice returns the existing entry).
- ``tree_nodes`` holds every perfect subtree (level >= 1; level 0 is ``entries.leaf_hash``),
  grown incrementally from the tree's right edge.
- ``checkpoints`` holds the signed note of every size a batch committed; the latest always
  covers every committed entry, because it is written in the batch's own transaction.
- Triggers refuse UPDATE and DELETE on all three.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sqlite3
import threading
import time
from pathlib import Path

from events.errors import LogError
from events.statements import sql
from events.stores.faults import StatementFailed, StorageFault, storage_fault
from events.stores.sqlite_session import SqliteSession, failure

__all__ = [
    "SCHEMA_VERSION",
    "Checkpointer",
    "WriterBusy",
    "WriterLock",
    "connect",
    "connect_readonly",
    "create_tables",
    "node_id",
]

SCHEMA_VERSION = 1

_APPEND_ONLY = """
CREATE TRIGGER IF NOT EXISTS {table}_no_update BEFORE UPDATE ON {table}
BEGIN SELECT RAISE(ABORT, '{table} is append-only'); END;
CREATE TRIGGER IF NOT EXISTS {table}_no_delete BEFORE DELETE ON {table}
BEGIN SELECT RAISE(ABORT, '{table} is append-only'); END;
"""
_TRIGGERS = [
    sql(sqlite=_APPEND_ONLY.format(table=table))
    for table in ("entries", "tree_nodes", "checkpoints", "cosignatures")
]

_SCHEMA = sql(
    sqlite="""
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
CREATE TABLE IF NOT EXISTS cosignatures (
    size INTEGER NOT NULL,
    witness TEXT NOT NULL,
    key_id BLOB NOT NULL,
    line TEXT NOT NULL,
    PRIMARY KEY (size, witness, key_id)
);
"""
)
_PRAGMAS = [
    sql(sqlite="PRAGMA cache_size=-65536"),  # 64 MiB: a batch's pages stay in memory
    sql(sqlite="PRAGMA wal_autocheckpoint=0"),  # the store's checkpointer thread does it
    sql(sqlite="PRAGMA journal_mode=WAL"),
    sql(sqlite="PRAGMA synchronous=FULL"),
    sql(sqlite="PRAGMA foreign_keys=ON"),
    sql(sqlite="PRAGMA busy_timeout=60000"),
]
_QUERY_ONLY = sql(sqlite="PRAGMA query_only = ON")
_CHECKPOINT = {
    mode: sql(sqlite=f"PRAGMA wal_checkpoint({mode})") for mode in ("PASSIVE", "TRUNCATE")
}


def create_tables(session: SqliteSession) -> None:
    """The log tables and their append-only triggers (idempotent)."""
    with session.raw:
        session.script(_SCHEMA)
        for trigger in _TRIGGERS:
            session.script(trigger)


def node_id(level: int, index: int) -> int:
    """The key of a perfect subtree in ``tree_nodes``: ``level << 40 | index``."""
    return level << 40 | index


def connect(path: Path) -> SqliteSession:
    """A session in WAL mode with durable commits (``synchronous=FULL``) and autocommit off
    (transactions are explicit).

    Raises:
        StorageFault: the file cannot be opened or set up.
    """
    session = SqliteSession(_connect(path, path), path)
    try:
        for pragma in _PRAGMAS:
            session.execute(pragma)
    except BaseException:
        session.close()
        raise
    return session


def connect_readonly(path: Path) -> SqliteSession:
    """A read-only session (``mode=ro``): for readers that must change nothing.

    Raises:
        StorageFault: the file cannot be opened.
    """
    uri = f"{path.resolve().as_uri()}?mode=ro"
    session = SqliteSession(_connect(uri, path, uri=True), path)
    try:
        session.execute(_QUERY_ONLY)
    except BaseException:
        session.close()
        raise
    return session


def _connect(target: Path | str, path: Path, *, uri: bool = False) -> sqlite3.Connection:
    try:
        return sqlite3.connect(
            target, isolation_level=None, check_same_thread=False, timeout=60, uri=uri
        )
    except sqlite3.Error as exc:
        raise failure(exc, path) from exc


class Checkpointer:
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
        session = SqliteSession(sqlite3.connect(self._path, timeout=60), self._path)
        try:
            session.execute(_CHECKPOINT[mode])
        finally:
            session.close()

    def _run(self) -> None:
        while not self._stop.wait(self.INTERVAL):
            try:
                self._checkpoint("PASSIVE")
            except (sqlite3.Error, StorageFault, StatementFailed):
                continue  # busy or closing: the next round will do it

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        # Another process may hold the database; its own close will checkpoint then.
        with contextlib.suppress(sqlite3.Error, StorageFault, StatementFailed):
            self._checkpoint("TRUNCATE")


class WriterBusy(LogError):
    """Another writer held the log for the whole timeout: nothing was written, and trying each
    request of a group alone would only wait again."""


class WriterLock:
    """One writer at a time across processes (``benchproof serve --workers N``, a command run
    beside the server): an exclusive ``flock`` on a file beside the database, taken before
    ``BEGIN IMMEDIATE``. A writer that finds it taken checks again within a millisecond, where
    SQLite's own busy wait sleeps up to 100 ms between tries; after ``timeout`` seconds it gives
    up (as SQLite's busy timeout would), so two handles of one process can never wait on each
    other for ever."""

    def __init__(self, db: Path, *, timeout: float = 60.0) -> None:
        self.path = db.with_name(db.name + "-writer")
        self._fd: int | None = None  # opened at the first write: a reader's never needs it
        self._timeout = timeout

    def acquire(self) -> None:
        """Take the lock.

        Raises:
            LogError: the lock file cannot be opened (a read-only folder), or another writer
                held it for ``timeout`` seconds.
        """
        if self._fd is None:
            try:
                # Read-only is enough for flock; created with the database's own permissions,
                # so whoever may write the database may take the lock.
                db = self.path.with_name(self.path.name.removesuffix("-writer"))
                mode = db.stat().st_mode & 0o666 if db.exists() else 0o600
                self._fd = os.open(self.path, os.O_RDONLY | os.O_CREAT, mode)
            except OSError as exc:
                fault = storage_fault(exc, self.path)
                if fault is not None:
                    raise fault from None
                raise LogError(f"cannot write the log: {self.path}: {exc.strerror}") from None
        deadline, pause = time.monotonic() + self._timeout, 0.0001
        while True:
            try:
                fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise WriterBusy(
                        f"another writer has held {self.path} for {self._timeout:.0f} s"
                    ) from None
                time.sleep(pause)
                pause = min(pause * 2, 0.001)

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
