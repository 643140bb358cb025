"""The projections' SQL on PostgreSQL: a session with the shape of a ``sqlite3.Connection``.

The projections (``projections/``) and the service's own small tables are written once, in the
SQL that SQLite and PostgreSQL share, with SQLite's ``?`` placeholders. ``PgSession`` runs that
SQL on a psycopg connection, rewriting the few SQLite spellings the code uses into PostgreSQL's
(once per statement text; the result is cached):

- placeholders: ``?`` becomes ``%s`` and ``:name`` (with a mapping of parameters) ``%(name)s``;
  a literal ``%`` is doubled;
- ``INSERT OR IGNORE`` becomes ``INSERT … ON CONFLICT DO NOTHING``;
- in ``CREATE TABLE``: ``INTEGER`` is ``BIGINT``, ``REAL`` is ``DOUBLE PRECISION``, ``BLOB`` is
  ``BYTEA``, and ``TEXT`` compares bytewise (``COLLATE "C"``, as SQLite's ``BINARY``), so that
  every order and every range over text is the same on both stores;
- ``json_extract(CAST(col AS TEXT), '$.a.b')`` reads the JSON bytes with ``#>>`` (as text,
  collated ``"C"``), and ``LIKE`` is ``ILIKE`` (SQLite's ``LIKE`` ignores ASCII case). PostgreSQL's
  text holds no U+0000: a ``\\u0000`` in the JSON reads as U+0001, the character that sorts
  next to it, so that a name holding one sorts as on SQLite (which keeps the NUL), and a text
  value written with a U+0000 is written with a U+0001 (a projection row holding one then
  differs from SQLite's in that character; the log's own bytes never do);
- ``PRAGMA table_info(t)`` reads ``information_schema``; ``PRAGMA schema_version`` answers a
  number that changes when the projection tables are made again (the keyring cache's cookie);
- ``main.`` (SQLite's name of the connection's own database) is dropped.

Values come back as SQLite gives them: booleans as 0 and 1, whole ``numeric`` results (a
``sum`` of integers) as ``int``; a Python ``bool`` is written as an integer.
"""

from __future__ import annotations

import decimal
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import lru_cache
from typing import Any

import psycopg
from psycopg.adapt import Dumper, Loader
from psycopg.pq import Format

__all__ = ["PgSession", "adapt", "translate"]

_LITERAL = re.compile(r"'(?:[^']|'')*'")
_NAMED = re.compile(r"(?<![:\w]):([A-Za-z_]\w*)")
_IGNORE = re.compile(r"^\s*INSERT\s+OR\s+IGNORE\s+INTO\b", re.I)
_CREATE_TABLE = re.compile(r"^\s*CREATE\s+TABLE\b", re.I)
_TYPES = (
    (re.compile(r"\bINTEGER\b"), "BIGINT"),
    (re.compile(r"\bREAL\b"), "DOUBLE PRECISION"),
    (re.compile(r"\bBLOB\b"), "BYTEA"),
    (re.compile(r"\bTEXT\b"), 'TEXT COLLATE "C"'),
)
_JSON = re.compile(r"json_extract\(CAST\((\w+) AS TEXT\), '\$\.([\w.]+)'\)")
_LIKE = re.compile(r"\bLIKE\b")
_MAIN = re.compile(r"\bmain\.(?=\w)")
_TABLE_INFO = re.compile(r"^\s*PRAGMA\s+table_info\((\w+)\)\s*$", re.I)
_SCHEMA_VERSION = re.compile(r"^\s*PRAGMA\s+schema_version\s*$", re.I)


def _outside_literals(sql: str, change: Any) -> str:
    """Apply ``change`` to the parts of ``sql`` outside its string literals."""
    out, at = [], 0
    for match in _LITERAL.finditer(sql):
        out.append(change(sql[at : match.start()]))
        out.append(match.group(0))
        at = match.end()
    out.append(change(sql[at:]))
    return "".join(out)


@lru_cache(maxsize=4096)
def translate(sql: str, named: bool = False, bound: bool = True) -> str:
    """The PostgreSQL spelling of one statement written for SQLite (see the module's text);
    ``named``: its parameters come as a mapping (``:name``); ``bound=False``: it is sent with
    no parameters (psycopg then reads no placeholder, so a ``%`` stays as it is)."""
    info = _TABLE_INFO.match(sql)
    if info:
        return (
            "SELECT ordinal_position - 1, column_name FROM information_schema.columns"  # noqa: S608
            f" WHERE table_schema = current_schema() AND table_name = '{info.group(1)}'"
            " ORDER BY ordinal_position"
        )
    if _SCHEMA_VERSION.match(sql):
        # Projection tables made again get a new oid: the cookie moves, as SQLite's does.
        return "SELECT coalesce(to_regclass('p_keys')::oid::bigint, 0)"
    if _CREATE_TABLE.match(sql):
        for pattern, spelling in _TYPES:
            sql = pattern.sub(spelling, sql)
    ignore = _IGNORE.match(sql)
    if ignore:
        sql = "INSERT INTO" + sql[ignore.end() :] + " ON CONFLICT DO NOTHING"
    if bound:
        sql = sql.replace("%", "%%")

    def change(part: str) -> str:
        part = _MAIN.sub("", part)
        part = _LIKE.sub("ILIKE", part)
        if named:
            return _NAMED.sub(r"%(\1)s", part)
        return part.replace("?", "%s")

    sql = _outside_literals(sql, change)
    # After the placeholders: the path literal is not a parameter.
    return _JSON.sub(
        lambda m: (
            f"((replace(convert_from({m.group(1)}, 'UTF8'), '\\u0000', '\\u0001')::jsonb"
            f" #>> '{{{m.group(2).replace('.', ',')}}}')"
            ' COLLATE "C")'
        ),
        sql,
    )


class _IntFromBool(Loader):
    def load(self, data: Any) -> int:
        return 1 if bytes(data) == b"t" else 0


class _WholeNumeric(Loader):
    def load(self, data: Any) -> int | float:
        value = decimal.Decimal(bytes(data).decode())
        return int(value) if value == value.to_integral_value() else float(value)


class _TextWithoutNul(Dumper):
    """``str`` as psycopg writes it (untyped text: the server infers the type), except that a
    U+0000, which PostgreSQL's text cannot hold, is written as U+0001 (as the JSON reads)."""

    format = Format.TEXT
    oid = 0

    def dump(self, obj: Any) -> bytes:
        text = str(obj)
        if "\0" in text:
            text = text.replace("\0", "\x01")
        return text.encode()


class _BoolAsInt(Dumper):
    format = Format.TEXT
    oid = psycopg.adapters.types["int8"].oid

    def dump(self, obj: Any) -> bytes:
        return b"1" if obj else b"0"


def adapt(conn: psycopg.Connection[Any]) -> None:
    """Make ``conn`` answer values as SQLite does (booleans as integers, whole numerics as
    ``int``) and write ``bool`` as an integer."""
    conn.adapters.register_loader("bool", _IntFromBool)
    conn.adapters.register_loader("numeric", _WholeNumeric)
    conn.adapters.register_dumper(bool, _BoolAsInt)
    conn.adapters.register_dumper(str, _TextWithoutNul)


def _is_read(sql: str) -> bool:
    head = sql.lstrip()[:8].upper()
    return head.startswith(("SELECT", "PRAGMA"))


class PgSession:
    """A psycopg connection with the calls of ``sqlite3.Connection`` the projections use
    (``execute``, ``executemany``), their SQL translated (``translate``). Transactions are the
    store's: this only runs statements inside whatever the store began.

    ``reconnect``, when given, replaces a connection the server dropped (a restart, a fail-over),
    but only between the store's transactions (``held`` is false): a read that meets a dropped
    connection there is run again once on the new one. Inside a transaction or a snapshot,
    and for anything but a read, the error is raised as it came: a transaction is never
    continued on another connection, and a write is never run twice."""

    def __init__(
        self,
        conn: psycopg.Connection[Any],
        reconnect: Callable[[], psycopg.Connection[Any]] | None = None,
    ) -> None:
        self.raw = conn
        self._reconnect = reconnect
        self.held = False  # the store has a transaction or a snapshot open on this session

    def execute(self, sql: str, parameters: Sequence[Any] | Mapping[str, Any] = ()) -> Any:
        free = not self.held and self._reconnect is not None
        if free and self.raw.broken:
            self.renew()
        try:
            return self._execute(sql, parameters)
        except psycopg.OperationalError:
            # Decided on what held before the statement: a broken connection's own state says
            # nothing any more.
            if not (free and self.raw.broken and _is_read(sql)):
                raise
            self.renew()
            return self._execute(sql, parameters)

    def renew(self) -> None:
        """Replace the connection by a new one (the store's ``reconnect``)."""
        if self._reconnect is None:
            raise psycopg.OperationalError("the connection was lost")
        self.raw = self._reconnect()

    def _execute(self, sql: str, parameters: Sequence[Any] | Mapping[str, Any]) -> Any:
        cursor = self.raw.cursor()
        if isinstance(parameters, Mapping):
            cursor.execute(translate(sql, True), parameters)
        elif parameters:
            cursor.execute(translate(sql), tuple(parameters))
        else:
            cursor.execute(translate(sql, bound=False))
        return cursor

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> Any:
        batch = [tuple(row) for row in rows]
        cursor = self.raw.cursor()
        if batch:
            cursor.executemany(translate(sql), batch)
        return cursor

    @property
    def in_transaction(self) -> bool:
        """Whether a transaction is open on the connection (a dropped connection has none: the
        server rolled it back)."""
        if self.raw.broken or self.raw.closed:
            return False
        return self.raw.info.transaction_status != psycopg.pq.TransactionStatus.IDLE

    def close(self) -> None:
        self.raw.close()
