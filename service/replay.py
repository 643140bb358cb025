"""``benchproof replay``: rebuild every projection from position 0, from the log alone, and
compare each table with the incrementally maintained one, row by row.

The rebuild goes into fresh scratch databases, never into the live tables: the comparison holds
a read snapshot of the live ones, so the service goes on appending meanwhile. From
``service.ledger.PARALLEL_FROM`` entries on, the rebuild runs on every core
(``projections.shards``). Only when a table differs does the rebuild replace the live
projections, under the write lock, so that they are what the log says."""

from __future__ import annotations

import hashlib
import itertools
import sqlite3
from collections.abc import Iterator, Sequence
from typing import Any

import msgspec

from projections import schema
from service.ledger import Ledger, scratch_folder

__all__ = ["Difference", "ReplayReport", "replay", "table_digest"]


class Difference(msgspec.Struct, frozen=True):
    table: str
    incremental: list[Any] | None
    rebuilt: list[Any] | None


class ReplayReport(msgspec.Struct):
    entries: int
    digests: dict[str, str]
    differences: list[Difference]

    @property
    def ok(self) -> bool:
        return not self.differences


def _columns(conn: sqlite3.Connection, table: str) -> list[str]:
    return [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]


def _ordered(conn: sqlite3.Connection, source: str, columns: Sequence[str]) -> sqlite3.Cursor:
    order = ", ".join(f'"{c}"' for c in columns)
    return conn.execute(f"SELECT * FROM ({source}) ORDER BY {order}")  # noqa: S608


def _encode(row: tuple[Any, ...] | None) -> list[Any] | None:
    if row is None:
        return None
    return [v.decode("utf-8", "replace") if isinstance(v, bytes) else v for v in row]


_PACK = msgspec.msgpack.Encoder()
_MOD = 1 << 256


def _digest(rows: Iterator[tuple[Any, ...]]) -> str:
    """A digest of a multiset of rows, whatever their order: the sum, modulo 2^256, of the
    SHA-256 of each row (as MessagePack, which keeps text, bytes, integers and doubles
    apart). No sort is needed, and rows read from several databases simply add up."""
    total = 0
    for row in rows:
        total += int.from_bytes(hashlib.sha256(_PACK.encode(row)).digest(), "big")
    return f"{total % _MOD:064x}"


def table_digest(conn: sqlite3.Connection, table: str) -> str:
    """The digest of a projection table's rows (``_digest``)."""
    return _digest(conn.execute(f"SELECT * FROM {table}"))  # noqa: S608


def replay(ledger: Ledger, *, parallel: bool | None = None, batch_size: int = 4000) -> ReplayReport:
    """Rebuild the projections of ``ledger`` from its log into scratch databases and compare
    them with the incremental ones (as of one read snapshot). If any table differs, the rebuilt
    projections then replace the live ones: they are what the log says."""
    conn = ledger.store.session
    with scratch_folder(ledger.data.root, "replay") as tmp:
        conn.execute("BEGIN")  # a read snapshot: appends by others are not seen, nor blocked
        try:
            size = ledger.projections.position()
            rebuilt, schemas = ledger.rebuild_scratch(
                size, tmp, parallel=parallel, batch_size=batch_size
            )
        except BaseException:
            conn.execute("COMMIT")
            raise
        try:
            try:
                digests, differences = _compare(conn, rebuilt, schemas)
            finally:
                conn.execute("COMMIT")
            if differences:
                ledger.adopt_rebuild(rebuilt, schemas, size)
        finally:
            rebuilt.close()
    return ReplayReport(size, digests, differences)


def _compare(
    live: sqlite3.Connection, rebuilt: sqlite3.Connection, schemas: Sequence[str]
) -> tuple[dict[str, str], list[Difference]]:
    """Each table's digest as rebuilt, and the first differing row of each table whose live
    digest is another."""
    digests: dict[str, str] = {}
    differences: list[Difference] = []
    for table in schema.TABLES:
        source = schema.rebuilt_rows(schemas, table)
        digests[table] = _digest(rebuilt.execute(source))
        if table_digest(live, f"main.{table}") == digests[table]:
            continue
        # Only now, to name the first differing row: both sides in one order.
        columns, current = _columns(live, table), f"SELECT * FROM main.{table}"  # noqa: S608
        old, new = _ordered(live, current, columns), _ordered(rebuilt, source, columns)
        try:
            pairs = itertools.zip_longest(old, new)
            a, b = next(((a, b) for a, b in pairs if a != b), (None, None))
        finally:
            old.close()
            new.close()
        differences.append(Difference(table, _encode(a), _encode(b)))
    return digests, differences
