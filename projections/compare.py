"""Comparing projection tables: an order-free digest of a table's rows, and, where two copies
of the projections differ, the first differing row of each table that does.

``benchproof replay`` (``service.app.replay``) compares the live projections with a scratch
rebuild from the log (``schema.rebuilt_rows`` reads a rebuilt table from its databases).
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Iterable, Sequence
from typing import Any

import msgspec

from events.port import Cursor, Session
from events.statements import sql
from projections import schema

__all__ = ["Difference", "compare_tables", "rows_digest", "table_digest"]

# The live tables are the store's (SQLite's main database, or PostgreSQL's schema); the rebuilt
# ones are in scratch SQLite databases (``schema.rebuilt_rows``).
_COLUMNS = sql(
    sqlite="SELECT name FROM pragma_table_info('{table}') ORDER BY cid",
    postgresql="SELECT column_name FROM information_schema.columns"
    " WHERE table_schema = current_schema() AND table_name = '{table}' ORDER BY ordinal_position",
)
_LIVE_ROWS = sql(sqlite="SELECT * FROM main.{table}", postgresql="SELECT * FROM {table}")
_LIVE_ORDERED = sql(
    sqlite="SELECT * FROM main.{table} ORDER BY {order}",
    postgresql="SELECT * FROM {table} ORDER BY {order}",
)
_REBUILT_ORDERED = sql(sqlite="SELECT * FROM ({source}) AS rows_ ORDER BY {order}")


class Difference(msgspec.Struct, frozen=True):
    """The first row in which a table differs: as the live projections hold it and as rebuilt
    (None where one side has no more rows); bytes are shown as text."""

    table: str
    incremental: list[Any] | None
    rebuilt: list[Any] | None


def _columns(conn: Session, table: str) -> list[str]:
    return [r[0] for r in conn.execute(_COLUMNS.named(table=table))]


def _order(columns: Sequence[str]) -> str:
    return ", ".join(f'"{c}"' for c in columns)


def _encode(row: tuple[Any, ...] | None) -> list[Any] | None:
    if row is None:
        return None
    return [v.decode("utf-8", "replace") if isinstance(v, bytes) else v for v in row]


_PACK = msgspec.msgpack.Encoder()
_MOD = 1 << 256


def rows_digest(rows: Iterable[tuple[Any, ...]]) -> str:
    """A digest of a multiset of rows, whatever their order: the sum, modulo 2^256, of the
    SHA-256 of each row (as MessagePack, which keeps text, bytes, integers and doubles
    apart). No sort is needed, and rows read from several databases simply add up."""
    total = 0
    for row in rows:
        total += int.from_bytes(hashlib.sha256(_PACK.encode(row)).digest(), "big")
    return f"{total % _MOD:064x}"


def table_digest(conn: Session, table: str) -> str:
    """The digest of a projection table's rows (``rows_digest``) as the store holds it."""
    return rows_digest(conn.execute(_LIVE_ROWS.named(table=table)))


def compare_tables(
    live: Session, rebuilt: Session, schemas: Sequence[str]
) -> tuple[dict[str, str], list[Difference]]:
    """Each table's digest as rebuilt (``rebuilt`` reads it from its attached ``schemas``),
    and the first differing row of each table whose live digest is another."""
    digests: dict[str, str] = {}
    differences: list[Difference] = []
    for table in schema.TABLES:
        source = schema.rebuilt_rows(schemas, table)
        digests[table] = rows_digest(rebuilt.execute(source))
        if table_digest(live, table) == digests[table]:
            continue
        # Only now, to name the first differing row: both sides in one order.
        order = _order(_columns(live, table))
        old: Cursor = live.execute(_LIVE_ORDERED.named(table=table, order=order))
        new: Cursor = rebuilt.execute(
            _REBUILT_ORDERED.named(source=source.text("sqlite"), order=order)
        )
        try:
            pairs = itertools.zip_longest(old, new)
            a, b = next(((a, b) for a, b in pairs if a != b), (None, None))
        finally:
            old.close()
            new.close()
        differences.append(Difference(table, _encode(a), _encode(b)))
    return digests, differences
