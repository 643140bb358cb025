"""SQLite's online backup API, for ``benchproof backup`` (``service.app.backup``): a copy of a
log's database, page by page, from one read snapshot, while its writers go on appending.

The source is only read: a read-only connection (``mode=ro``; on a volume that cannot even host
the WAL's ``-shm`` file, read-only or full, and with no WAL frames left, the file as it stands:
``immutable=1``), no writer's handle, no write transaction.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from pathlib import Path

from events.stores.faults import StorageFull, StorageReadOnly, storage_fault
from events.stores.sqlite_session import failure

__all__ = ["copy_database"]


def _open_source(source: Path) -> sqlite3.Connection:
    """A read-only connection on the database ``source``, its read transaction begun.

    ``mode=ro`` reads the WAL too, but needs its ``-shm`` file (and creates it when missing).
    On a volume that cannot hold one (read-only, or full), a database with no WAL frames (its
    last writer closed it cleanly) is the whole log in its file, and no writer can change it
    meanwhile: it is opened as it stands (``immutable=1``). A WAL that holds frames is never
    skipped: then the error stands.

    Raises:
        StorageFault: the source cannot be read (named as the source's, not the copy's).
    """
    uri = source.resolve().as_uri()
    try:
        try:
            return _snapshot(f"{uri}?mode=ro")
        except sqlite3.OperationalError as exc:
            fault = storage_fault(exc, source)
            unhostable = _cannot_open(exc) or isinstance(fault, (StorageReadOnly, StorageFull))
            if _has_wal_frames(source) or not unhostable:
                raise
        return _snapshot(f"{uri}?mode=ro&immutable=1")
    except sqlite3.Error as exc:
        fault = storage_fault(exc, source)
        if fault is None:
            raise
        raise fault from exc


def _snapshot(uri: str) -> sqlite3.Connection:
    conn = sqlite3.connect(uri, uri=True, isolation_level=None)
    try:
        conn.execute("PRAGMA busy_timeout=60000")
        conn.execute("BEGIN")
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()  # the snapshot starts
    except BaseException:
        conn.close()
        raise
    return conn


def _has_wal_frames(source: Path) -> bool:
    wal = source.with_name(source.name + "-wal")
    try:
        return wal.stat().st_size > 0
    except FileNotFoundError:
        return False


def _cannot_open(exc: sqlite3.Error) -> bool:
    """SQLite could not open (or create) a file it needs: the ``-shm`` of a read-only folder."""
    code = getattr(exc, "sqlite_errorcode", None)
    return code is not None and code & 0xFF in (sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_READONLY)


def copy_database(
    source: Path,
    target: Path,
    *,
    progress: Callable[[int], None] | None,
    expect: Callable[[int], None] | None,
    step: int,
    between: Callable[[], None] | None,
) -> None:
    """Copy the SQLite database ``source`` to ``target`` with the online backup API, ``step``
    pages at a time, from one read snapshot: ``expect`` hears how many pages, ``progress``
    how many each step copied, ``between`` is called between steps. The copy is left in WAL
    mode, checkpointed, and synced.

    Raises:
        StorageFault: the source cannot be read (named as the source's); SQLite's other
            errors on either side as the port says them (``StatementFailed``).
    """
    src = _open_source(source)
    try:
        dst = sqlite3.connect(target, isolation_level=None)
    except sqlite3.Error as exc:
        src.close()
        raise failure(exc, target.parent) from exc  # named as the folder of the copy
    except BaseException:
        src.close()
        raise
    try:
        # One snapshot for every step (the read transaction ``_open_source`` began): the
        # writers' commits meanwhile neither enter the copy nor restart it.
        pages = src.execute("PRAGMA page_count").fetchone()[0]
        if expect is not None:
            expect(int(pages))
        done = [0]

        def stepped(_status: int, remaining: int, total: int) -> None:
            if progress is not None:
                now = total - remaining
                progress(now - done[0])
                done[0] = now
            if between is not None and remaining:
                between()

        src.backup(dst, pages=step, progress=stepped)
        src.execute("COMMIT")
        dst.execute("PRAGMA journal_mode=WAL")
        dst.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    except sqlite3.Error as exc:
        raise failure(exc, target.parent) from exc  # named as the folder of the copy
    finally:
        dst.close()
        src.close()
    with open(target, "rb") as f:
        os.fsync(f.fileno())
