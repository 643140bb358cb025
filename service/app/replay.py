"""``benchproof replay``: rebuild every projection from position 0, from the log alone, and
compare each table with the incrementally maintained one, row by row
(``projections.compare``).

The rebuild goes into fresh scratch databases, never into the live tables: the comparison holds
a read snapshot of the live ones (``LogStore.snapshot``), so the service goes on appending
meanwhile. The rebuild runs on every core as ``service.core.rebuild`` decides (from
``PARALLEL_FROM`` entries on). Only when a table differs does the rebuild replace the live
projections, under the write lock, so that they are what the log says. A mirror replays as a
ledger does: the projections are its own, the log its origin's."""

from __future__ import annotations

import contextlib

import msgspec

from projections.compare import Difference, compare_tables
from service.core.logs import OpenedLog
from service.core.rebuild import scratch_folder

__all__ = ["ReplayReport", "replay"]


class ReplayReport(msgspec.Struct):
    """What a replay did: the entries it rebuilt, each table's digest as rebuilt, and the
    first differing row of each table that differed (then replaced by the rebuild)."""

    entries: int
    digests: dict[str, str]
    differences: list[Difference]

    @property
    def ok(self) -> bool:
        """True if every rebuilt table equals the live one."""
        return not self.differences


def replay(
    ledger: OpenedLog, *, parallel: bool | None = None, batch_size: int = 4000
) -> ReplayReport:
    """Rebuild the projections of ``ledger`` from its log into scratch databases and compare
    them with the incremental ones (as of one read snapshot). If any table differs, the rebuilt
    projections then replace the live ones: they are what the log says.

    Raises:
        LogError, LogCorrupted, EventError: the rebuild failed (the live projections are
        untouched).
    """
    with scratch_folder(ledger.data.root, "replay") as tmp, contextlib.ExitStack() as stack:
        # A read snapshot: appends by others are not seen, nor blocked.
        with ledger.store.snapshot() as session:
            size = ledger.projections.position()
            rebuilt, schemas = ledger.rebuild_scratch(
                size, tmp, parallel=parallel, batch_size=batch_size
            )
            stack.callback(rebuilt.close)
            digests, differences = compare_tables(session, rebuilt, schemas)
        if differences:
            ledger.adopt_rebuild(rebuilt, schemas, size)
    return ReplayReport(size, digests, differences)
