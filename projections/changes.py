"""What a batch of entries changes in the projections, gathered in memory by the fold
(``projections.batch.Batch``) and written at the end of the batch in one go by
``projections.rows.RowStore.write``.

A versioned row made by the entry at position ``s`` is valid from tree size ``s + 1``; a later
change to the same key within the batch closes it (its ``valid_to``), and the first change to a
key whose current row is in the database closes that row instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Generic, TypeVar

from events.keyring import KeyView
from projections.views import GroupView, RunView

__all__ = ["RowChanges", "Versions"]

V = TypeVar("V")


class Versions(Generic[V]):
    """Version rows of one versioned table, gathered during a batch."""

    def __init__(self) -> None:
        self.rows: dict[str, list[list[Any]]] = {}  # key -> [[valid_from, valid_to, payload]]
        self.close_db: dict[str, int] = {}  # key -> valid_to for the row current before the batch

    def add(self, key: str, valid_from: int, payload: V, *, had_db_row: bool) -> None:
        """Record ``payload`` as the version of ``key`` from ``valid_from`` on; ``had_db_row``:
        the database holds a current row for ``key`` (closed by the first version)."""
        versions = self.rows.setdefault(key, [])
        if versions and versions[-1][0] == valid_from:
            versions[-1][2] = payload  # two changes at one position: the last one stands
            return
        if versions:
            versions[-1][1] = valid_from
        elif had_db_row:
            self.close_db[key] = valid_from
        versions.append([valid_from, None, payload])


class RowChanges:
    """Every row a batch adds, closes or deletes, by table."""

    def __init__(self) -> None:
        self.runs: Versions[RunView] = Versions()
        self.groups: Versions[GroupView] = Versions()
        # (valid_to, group, run, valid_from) of leader rows in the database to close.
        self.leaders_closed: list[tuple[int, str, str, int]] = []
        # New leader rows by (group, run, valid_from); their valid_to may be set later.
        self.leaders_new: dict[tuple[str, str, int], list[Any]] = {}
        self.waiting_add: set[tuple[str, str]] = set()  # (awaited digest, run)
        self.waiting_del: set[tuple[str, str]] = set()
        self.aliases: list[tuple[str, str, int]] = []
        self.signed: list[tuple[str, int]] = []  # (signing key id, position) of each entry
        self.manifests: dict[
            str, tuple[str, str, int, bytes, str | None]
        ] = {}  # digest -> kind, name, at, body, title
        self.inserts: dict[str, list[tuple[Any, ...]]] = {}  # table -> rows (``records.Insert``)
        self.updates: dict[
            str, list[tuple[Any, ...]]
        ] = {}  # statement -> rows (``records.Update``)
        self.keys: Mapping[str, KeyView] | None = None  # the whole keyring, when it changed
        self.keys_at = 0  # the tree size after the last entry that changed it
