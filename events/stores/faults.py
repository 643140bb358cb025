"""Faults of the storage under a log (a full disk, a read-only file system, a damaged or
truncated database file, an I/O error), said in the port's terms.

SQLite reports them as ``sqlite3.OperationalError`` or ``DatabaseError`` with a result code, and
the operating system as ``OSError`` with an errno; ``storage_fault`` turns either into one of the
errors below, whose ``detail`` names the file and what to do. A write that meets one is rolled
back whole (SQLite's transaction), so the error always means: nothing of it was recorded. An I/O
error that SQLite does not explain (its ``SQLITE_IOERR`` family) is explained by the file system
that holds the file: read-only, or no space left.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from events.errors import LogCorrupted, LogError

__all__ = [
    "StatementFailed",
    "StorageBusy",
    "StorageDamaged",
    "StorageFault",
    "StorageFull",
    "StorageReadOnly",
    "StorageUnavailable",
    "storage_fault",
    "storage_faults",
]

# SQLite's primary result codes (https://sqlite.org/rescode.html).
_BUSY, _LOCKED, _READONLY, _IOERR, _CORRUPT, _FULL, _CANTOPEN, _NOTADB = 5, 6, 8, 10, 11, 13, 14, 26
_IOERR_SHORT_READ = _IOERR | (2 << 8)


class StorageFault(LogError):
    """The storage under the log failed; nothing of the operation under way was recorded.
    ``public`` is what a server may tell any client (no path)."""

    public = "The log's storage failed: nothing of this request was recorded."


class StorageFull(StorageFault):
    """No space is left on the disk that holds the log."""

    public = (
        "The disk that holds the log is full: nothing of this request was recorded. "
        "Try again once the operator has freed space; reads still work."
    )


class StorageReadOnly(StorageFault):
    """The log's file system (or the database file) is read-only."""

    public = (
        "The log's storage is read-only: nothing of this request was recorded. "
        "Try again once the operator has made it writable; reads still work."
    )


class StorageDamaged(StorageFault, LogCorrupted):
    """The database file cannot be read as a log: truncated, overwritten or not a database."""

    public = (
        "The log's database is damaged and cannot be read: the operator must restore it "
        "from a backup."
    )


class StorageBusy(StorageFault):
    """The database stayed locked by another writer (or a read on the writer's connection)
    longer than the store waits: nothing was done; trying again later works."""

    public = "The log is busy: nothing of this request was recorded. Try again in a moment."


class StorageUnavailable(StorageFault):
    """Another I/O error: the file cannot be opened, read or written."""


class StatementFailed(Exception):
    """The database refused a statement for a reason that is no fault of the storage (a
    constraint, a statement the schema does not take): a bug, said without the driver's types
    (its error is the cause). Raised by the stores' sessions (``events.port.Session``)."""

    def __init__(self, detail: str, **details: object) -> None:
        super().__init__(detail)
        self.detail = detail
        self.details = details


def _filesystem(path: Path | None) -> type[StorageFault] | None:
    """What the file system that holds ``path`` says: read-only, full, or nothing."""
    if path is None:
        return None
    folder = path if path.is_dir() else path.parent
    try:
        stat = os.statvfs(folder)
    except OSError:
        return None
    if stat.f_flag & os.ST_RDONLY:
        return StorageReadOnly
    if stat.f_bavail == 0 or (stat.f_files and stat.f_favail == 0):
        return StorageFull
    # A file system the kernel made read-only after an error (ext4's errors=remount-ro) says so
    # neither in its flags nor to access(2): only a write tells.
    probe = folder / f".benchproof-probe-{os.getpid()}"
    try:
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except OSError as exc:
        return {errno.EROFS: StorageReadOnly, errno.ENOSPC: StorageFull}.get(exc.errno or 0)
    with contextlib.suppress(OSError):
        os.unlink(probe)
    return None


def _kind(exc: BaseException, path: Path | None) -> type[StorageFault] | None:
    if isinstance(exc, sqlite3.Error):
        code = getattr(exc, "sqlite_errorcode", None)
        if code is None:
            return None
        primary = code & 0xFF
        if primary in (_BUSY, _LOCKED):
            return StorageBusy
        if primary == _FULL:
            return StorageFull
        if primary == _READONLY:
            return _filesystem(path) or StorageReadOnly
        if primary in (_CORRUPT, _NOTADB) or code == _IOERR_SHORT_READ:
            return StorageDamaged
        if primary in (_IOERR, _CANTOPEN):
            return _filesystem(path) or StorageUnavailable
        return None
    if isinstance(exc, OSError):
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            return StorageFull
        if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
            return _filesystem(path) or (StorageReadOnly if exc.errno == errno.EROFS else None)
        if exc.errno == errno.EIO:
            return _filesystem(path) or StorageUnavailable
    return None


def storage_fault(exc: BaseException, path: Path | None) -> StorageFault | None:
    """The storage fault ``exc`` is (raised on the file ``path``; None: a file not known), or
    None when it is no fault of the storage (a bug, a constraint)."""
    if isinstance(exc, StorageFault):
        return exc
    kind = _kind(exc, None if path is None else Path(path))
    if kind is None:
        return None
    if path is None:
        path = Path(exc.filename) if isinstance(exc, OSError) and exc.filename else None
    where = "the database" if path is None else str(path)
    why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    if kind is StorageFull:
        detail = f"the disk that holds {where} is full ({why}): nothing was written; free space"
    elif kind is StorageReadOnly:
        detail = (
            f"{where} is on a read-only file system ({why}): nothing was written; make it "
            "writable (reads still work)"
        )
    elif kind is StorageBusy:
        detail = f"{where} stayed locked by another writer ({why}): nothing was written; try again"
    elif kind is StorageDamaged:
        detail = (
            f"{where}: the database cannot be read: {why} (the file is damaged or truncated): "
            "restore it from a backup (`benchproof backup`)"
        )
    else:
        detail = f"cannot use {where}: {why} (an I/O error): nothing was written"
    return kind(detail, path=where, reason=why)


@contextlib.contextmanager
def storage_faults(path: Path) -> Iterator[None]:
    """The block's storage faults (full, read-only, damaged, busy, I/O) as ``StorageFault``s
    naming ``path``; any other error as it is."""
    try:
        yield
    except (sqlite3.Error, OSError) as exc:
        fault = storage_fault(exc, path)
        if fault is None:
            raise
        raise fault from exc
