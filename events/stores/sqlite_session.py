"""A session on one SQLite connection (``events.port.Session``): it sends each statement's
SQLite text (``events.statements``) and says SQLite's errors in the port's terms: a fault of
the storage as a ``StorageFault`` (``events.stores.faults.storage_fault``), any other refusal as
a ``StatementFailed``, the driver's error as the cause. Rows come back as SQLite gives them."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, Literal

from events.statements import Statement
from events.stores.faults import StatementFailed, StorageFault, storage_fault

__all__ = ["SqliteSession", "failure"]


def failure(exc: sqlite3.Error, path: Path | None) -> StorageFault | StatementFailed:
    """What a SQLite error on the database at ``path`` is, in the port's terms."""
    fault = storage_fault(exc, path)
    if fault is not None:
        return fault
    return StatementFailed(str(exc), code=getattr(exc, "sqlite_errorcode", None))


def _text(statement: Statement | str) -> str:
    """The SQLite text of ``statement`` (a plain string: SQLite's own SQL, as a test or a
    tool writes it), marked as run on SQLite."""
    if isinstance(statement, str):
        return statement
    text = statement.sqlite
    if text is None:
        raise LookupError(f"{statement!r} is not written for SQLite")
    statement.ran[0] = True
    return text


class Rows:
    """A SQLite cursor whose reads say SQLite's errors as the session does."""

    __slots__ = ("_cursor", "_path")

    def __init__(self, cursor: sqlite3.Cursor, path: Path | None) -> None:
        self._cursor = cursor
        self._path = path

    @property
    def rowcount(self) -> int:
        return self._cursor.rowcount

    @property
    def description(self) -> Any:
        return self._cursor.description

    def fetchone(self) -> Any:
        try:
            return self._cursor.fetchone()
        except sqlite3.Error as exc:
            raise failure(exc, self._path) from exc

    def fetchall(self) -> list[Any]:
        try:
            return self._cursor.fetchall()
        except sqlite3.Error as exc:
            raise failure(exc, self._path) from exc

    def __iter__(self) -> Iterator[Any]:
        return self

    def __next__(self) -> Any:
        # An iterator, not a generator: one a caller drops unfinished holds no frame that
        # would read the cursor again when it is collected (after its database closed).
        try:
            return next(self._cursor)
        except sqlite3.Error as exc:
            raise failure(exc, self._path) from exc

    def close(self) -> None:
        self._cursor.close()


class SqliteSession:
    """The session of one SQLite connection (``raw``) of the database at ``path`` (None: not
    a file the faults should name)."""

    __slots__ = ("path", "raw")

    def __init__(self, conn: sqlite3.Connection, path: Path | None = None) -> None:
        self.raw = conn
        self.path = path

    @property
    def dialect(self) -> Literal["sqlite"]:
        return "sqlite"

    def execute(self, statement: Statement | str, parameters: Sequence[Any] = (), /) -> Rows:
        text = _text(statement)
        try:
            return Rows(self.raw.execute(text, parameters), self.path)
        except sqlite3.Error as exc:
            raise failure(exc, self.path) from exc

    def executemany(self, statement: Statement | str, rows: Iterable[Sequence[Any]], /) -> Rows:
        text = _text(statement)
        try:
            return Rows(self.raw.executemany(text, rows), self.path)
        except sqlite3.Error as exc:
            raise failure(exc, self.path) from exc

    def script(self, statement: Statement | str) -> None:
        """Run the statements of a script (``;``-separated, no parameters), each committed as
        the script says (SQLite's ``executescript``)."""
        text = _text(statement)
        try:
            self.raw.executescript(text)
        except sqlite3.Error as exc:
            raise failure(exc, self.path) from exc

    @property
    def in_transaction(self) -> bool:
        return self.raw.in_transaction

    def close(self) -> None:
        self.raw.close()
