"""A session on one psycopg connection (``events.port.Session``), and PostgreSQL's errors said
in the port's terms.

``PgSession`` sends each statement's PostgreSQL text (``events.statements``: written for
PostgreSQL, or in the SQL both stores speak, rendered for psycopg's parameter style when it was
defined): nothing is rewritten while it runs, and values come back as psycopg reads them. The
statements ask for what both stores answer alike (integers, not booleans; no ``numeric``
results), so nothing needs a loader of its own.

PostgreSQL's errors never leave it: a fault of the storage (the server unreachable, out of
disk, read-only, a lock held too long, damaged data) is raised as a ``StorageFault``
(``pg_fault``), any other refusal as a ``StatementFailed``, psycopg's error as the cause.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, Literal

import psycopg
from psycopg import errors as pgerrors
from psycopg_pool import PoolTimeout

from events.statements import Statement
from events.stores.faults import (
    StatementFailed,
    StorageBusy,
    StorageDamaged,
    StorageFault,
    StorageFull,
    StorageReadOnly,
    StorageUnavailable,
)

__all__ = ["PgSession", "failure", "pg_fault", "run"]


def pg_fault(exc: BaseException, where: str) -> StorageFault | None:
    """The storage fault a psycopg error is (None: no fault of the storage: a bug, a
    constraint); ``where`` names the store (its URL without the password)."""
    if isinstance(exc, StorageFault):
        return exc
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


def failure(exc: psycopg.Error | PoolTimeout, where: str) -> StorageFault | StatementFailed:
    """What a psycopg error on the store ``where`` is, in the port's terms."""
    fault = pg_fault(exc, where)
    if fault is not None:
        return fault
    return StatementFailed(str(exc), sqlstate=getattr(exc, "sqlstate", None))


def run(
    conn: psycopg.Connection[Any], statement: Statement, parameters: Sequence[Any] = ()
) -> psycopg.Cursor[Any]:
    """Send ``statement`` on a bare connection (the store's own set-up, before a session
    holds it), psycopg's errors as they are (the caller says them in the port's terms)."""
    text = statement.postgresql
    if text is None:
        raise LookupError(f"{statement!r} is not written for PostgreSQL")
    statement.ran[1] = True
    return conn.execute(text, parameters)


def _is_read(text: str) -> bool:
    return text.lstrip()[:6].upper() == "SELECT"


class PgSession:
    """A psycopg connection (``raw``) as a session of the store ``where``. Transactions are the
    store's: this only runs statements inside whatever the store began.

    ``reconnect``, when given, replaces a connection the server dropped (a restart, a fail-over),
    but only between the store's transactions (``held`` is false): a read that meets a dropped
    connection there is run again once on the new one. Inside a transaction or a snapshot,
    and for anything but a read, the error is raised: a transaction is never continued on
    another connection, and a write is never run twice."""

    def __init__(
        self,
        conn: psycopg.Connection[Any],
        reconnect: Callable[[], psycopg.Connection[Any]] | None = None,
        *,
        where: str = "the log's database",
    ) -> None:
        self.raw = conn
        self.where = where
        self._reconnect = reconnect
        self.held = False  # the store has a transaction or a snapshot open on this session

    @property
    def dialect(self) -> Literal["postgresql"]:
        return "postgresql"

    def execute(self, statement: Statement | str, parameters: Sequence[Any] = (), /) -> Any:
        if isinstance(statement, str):  # PostgreSQL's own SQL, as a test or a tool writes it
            text: str = statement
            bound: Sequence[Any] | None = parameters or None
        else:
            found = statement.postgresql
            if found is None:
                raise LookupError(f"{statement!r} is not written for PostgreSQL")
            statement.ran[1] = True
            text, bound = found, parameters
        free = not self.held and self._reconnect is not None
        try:
            if free and self.raw.broken:
                self.renew()
            try:
                return self.raw.execute(text, bound)
            except psycopg.OperationalError:
                # Decided on what held before the statement: a broken connection's own state
                # says nothing any more.
                if not (free and self.raw.broken and _is_read(text)):
                    raise
                self.renew()
                return self.raw.execute(text, bound)
        except (psycopg.Error, PoolTimeout) as exc:
            raise failure(exc, self.where) from exc

    def renew(self) -> None:
        """Replace the connection by a new one (the store's ``reconnect``).

        Raises:
            psycopg.OperationalError: there is none to make.
        """
        if self._reconnect is None:
            raise psycopg.OperationalError("the connection was lost")
        self.raw = self._reconnect()

    def executemany(self, statement: Statement | str, rows: Iterable[Sequence[Any]], /) -> Any:
        if isinstance(statement, str):
            text: str = statement
        else:
            found = statement.postgresql
            if found is None:
                raise LookupError(f"{statement!r} is not written for PostgreSQL")
            statement.ran[1] = True
            text = found
        batch = rows if isinstance(rows, list) else list(rows)
        try:
            cursor = self.raw.cursor()
            if batch:
                cursor.executemany(text, batch)
            return cursor
        except (psycopg.Error, PoolTimeout) as exc:
            raise failure(exc, self.where) from exc

    @property
    def in_transaction(self) -> bool:
        """Whether a transaction is open on the connection (a dropped connection has none: the
        server rolled it back)."""
        if self.raw.broken or self.raw.closed:
            return False
        return self.raw.info.transaction_status != psycopg.pq.TransactionStatus.IDLE

    def close(self) -> None:
        self.raw.close()
