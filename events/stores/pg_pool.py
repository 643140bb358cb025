"""PostgreSQL connections for the log store: one ``psycopg_pool`` pool per URL and process
(a read handle borrows a connection and keeps it until it closes; the pool's last user closes
it), each session set up as the store needs it (durable commits, the writers' lock timeout, the
appender role), and the server's errors said in the port's terms (``StorageFault``)."""

from __future__ import annotations

import contextlib
import logging
import os
import re
import threading
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import psycopg
from psycopg_pool import ConnectionPool, PoolTimeout

from events.errors import LogCorrupted, LogError
from events.statements import sql
from events.stores.faults import StatementFailed, StorageDamaged, StorageFault
from events.stores.pg_schema import act_as_appender
from events.stores.pgsql import PgSession, pg_fault, run

__all__ = [
    "LOCK_TIMEOUT",
    "POOL_SIZE",
    "borrow",
    "check_url",
    "display_url",
    "give_back",
    "pg_fault",
    "pg_faults",
    "pg_reading",
    "pg_session",
]

LOCK_TIMEOUT = "60s"
"""How long a writer waits for another's lock before it gives up (``WriterBusy``)."""

POOL_SIZE = 64
"""Connections a process may hold on one store (each thread's read handle holds one)."""


_PASSWORD_OPTION = re.compile(r"(?i)(^|&)(password=)[^&]*")
_DURABLE = sql(postgresql="SET synchronous_commit = on")
_LOCK_TIMEOUT = sql(postgresql=f"SET lock_timeout = '{LOCK_TIMEOUT}'")
_READ_ONLY = sql(postgresql="SET default_transaction_read_only = on")
_ROLLBACK = sql(postgresql="ROLLBACK")


def display_url(url: str) -> str:
    """``url`` without its password (in the authority, or libpq's ``password=`` option): what
    an error or a log line may show."""
    parts = urlsplit(url)
    if parts.password is not None:
        netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
        parts = parts._replace(netloc=netloc)
    if "password" in parts.query.lower():
        parts = parts._replace(query=_PASSWORD_OPTION.sub(r"\1\2***", parts.query))
    return parts.geturl()


@contextlib.contextmanager
def pg_faults(url: str) -> Iterator[None]:
    """The block's psycopg errors of storage as ``StorageFault``s; any other error as it is."""
    try:
        yield
    except (psycopg.Error, PoolTimeout) as exc:
        fault = pg_fault(exc, display_url(url))
        if fault is None:
            raise
        raise fault from exc


_POOLS: dict[tuple[str, bool], tuple[ConnectionPool[Any], int]] = {}  # and its users
_POOLS_LOCK = threading.Lock()
# The pool's own warnings (each failed try to connect) go to the service's log when it has one,
# never to a command's terminal as Python's last-resort handler would print them.
logging.getLogger("psycopg.pool").addHandler(logging.NullHandler())


def _session_options(url: str) -> dict[str, Any]:
    """Autocommit (the store begins its own transactions), and a name that says which process
    holds the connection (``pg_stat_activity``), unless the URL or ``$PGAPPNAME`` names one."""
    options: dict[str, Any] = {"autocommit": True}
    named = "application_name" in parse_qs(urlsplit(url).query) or os.environ.get("PGAPPNAME")
    if not named:
        options["application_name"] = f"benchproof {os.getpid()}"
    return options


def _configure(readonly: bool) -> Any:
    def configure(conn: psycopg.Connection[Any]) -> None:
        run(conn, _DURABLE)
        run(conn, _LOCK_TIMEOUT)
        if readonly:
            run(conn, _READ_ONLY)
        act_as_appender(conn)  # where this user may (``PgLog.role`` says whether it does)

    return configure


def borrow(url: str, readonly: bool) -> tuple[ConnectionPool[Any], psycopg.Connection[Any]]:
    """A connection from this process's pool of ``url`` (made at its first user), which counts
    one more user until ``give_back``.

    Raises:
        psycopg.Error: the server cannot be reached, or refuses the user (its own words).
    """
    key = (url, readonly)
    with _POOLS_LOCK:
        pool, users = _POOLS.get(key, (None, 0))
        if pool is not None:
            _POOLS[key] = (pool, users + 1)
    if pool is None:
        pool = _new_pool(url, readonly)  # outside the lock: others' borrows do not wait on it
        with _POOLS_LOCK:
            held, users = _POOLS.get(key, (None, 0))
            if held is not None:  # another thread made one meanwhile: use it
                pool.close()
                pool = held
            _POOLS[key] = (pool, users + 1)
    try:
        return pool, pool.getconn()
    except BaseException:
        give_back(url, readonly, pool, None)
        raise


def _new_pool(url: str, readonly: bool) -> ConnectionPool[Any]:
    # One connection made directly first: a server that cannot be reached, a wrong password,
    # say so in the server's own words, at once (the pool would retry in the background, then
    # time out saying only that).
    options = _session_options(url)
    psycopg.connect(url, connect_timeout=10, **options).close()
    pool: ConnectionPool[Any] = ConnectionPool(
        url,
        min_size=1,
        max_size=POOL_SIZE,
        kwargs=options,
        configure=_configure(readonly),
        # A connection the server dropped while it waited in the pool is not handed out (one
        # round trip per borrow; handles borrow once and keep it).
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
    return pool


def give_back(
    url: str, readonly: bool, pool: ConnectionPool[Any], conn: psycopg.Connection[Any] | None
) -> None:
    """Return ``conn`` to its pool; the pool's last user closes it (a process that opened
    many stores, as a test run does, holds no connection to the ones it is done with)."""
    if conn is not None:
        with contextlib.suppress(psycopg.Error):
            if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                run(conn, _ROLLBACK)
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


@contextlib.contextmanager
def pg_session(url: str) -> Iterator[PgSession]:
    """A session on a pooled connection of ``url`` for the service's own small tables
    (challenges, rate limits): autocommit, or one transaction begun with ``BEGIN``."""
    check_url(url)
    with pg_faults(url):
        pool, conn = borrow(url, False)
    try:
        with pg_faults(url):
            yield PgSession(conn, where=display_url(url))
    finally:
        give_back(url, False, pool, conn)


def check_url(url: str) -> None:
    if urlsplit(url).scheme not in ("postgresql", "postgres"):
        raise LogError(f"not a PostgreSQL URL: {display_url(url)}")


@contextlib.contextmanager
def pg_reading(url: str) -> Iterator[None]:
    """A read's errors: a fault of the storage as it is, anything else (damaged data, a table
    that is not the log's) as ``LogCorrupted``."""
    try:
        yield
    except (psycopg.Error, PoolTimeout, StorageFault, StatementFailed) as exc:
        cause = exc.__cause__ if isinstance(exc, StorageFault | StatementFailed) else exc
        if not isinstance(cause, psycopg.Error | PoolTimeout):
            raise
        fault = pg_fault(cause, display_url(url))
        if fault is not None and not isinstance(fault, StorageDamaged):
            raise fault from None
        raise LogCorrupted(f"the log cannot be read: {cause}") from None
