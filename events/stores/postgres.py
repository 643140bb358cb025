"""The log port on PostgreSQL: many processes on many machines, one writer at a time.

- The tables are the SQLite adapter's (``entries``, ``tree_nodes``, ``checkpoints``, ``meta``),
  in PostgreSQL's types, in the schema the URL's ``search_path`` names (``public`` by default).
  Triggers refuse UPDATE, DELETE and TRUNCATE on the three log tables.
- Every session acts as the role ``benchproof_appender`` where it can: a role that may only read
  and insert into the log tables (no UPDATE, DELETE or TRUNCATE) and owns the projections (which
  a replay drops and makes again). ``init`` makes the role when the URL's user may create roles.
- One writer at a time across every process and machine: a write transaction begins by taking a
  transaction-scoped advisory lock (``pg_advisory_xact_lock``) keyed by the schema; a second
  writer waits for it (``lock_timeout``, then ``WriterBusy``). Readers never wait.
- A batch commits in one transaction with its tree nodes, checkpoint and the projections it
  touches (the session is the writer's connection; the projections' SQL is translated by
  ``events.stores.pgsql``), with ``synchronous_commit = on``: acknowledged means durable.
- Connections come from a ``psycopg_pool`` pool per URL and process: a read handle borrows one
  and gives it back when closed.
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import psycopg
from psycopg import errors as pgerrors
from psycopg_pool import ConnectionPool, PoolTimeout

from events.errors import LogCorrupted, LogError
from events.port import EntryHeader, EntryRow, LogStore
from events.stores.faults import (
    StorageBusy,
    StorageDamaged,
    StorageFault,
    StorageFull,
    StorageReadOnly,
    StorageUnavailable,
)
from events.stores.pgsql import PgSession, adapt
from events.stores.sqlbase import SqlLog
from events.stores.sqlite_schema import SCHEMA_VERSION, WriterBusy

__all__ = ["APPENDER", "PgLog", "close_pools", "display_url", "pg_fault", "pg_faults", "pg_session"]

APPENDER = "benchproof_appender"
"""The role every session acts as where it can: SELECT and INSERT on the log tables only."""

LOCK_TIMEOUT = "60s"
"""How long a writer waits for another's lock before it gives up (``WriterBusy``)."""

POOL_SIZE = 64
"""Connections a process may hold on one store (each thread's read handle holds one)."""

_PAGE = 4096  # entries per query of a long ranged read: memory stays flat on a large log

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT COLLATE "C" PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS entries (
    seq BIGINT PRIMARY KEY,
    recorded_at TEXT COLLATE "C" NOT NULL,
    type TEXT COLLATE "C" NOT NULL,
    subject TEXT COLLATE "C" NOT NULL,
    payload_digest TEXT COLLATE "C" NOT NULL UNIQUE,
    leaf_hash BYTEA NOT NULL,
    leaf BYTEA NOT NULL
);
CREATE TABLE IF NOT EXISTS tree_nodes (id BIGINT PRIMARY KEY, hash BYTEA NOT NULL);
CREATE TABLE IF NOT EXISTS checkpoints (
    size BIGINT PRIMARY KEY,
    root BYTEA NOT NULL,
    signed_at TEXT COLLATE "C" NOT NULL,
    note BYTEA NOT NULL
);
CREATE OR REPLACE FUNCTION benchproof_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '% is append-only', TG_TABLE_NAME USING ERRCODE = 'restrict_violation';
END $$;
"""
_TRIGGERS = """
CREATE OR REPLACE TRIGGER {table}_append_only BEFORE UPDATE OR DELETE ON {table}
    FOR EACH ROW EXECUTE FUNCTION benchproof_append_only();
CREATE OR REPLACE TRIGGER {table}_no_truncate BEFORE TRUNCATE ON {table}
    FOR EACH STATEMENT EXECUTE FUNCTION benchproof_append_only();
"""
_LOG_TABLES = ("entries", "tree_nodes", "checkpoints")


def display_url(url: str) -> str:
    """``url`` without its password: what an error or a log line may show."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return parts._replace(netloc=netloc).geturl()


def pg_fault(exc: BaseException, url: str) -> StorageFault | None:
    """The storage fault a psycopg error is (None: no fault of the storage: a bug, a
    constraint)."""
    if isinstance(exc, StorageFault):
        return exc
    where = display_url(url)
    why = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    kind: type[StorageFault] | None = None
    if isinstance(exc, pgerrors.DiskFull | pgerrors.OutOfMemory | pgerrors.TooManyConnections):
        kind = StorageFull if isinstance(exc, pgerrors.DiskFull) else StorageUnavailable
    elif isinstance(exc, pgerrors.ReadOnlySqlTransaction):
        kind = StorageReadOnly
    elif isinstance(exc, pgerrors.LockNotAvailable | pgerrors.DeadlockDetected):
        kind = StorageBusy
    elif isinstance(exc, pgerrors.DataCorrupted | pgerrors.IndexCorrupted):
        kind = StorageDamaged
    elif isinstance(exc, psycopg.OperationalError | PoolTimeout):
        kind = StorageUnavailable
    if kind is None:
        return None
    if kind is StorageFull:
        detail = f"the PostgreSQL server of {where} is out of disk ({why}): nothing was written"
    elif kind is StorageReadOnly:
        detail = f"the PostgreSQL server of {where} is read-only ({why}): nothing was written"
    elif kind is StorageBusy:
        detail = f"{where} stayed locked by another writer ({why}): nothing was written; try again"
    elif kind is StorageDamaged:
        detail = f"{where}: PostgreSQL reports damaged data ({why}): restore it from a backup"
    else:
        detail = f"cannot use {where}: {why}: nothing was written"
    return kind(detail, path=where, reason=why)


@contextlib.contextmanager
def pg_faults(url: str) -> Iterator[None]:
    """The block's psycopg errors of storage as ``StorageFault``s; any other error as it is."""
    try:
        yield
    except (psycopg.Error, PoolTimeout) as exc:
        fault = pg_fault(exc, url)
        if fault is None:
            raise
        raise fault from exc


_POOLS: dict[tuple[str, bool], tuple[ConnectionPool[Any], int]] = {}  # and its users
_POOLS_LOCK = threading.Lock()


def _configure(readonly: bool) -> Any:
    def configure(conn: psycopg.Connection[Any]) -> None:
        adapt(conn)
        conn.execute("SET synchronous_commit = on")
        conn.execute(f"SET lock_timeout = '{LOCK_TIMEOUT}'")
        if readonly:
            conn.execute("SET default_transaction_read_only = on")
        with contextlib.suppress(psycopg.Error):
            # Act as the appender where this user may; ``_role`` says whether it did.
            conn.execute(f"SET ROLE {APPENDER}")

    return configure


def _borrow(url: str, readonly: bool) -> tuple[ConnectionPool[Any], psycopg.Connection[Any]]:
    """A connection from this process's pool of ``url`` (made at its first user), which counts
    one more user until ``_give_back``."""
    key = (url, readonly)
    with _POOLS_LOCK:
        pool, users = _POOLS.get(key, (None, 0))
        if pool is None:
            pool = ConnectionPool(
                url,
                min_size=1,
                max_size=POOL_SIZE,
                kwargs={"autocommit": True},
                configure=_configure(readonly),
                # A connection the server dropped while it waited in the pool is not handed
                # out (one round trip per borrow; handles borrow once and keep it).
                check=ConnectionPool.check_connection,
                open=False,
                name=f"benchproof-{'r' if readonly else 'w'}",
                timeout=30,
            )
            try:
                pool.open(wait=True, timeout=10)
            except BaseException:
                pool.close()
                raise
        _POOLS[key] = (pool, users + 1)
    try:
        return pool, pool.getconn()
    except BaseException:
        _give_back(url, readonly, pool, None)
        raise


def _give_back(
    url: str, readonly: bool, pool: ConnectionPool[Any], conn: psycopg.Connection[Any] | None
) -> None:
    """Return ``conn`` to its pool; the pool's last user closes it (a process that opened
    many stores, as a test run does, holds no connection to the ones it is done with)."""
    if conn is not None:
        with contextlib.suppress(psycopg.Error):
            if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                conn.execute("ROLLBACK")
        pool.putconn(conn)
    key = (url, readonly)
    with _POOLS_LOCK:
        held = _POOLS.get(key)
        if held is None or held[0] is not pool:
            return
        if held[1] > 1:
            _POOLS[key] = (pool, held[1] - 1)
            return
        del _POOLS[key]
    pool.close()


def close_pools() -> None:
    """Close every pool of this process."""
    with _POOLS_LOCK:
        pools = [pool for pool, _ in _POOLS.values()]
        _POOLS.clear()
    for pool in pools:
        pool.close()


@contextlib.contextmanager
def pg_session(url: str) -> Iterator[PgSession]:
    """A session on a pooled connection of ``url`` for the service's own small tables
    (challenges, rate limits): autocommit, or one transaction begun with ``BEGIN``."""
    _check_url(url)
    with pg_faults(url):
        pool, conn = _borrow(url, False)
    try:
        with pg_faults(url):
            yield PgSession(conn)
    finally:
        _give_back(url, False, pool, conn)


def _writer_key(schema: str) -> int:
    """The advisory lock of the writers of the log in ``schema`` (signed 64 bits)."""
    digest = hashlib.sha256(b"benchproof-writer\0" + schema.encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def _check_url(url: str) -> None:
    if urlsplit(url).scheme not in ("postgresql", "postgres"):
        raise LogError(f"not a PostgreSQL URL: {display_url(url)}")


class PgLog(SqlLog):
    """The append-only log in a PostgreSQL schema (``events.port.LogStore[PgSession]``)."""

    SNAPSHOT = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"

    def __init__(
        self,
        url: str,
        pool: ConnectionPool[Any],
        conn: psycopg.Connection[Any],
        origin: str,
        schema: str,
        *,
        readonly: bool = False,
    ) -> None:
        session = PgSession(conn, self._reconnect)
        super().__init__(session, origin, readonly=readonly)
        self._pg = session
        self.url = url
        self.schema = schema
        self._pool_of = pool
        self._raw: psycopg.Connection[Any] | None = conn
        self._key = _writer_key(schema)
        self.on_rollback = []

    # --- opening -----------------------------------------------------------------------------

    @classmethod
    def open(cls, url: str, *, origin: str | None = None, create: bool = False) -> PgLog:
        """Open (or, with ``create``, create) the log in the PostgreSQL schema of ``url``.

        Raises:
            LogError: there is no log there and ``create`` is false, or its origin differs from
                ``origin``, or its schema is newer than this code.
            StorageFault: the server cannot be reached.
        """
        _check_url(url)
        with pg_faults(url):
            pool, conn = _borrow(url, False)
            try:
                schema = str(conn.execute("SELECT current_schema()").fetchone()[0])  # type: ignore[index,unused-ignore]
                if create:
                    _create(conn, _writer_key(schema))
                stored = _origin(conn)
                if stored is None and not _has_log(conn):
                    raise LogError(
                        f"no log at {display_url(url)} (run `benchproof init --store URL`)"
                    )
                if stored is None:
                    if origin is None:
                        raise LogError(f"{display_url(url)}: the log has no origin yet")
                    _set_meta(conn, _writer_key(schema), origin)
                    stored = origin
                elif origin is not None and origin != stored:
                    raise LogError(
                        f"{display_url(url)}: the log's origin is {stored!r}, not {origin!r}"
                    )
                version = conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
                if version is not None and int(version[0]) > SCHEMA_VERSION:
                    raise LogError(
                        f"{display_url(url)}: schema {version[0]} is newer than this code "
                        "understands"
                    )
            except BaseException:
                _give_back(url, False, pool, conn)
                raise
        return cls(url, pool, conn, stored, schema)

    @classmethod
    def open_readonly(cls, url: str) -> PgLog:
        """A read-only handle (its connection refuses every write).

        Raises:
            LogError: there is no log there. StorageFault: the server cannot be reached.
        """
        _check_url(url)
        with pg_faults(url):
            pool, conn = _borrow(url, True)
            try:
                schema = str(conn.execute("SELECT current_schema()").fetchone()[0])  # type: ignore[index,unused-ignore]
                if not _has_log(conn):
                    raise LogError(f"no log at {display_url(url)}")
                stored = _origin(conn)
            except BaseException:
                _give_back(url, True, pool, conn)
                raise
        return cls(url, pool, conn, stored or "", schema, readonly=True)

    def _reconnect(self) -> psycopg.Connection[Any]:
        """A new connection in place of one the server dropped (the pool discards the broken
        one): a restarted server is used again without restarting the service."""
        old, self._raw = self._raw, None
        if old is not None:
            with contextlib.suppress(psycopg.Error):
                self._pool_of.putconn(old)
        with pg_faults(self.url):
            self._raw = self._pool_of.getconn()
        return self._raw

    @property
    def role(self) -> str | None:
        """The role this handle's session acts as (``APPENDER``), or None (the URL's user)."""
        row = self._pg.raw.execute("SELECT current_user::text, session_user::text").fetchone()
        return None if row is None or row[0] == row[1] else str(row[0])

    def close(self) -> None:
        raw, self._raw = self._raw, None
        if raw is not None:
            _give_back(self.url, self.readonly, self._pool_of, raw)

    @property
    def session(self) -> PgSession:
        """The handle's session: the projections read and write through it (in a batch, in the
        log's own transaction)."""
        return self._pg

    # --- the transaction ---------------------------------------------------------------------

    def _faults(self) -> AbstractContextManager[None]:
        return pg_faults(self.url)

    def _reading(self) -> AbstractContextManager[None]:
        return _pg_reading(self.url)

    def _start(self) -> None:
        if self._pg.raw.broken:  # the server dropped it since the last transaction
            self._pg.raw = self._reconnect()
        raw = self._pg.raw
        try:
            raw.execute("BEGIN")
        except psycopg.OperationalError:
            if not raw.broken:
                raise
            # Dropped while idle (a restart): nothing was begun, so begin on a new one.
            raw = self._pg.raw = self._reconnect()
            raw.execute("BEGIN")
        try:
            raw.execute("SELECT pg_advisory_xact_lock(%s)", (self._key,))
        except pgerrors.LockNotAvailable:
            raw.execute("ROLLBACK")
            raise WriterBusy(
                f"another writer has held {display_url(self.url)} for {LOCK_TIMEOUT}"
            ) from None
        except BaseException:
            with contextlib.suppress(psycopg.Error):
                raw.execute("ROLLBACK")
            raise

    def _commit(self) -> None:
        self._pg.raw.execute("COMMIT")

    def _release(self) -> None:
        pass  # the advisory lock ends with the transaction

    # --- long reads, page by page ------------------------------------------------------------

    def _pages(self, start: int, end: int | None) -> Iterator[tuple[int, int]]:
        stop = self._stored_size() if end is None else end
        for low in range(start, stop, _PAGE):
            yield low, min(low + _PAGE, stop)

    def leaves(self, start: int = 0, end: int | None = None) -> Iterator[tuple[int, bytes]]:
        for low, high in self._pages(start, end):
            with self._reading():
                rows = self._conn.execute(
                    "SELECT seq, leaf FROM entries WHERE seq >= ? AND seq < ? ORDER BY seq",
                    (low, high),
                ).fetchall()
            for seq, leaf in rows:
                yield int(seq), bytes(leaf)

    def rows(self, start: int = 0, end: int | None = None) -> Iterator[EntryRow]:
        stop = end if end is not None else self._max_seq() + 1
        for low, high in self._pages(start, stop):
            with self._reading():
                rows = self._conn.execute(
                    "SELECT seq, recorded_at, type, subject, payload_digest, leaf_hash, leaf"
                    " FROM entries WHERE seq >= ? AND seq < ? ORDER BY seq",
                    (low, high),
                ).fetchall()
            for seq, at, type_, subject, digest, lh, leaf in rows:
                yield EntryRow(int(seq), at, type_, subject, digest, bytes(lh), bytes(leaf))

    def headers(self, start: int = 0, end: int | None = None) -> Iterator[EntryHeader]:
        for low, high in self._pages(start, end):
            rows = self._conn.execute(
                "SELECT seq, type, subject, recorded_at FROM entries"
                " WHERE seq >= ? AND seq < ? ORDER BY seq",
                (low, high),
            ).fetchall()
            for row in rows:
                yield EntryHeader(*row)

    def _max_seq(self) -> int:
        row = self._conn.execute("SELECT max(seq) FROM entries").fetchone()
        return -1 if row[0] is None else int(row[0])

    def shard_rows(
        self, size: int, shard: int, workers: int
    ) -> Iterator[tuple[int, str, str, bytes | None]]:
        raise LogError("a sharded rebuild reads a SQLite file; PostgreSQL rebuilds in one")


@contextlib.contextmanager
def _pg_reading(url: str) -> Iterator[None]:
    try:
        yield
    except (psycopg.Error, PoolTimeout) as exc:
        fault = pg_fault(exc, url)
        if fault is not None and not isinstance(fault, StorageDamaged):
            raise fault from None
        raise LogCorrupted(f"the log cannot be read: {exc}") from None


def _has_log(conn: psycopg.Connection[Any]) -> bool:
    row = conn.execute("SELECT to_regclass('entries') IS NOT NULL").fetchone()
    return bool(row and row[0])


def _origin(conn: psycopg.Connection[Any]) -> str | None:
    if not _has_log(conn):
        return None
    row = conn.execute("SELECT value FROM meta WHERE key = 'origin'").fetchone()
    return None if row is None else str(row[0])


def _set_meta(conn: psycopg.Connection[Any], key: int, origin: str) -> None:
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (key,))
        conn.execute(
            "INSERT INTO meta (key, value) VALUES ('origin', %s), ('schema', %s)"
            " ON CONFLICT (key) DO NOTHING",
            (origin, str(SCHEMA_VERSION)),
        )


def _create(conn: psycopg.Connection[Any], key: int) -> None:
    """The log tables, their triggers and the appender role (idempotent; under the writers'
    lock, so that processes starting together do not race). Run as the URL's own user: the
    tables are its; the appender may only read and insert."""
    acting = conn.execute("SELECT current_user::text, session_user::text").fetchone()
    assert acting is not None  # noqa: S101 - one row
    conn.execute("RESET ROLE")
    try:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (key,))
            conn.execute(_SCHEMA)
            for table in _LOG_TABLES:
                conn.execute(_TRIGGERS.format(table=table))
            _grant(conn)
    finally:
        if acting[0] != acting[1]:
            conn.execute(f"SET ROLE {APPENDER}")
        else:
            with contextlib.suppress(psycopg.Error):
                conn.execute(f"SET ROLE {APPENDER}")


def _grant(conn: psycopg.Connection[Any]) -> None:
    """Make the appender role (when this user may) and give it what it may do here."""
    row = conn.execute(
        "SELECT rolsuper OR rolcreaterole FROM pg_roles WHERE rolname = current_user"
    ).fetchone()
    exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (APPENDER,)).fetchone()
    if exists is None:
        if not (row and row[0]):
            return  # triggers alone keep the log append-only
        # A savepoint: another process may make it first.
        with (
            conn.transaction(),
            contextlib.suppress(pgerrors.DuplicateObject, pgerrors.UniqueViolation),
        ):
            conn.execute(f"CREATE ROLE {APPENDER} NOLOGIN")
    schema = conn.execute("SELECT quote_ident(current_schema())").fetchone()
    assert schema is not None  # noqa: S101 - one row
    quoted = schema[0]
    conn.execute(f"GRANT USAGE, CREATE ON SCHEMA {quoted} TO {APPENDER}")
    conn.execute(f"GRANT SELECT, INSERT ON entries, tree_nodes, checkpoints TO {APPENDER}")
    conn.execute(
        f"REVOKE UPDATE, DELETE, TRUNCATE ON entries, tree_nodes, checkpoints FROM {APPENDER}"
    )
    conn.execute(f"GRANT SELECT, INSERT ON meta TO {APPENDER}")
    with (
        contextlib.suppress(pgerrors.InsufficientPrivilege, pgerrors.InvalidGrantOperation),
        conn.transaction(),
    ):
        conn.execute(f"GRANT {APPENDER} TO CURRENT_USER")


if TYPE_CHECKING:  # mypy proves that the adapter fulfils the port
    _PORT: type[LogStore[PgSession]] = PgLog
