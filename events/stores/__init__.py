"""Adapters of the log port (``events.port``): the only code that writes SQL on the log tables.

``sqlite`` is the embedded default (one SQLite file in WAL mode); ``postgres`` keeps the log in a
PostgreSQL schema, for many API processes on many machines. A store is named by a URL:

- ``sqlite:///var/benchproof.db``: the SQLite file at that absolute path (``sqlite:rel.db``, with
  no slashes, is relative to the working directory);
- ``postgresql://user:password@host:port/database`` (or ``postgres://``), with libpq's query
  options; ``?options=-csearch_path%3Dname`` keeps the log in the schema ``name``.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Literal
from urllib.parse import unquote

from events.errors import LogError
from events.port import Session
from events.statements import Statement, sql

if TYPE_CHECKING:
    from events.stores.sqlbase import SqlLog

__all__ = [
    "display_store",
    "log_exists",
    "open_reader",
    "open_store",
    "same_store",
    "service_session",
    "sqlite_counts",
    "sqlite_path",
    "store_kind",
]


def store_kind(url: str) -> Literal["sqlite", "postgresql"]:
    """Which adapter keeps the log the URL names.

    Raises:
        LogError: the URL names no store this code has.
    """
    scheme = url.partition(":")[0].lower() if ":" in url else ""
    if scheme == "sqlite":
        return "sqlite"
    if scheme in ("postgresql", "postgres"):
        return "postgresql"
    raise LogError(
        f"not a store URL: {url.partition('@')[2] or url!r} (expected sqlite:///PATH or "
        "postgresql://…)"
    )


def sqlite_path(url: str) -> Path:
    """The file a ``sqlite:`` URL names.

    Raises:
        LogError: the URL names no file.
    """
    rest = url.partition(":")[2]
    if rest.startswith("//"):
        rest = rest[2:]
        if rest and not rest.startswith("/"):
            raise LogError(f"{url}: a sqlite URL has no host (sqlite:///PATH)")
    path = unquote(rest.partition("?")[0])
    if not path or path.endswith("/") or "\0" in path:
        raise LogError(f"{url!r} names no SQLite file (sqlite:///PATH)")
    return Path("/" + path.lstrip("/")) if path.startswith("/") else Path(path)


def same_store(a: str, b: str) -> bool:
    """Whether two URLs name the same store (SQLite files by their resolved paths)."""
    if a == b:
        return True
    try:
        if store_kind(a) == store_kind(b) == "sqlite":
            return sqlite_path(a).resolve() == sqlite_path(b).resolve()
    except LogError:
        return False
    return False


def display_store(url: str) -> str:
    """``url`` without its password (in the authority or as a ``password=`` option): what an
    error or a log line may show."""
    if store_kind(url) == "sqlite":
        return url
    from events.stores.pg_pool import display_url

    return display_url(url)


def open_store(url: str, *, origin: str | None = None, create: bool = False) -> SqlLog:
    """The log at ``url``, open for appending (``create``: made if missing, with ``origin``).

    Raises:
        LogError: no log there (and not ``create``), another origin, an unknown URL.
        StorageFault: the store cannot be reached or used.
    """
    if store_kind(url) == "sqlite":
        from events.stores.sqlite import SqliteLog

        return SqliteLog.open(sqlite_path(url), origin=origin, create=create)
    from events.stores.postgres import PgLog

    return PgLog.open(url, origin=origin, create=create)


def open_reader(url: str) -> SqlLog:
    """A read-only handle on the log at ``url`` (any number may be open, in any process).

    Raises:
        LogError: no log there, an unknown URL. StorageFault: the store cannot be reached.
    """
    if store_kind(url) == "sqlite":
        from events.stores.sqlite import SqliteLog

        return SqliteLog.open_readonly(sqlite_path(url))
    from events.stores.postgres import PgLog

    return PgLog.open_readonly(url)


def log_exists(url: str) -> bool:
    """Whether a log is kept at ``url`` (a SQLite file there; the log tables in the schema).

    Raises:
        StorageFault: the store cannot be reached.
    """
    if store_kind(url) == "sqlite":
        return sqlite_path(url).exists()
    try:
        open_reader(url).close()
    except LogError as exc:
        from events.stores.faults import StorageFault

        if isinstance(exc, StorageFault):
            raise
        return False
    return True


BEGIN = sql(postgresql="BEGIN")
BEGIN_IMMEDIATE = sql(sqlite="BEGIN IMMEDIATE")
_COMMIT = sql(postgresql="COMMIT")
_MAKING = sql(postgresql="SELECT pg_advisory_xact_lock(hashtext(?))")
_DURABLE = sql(sqlite="PRAGMA synchronous=FULL")
_COUNTS = sql(sqlite="PRAGMA synchronous=NORMAL")
_WAL = sql(sqlite="PRAGMA journal_mode=WAL")
_BUSY_WAIT = sql(sqlite="PRAGMA busy_timeout=60000")


def _sqlite_session(path: Path, pragmas: tuple[Statement, ...]) -> Session:
    from events.stores.sqlite_session import SqliteSession, failure

    try:
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=60)
    except sqlite3.Error as exc:
        raise failure(exc, path) from exc
    session = SqliteSession(conn, path)
    try:
        for pragma in pragmas:
            session.execute(pragma)
    except BaseException:
        session.close()
        raise
    return session


@contextlib.contextmanager
def service_session(
    url: str, sqlite_file: Path, ddl: Statement
) -> Iterator[tuple[Session, Statement]]:
    """A short session for the service's own tables that every API process must share
    (registration challenges, rate limits), made by ``ddl`` (``CREATE TABLE IF NOT EXISTS``)
    if missing, and the statement that begins a write transaction on it: on PostgreSQL, a
    pooled connection of the store; on SQLite, a connection to ``sqlite_file`` (durable
    commits, a long busy wait)."""
    if store_kind(url) == "postgresql":
        from events.stores.postgres import pg_session

        with pg_session(url) as session:
            key = (url, ddl.where)
            if key not in _MADE:
                session.execute(BEGIN)
                # Processes starting together must not race to make the same table.
                session.execute(_MAKING, (ddl.text("postgresql"),))
                session.execute(ddl)
                session.execute(_COMMIT)
                _MADE.add(key)
            yield session, BEGIN
        return
    conn = _sqlite_session(sqlite_file, (_DURABLE, _BUSY_WAIT))
    try:
        conn.execute(ddl)
        yield conn, BEGIN_IMMEDIATE
    finally:
        conn.close()


def sqlite_counts(path: Path, ddl: Statement) -> Session:
    """A long-lived session on a SQLite database of counts nobody was promised (the rate
    limits): WAL, ``synchronous=NORMAL`` (no fsync per commit), a long busy wait; its table
    made by ``ddl`` if missing.

    Raises:
        StorageFault: the file cannot be opened or written.
    """
    session = _sqlite_session(path, (_WAL, _COUNTS, _BUSY_WAIT))
    try:
        session.execute(ddl)
    except BaseException:
        session.close()
        raise
    return session


_MADE: set[tuple[str, str]] = set()  # the service tables this process made (or found)
