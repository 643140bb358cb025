"""``benchproof replay``: drop and rebuild every projection from position 0, then compare each
table with the incrementally maintained one, row by row."""

from __future__ import annotations

import hashlib
import itertools
import sqlite3
from collections.abc import Iterator
from typing import Any

import msgspec

from projections import schema
from service.ledger import Ledger

__all__ = ["Difference", "ReplayReport", "replay"]

_ENC = msgspec.json.Encoder()


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


def _rows(conn: sqlite3.Connection, table: str) -> Iterator[tuple[Any, ...]]:
    schema_name, _, name = table.rpartition(".")
    pragma = (
        f"PRAGMA {schema_name}.table_info({name})" if schema_name else f"PRAGMA table_info({name})"
    )
    columns = [r[1] for r in conn.execute(pragma)]
    order = ", ".join(f'"{c}"' for c in columns)
    yield from conn.execute(f"SELECT * FROM {table} ORDER BY {order}")  # noqa: S608


def _encode(row: tuple[Any, ...] | None) -> list[Any] | None:
    if row is None:
        return None
    return [v.decode("utf-8", "replace") if isinstance(v, bytes) else v for v in row]


def table_digest(conn: sqlite3.Connection, table: str) -> str:
    h = hashlib.sha256()
    for row in _rows(conn, table):
        h.update(_ENC.encode(_encode(row)) + b"\n")
    return h.hexdigest()


def replay(ledger: Ledger, *, parallel: bool | None = None, batch_size: int = 4000) -> ReplayReport:
    """Rebuild the projections of ``ledger`` in one transaction and compare them with the
    incremental ones. The rebuilt tables stay (they are what the log says). ``parallel``: read
    and prepare the entries in a reader process (``projections.prepare``); by default, for
    logs of ``service.ledger.PARALLEL_FROM`` entries or more."""
    conn = ledger.store.connection
    conn.execute("BEGIN IMMEDIATE")
    try:
        for table in schema.TABLES:
            conn.execute(f"DROP TABLE IF EXISTS temp.old_{table}")
            conn.execute(f"CREATE TEMP TABLE old_{table} AS SELECT * FROM main.{table}")  # noqa: S608
        count = ledger.rebuild_projections(parallel=parallel, batch_size=batch_size)
        digests: dict[str, str] = {}
        differences: list[Difference] = []
        for table in schema.TABLES:
            new_digest = table_digest(conn, table)
            digests[table] = new_digest
            if table_digest(conn, f"temp.old_{table}") == new_digest:
                continue
            old_rows, new_rows = list(_rows(conn, f"temp.old_{table}")), list(_rows(conn, table))
            for a, b in itertools.zip_longest(old_rows, new_rows):
                if a != b:
                    differences.append(Difference(table, _encode(a), _encode(b)))
                    break
        for table in schema.TABLES:
            conn.execute(f"DROP TABLE temp.old_{table}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return ReplayReport(count, digests, differences)
