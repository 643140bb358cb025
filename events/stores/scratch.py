"""Scratch databases: SQLite files a computation fills and throws away (the parallel rebuild's
shards, ``projections.shards``), and one session that reads several of them at once.

A scratch database keeps no journal and never syncs (it is thrown away if anything fails);
SQLite's errors on it are said as the port's (``events.stores.sqlite_session``).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path

from events.statements import sql
from events.stores.sqlite_session import SqliteSession, failure

__all__ = ["BEGIN", "COMMIT", "open_attached", "open_scratch"]

BEGIN = sql(sqlite="BEGIN")
"""Begins the transaction a scratch database is filled in."""
COMMIT = sql(sqlite="COMMIT")

_PRAGMAS = [
    sql(sqlite="PRAGMA journal_mode=OFF"),
    sql(sqlite="PRAGMA synchronous=OFF"),
    sql(sqlite="PRAGMA locking_mode=EXCLUSIVE"),
    sql(sqlite="PRAGMA cache_size=-131072"),
    # Sorts and temporary tables (an index built over a whole table) spill to files: in memory
    # they grew with the log.
    sql(sqlite="PRAGMA temp_store=FILE"),
]
_ATTACH = sql(sqlite="ATTACH DATABASE ? AS ?")


def _connect(path: Path) -> SqliteSession:
    try:
        return SqliteSession(sqlite3.connect(path, isolation_level=None), path)
    except sqlite3.Error as exc:
        raise failure(exc, path) from exc


def open_scratch(path: Path) -> SqliteSession:
    """A fresh, empty scratch database at ``path`` (a file there before is removed first)."""
    path.unlink(missing_ok=True)  # never rows of an earlier build
    session = _connect(path)
    try:
        for pragma in _PRAGMAS:
            session.execute(pragma)
    except BaseException:
        session.close()
        raise
    return session


def open_attached(main: Path, others: Sequence[Path]) -> tuple[SqliteSession, list[str]]:
    """A session on the scratch database ``main`` with each of ``others`` attached, and the
    schema names they read as: ``s0``, ``s1``... for ``others``, then ``main``."""
    session = _connect(main)
    names = [f"s{i}" for i in range(len(others))]
    try:
        for path, name in zip(others, names, strict=True):
            session.execute(_ATTACH, (str(path), name))
    except BaseException:
        session.close()
        raise
    return session, [*names, "main"]
