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
  touches (the session is the writer's connection, ``events.stores.pgsql``; every statement is
  sent in the text written for PostgreSQL, ``events.statements``), with ``synchronous_commit =
  on``: acknowledged means durable.
- Connections come from a ``psycopg_pool`` pool per URL and process: a read handle borrows one
  and gives it back when closed (``events.stores.pg_pool``); the tables, triggers and role are
  made by ``events.stores.pg_schema``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg import errors as pgerrors
from psycopg_pool import ConnectionPool

from events.errors import LogError
from events.port import EntryHeader, EntryRow, LogStore
from events.statements import Statement, sql
from events.stores.faults import StorageUnavailable
from events.stores.pg_pool import (
    LOCK_TIMEOUT,
    borrow,
    check_url,
    display_url,
    give_back,
    pg_faults,
    pg_reading,
    pg_session,
)
from events.stores.pg_schema import create as create_tables
from events.stores.pg_schema import (
    has_log,
    set_origin,
    stored_origin,
    writer_key,
)
from events.stores.pgsql import PgSession, pg_fault, run
from events.stores.sqlbase import SqlLog
from events.stores.sqlite_reads import HEADERS, LEAVES, ROWS
from events.stores.sqlite_schema import SCHEMA_VERSION, WriterBusy

__all__ = ["PgLog", "display_url", "pg_fault", "pg_faults", "pg_session"]

_PAGE = 4096  # entries per query of a long ranged read: memory stays flat on a large log

_SCHEMA_NAME = sql(postgresql="SELECT current_schema()")
_SCHEMA_VERSION = sql(postgresql="SELECT value FROM meta WHERE key = 'schema'")
_ROLE = sql(postgresql="SELECT current_user::text, session_user::text")
_HAS = sql(
    postgresql="SELECT CASE WHEN to_regclass(quote_ident(current_schema()) || '.' ||"
    " quote_ident(?)) IS NULL THEN 0 ELSE 1 END"
)
_BEGIN = sql(postgresql="BEGIN")
_WRITERS = sql(postgresql="SELECT pg_advisory_xact_lock(?)")
_COMMIT = sql(postgresql="COMMIT")
_ROLLBACK = sql(postgresql="ROLLBACK")


class PgLog(SqlLog):
    """The append-only log in a PostgreSQL schema (``events.port.LogStore[PgSession]``)."""

    SNAPSHOT: Statement = sql(postgresql="BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")

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
        session = PgSession(conn, self._reconnect, where=display_url(url))
        super().__init__(session, origin, readonly=readonly)
        self._pg = session
        self.url = url
        self.schema = schema
        self._pool_of = pool
        self._raw: psycopg.Connection[Any] | None = conn
        self._closed = False
        self._key = writer_key(schema)

    # --- opening -----------------------------------------------------------------------------

    @classmethod
    def open(cls, url: str, *, origin: str | None = None, create: bool = False) -> PgLog:
        """Open (or, with ``create``, create) the log in the PostgreSQL schema of ``url``.

        Raises:
            LogError: there is no log there and ``create`` is false, or its origin differs from
                ``origin``, or its schema is newer than this code.
            StorageFault: the server cannot be reached.
        """
        check_url(url)
        with pg_faults(url):
            pool, conn = borrow(url, False)
            try:
                schema = str(run(conn, _SCHEMA_NAME).fetchone()[0])  # type: ignore[index,unused-ignore]
                if create:
                    create_tables(conn, writer_key(schema))
                stored = stored_origin(conn)
                if stored is None and not has_log(conn):
                    raise LogError(
                        f"no log at {display_url(url)} (run `benchproof init --store URL`)"
                    )
                if stored is None:
                    if origin is None:
                        raise LogError(f"{display_url(url)}: the log has no origin yet")
                    set_origin(conn, writer_key(schema), origin)
                    stored = origin
                elif origin is not None and origin != stored:
                    raise LogError(
                        f"{display_url(url)}: the log's origin is {stored!r}, not {origin!r}"
                    )
                version = run(conn, _SCHEMA_VERSION).fetchone()
                if version is not None and int(version[0]) > SCHEMA_VERSION:
                    raise LogError(
                        f"{display_url(url)}: schema {version[0]} is newer than this code "
                        "understands"
                    )
            except BaseException:
                give_back(url, False, pool, conn)
                raise
        return cls(url, pool, conn, stored, schema)

    @classmethod
    def open_readonly(cls, url: str) -> PgLog:
        """A read-only handle (its connection refuses every write).

        Raises:
            LogError: there is no log there. StorageFault: the server cannot be reached.
        """
        check_url(url)
        with pg_faults(url):
            pool, conn = borrow(url, True)
            try:
                schema = str(run(conn, _SCHEMA_NAME).fetchone()[0])  # type: ignore[index,unused-ignore]
                if not has_log(conn):
                    raise LogError(f"no log at {display_url(url)}")
                stored = stored_origin(conn)
            except BaseException:
                give_back(url, True, pool, conn)
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
        """The role this handle's session acts as (its log's appender role:
        ``events.stores.pg_schema.appender_role``), or None (the URL's user)."""
        row = self._pg.execute(_ROLE).fetchone()
        return None if row is None or row[0] == row[1] else str(row[0])

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        raw, self._raw = self._raw, None
        # Also when a reconnect failed (no connection held): the pool counts this user.
        give_back(self.url, self.readonly, self._pool_of, raw)

    @property
    def session(self) -> PgSession:
        """The handle's session: the projections read and write through it (in a batch, in the
        log's own transaction)."""
        return self._pg

    def has(self, name: str) -> bool:
        # In the log's own schema only (not wherever else the search path leads).
        row = self._pg.execute(_HAS, (name,)).fetchone()
        return bool(row and row[0])

    # --- the transaction ---------------------------------------------------------------------

    def _faults(self) -> AbstractContextManager[None]:
        return pg_faults(self.url)

    def _reading(self) -> AbstractContextManager[None]:
        return pg_reading(self.url)

    def _begin(self, statement: Statement) -> psycopg.Connection[Any]:
        """Begin on the session's connection, or on a new one if the server dropped it while
        it was idle (a restart): nothing was begun on the old one."""
        session = self._pg
        if session.raw.broken:
            session.renew()
        try:
            run(session.raw, statement)
        except psycopg.OperationalError:
            if not session.raw.broken:
                raise
            session.renew()
            run(session.raw, statement)
        session.held = True
        return session.raw

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[PgSession]:
        with self._lock, self._faults():
            self._begin(self.SNAPSHOT)
            try:
                yield self._pg
            finally:
                try:
                    if self._pg.in_transaction:
                        run(self._pg.raw, _COMMIT)
                finally:
                    self._pg.held = False

    def _start(self) -> None:
        raw = self._begin(_BEGIN)
        try:
            run(raw, _WRITERS, (self._key,))
        except BaseException as exc:
            with contextlib.suppress(psycopg.Error):
                run(raw, _ROLLBACK)
            self._pg.held = False
            if isinstance(exc, pgerrors.LockNotAvailable):
                raise WriterBusy(
                    f"another writer has held {display_url(self.url)} for {LOCK_TIMEOUT}"
                ) from None
            raise

    def _commit(self) -> None:
        raw = self._pg.raw
        if raw.info.transaction_status != psycopg.pq.TransactionStatus.INTRANS:
            # Lost (the server dropped the connection) or aborted (a statement failed and was
            # caught): PostgreSQL would answer a COMMIT with a warning, or a ROLLBACK.
            raise LogError("the transaction was lost before its commit: nothing of it is recorded")
        try:
            done = run(raw, _COMMIT)
        except psycopg.OperationalError as exc:
            raise StorageUnavailable(
                f"the connection to {display_url(self.url)} was lost during COMMIT ({exc}): the "
                "batch may or may not be recorded; sending it again is safe (the log takes each "
                "statement once)",
                path=display_url(self.url),
                reason=str(exc),
            ) from None
        if done.statusmessage != "COMMIT":
            raise LogError(f"the transaction was not committed ({done.statusmessage})")

    def _release(self) -> None:
        self._pg.held = False  # the advisory lock ended with the transaction

    # --- long reads, page by page ------------------------------------------------------------

    def _pages(self, start: int, end: int | None) -> Iterator[tuple[int, int]]:
        stop = self._stored_size() if end is None else end
        for low in range(start, stop, _PAGE):
            yield low, min(low + _PAGE, stop)

    def leaves(self, start: int = 0, end: int | None = None) -> Iterator[tuple[int, bytes]]:
        for low, high in self._pages(start, end):
            with self._reading():
                rows = self._conn.execute(LEAVES, (low, high)).fetchall()
            for seq, leaf in rows:
                yield int(seq), bytes(leaf)

    def rows(self, start: int = 0, end: int | None = None) -> Iterator[EntryRow]:
        for low, high in self._pages(start, end):
            with self._reading():
                rows = self._conn.execute(ROWS, (low, high)).fetchall()
            for seq, at, type_, subject, digest, lh, leaf in rows:
                yield EntryRow(int(seq), at, type_, subject, digest, bytes(lh), bytes(leaf))

    def headers(self, start: int = 0, end: int | None = None) -> Iterator[EntryHeader]:
        for low, high in self._pages(start, end):
            rows = self._conn.execute(HEADERS, (low, high)).fetchall()
            for row in rows:
                yield EntryHeader(*row)

    def shard_rows(
        self, size: int, shard: int, workers: int
    ) -> Iterator[tuple[int, str, str, bytes | None]]:
        raise LogError("a sharded rebuild reads a SQLite file; PostgreSQL rebuilds in one")


if TYPE_CHECKING:  # mypy proves that the adapter fulfils the port
    _PORT: type[LogStore[PgSession]] = PgLog
