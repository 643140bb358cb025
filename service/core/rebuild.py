"""The one rebuild policy: when a rebuild of every projection runs on every core, with how many
workers, and into which scratch databases. A ledger's rebuild in place, ``benchproof replay``
(through the ledger's ``rebuild_scratch``) and ``benchproof audit``'s replay of a fetched log
all decide here.

- From ``PARALLEL_FROM`` entries on (or when the caller asks), a rebuild of a SQLite log runs on
  ``WORKERS`` processes (``projections.shards``): starting them, about a third of a second, is
  then worth it. A log its subjects cannot split (``Unshardable``), or one that is not a SQLite
  file the workers can read, is rebuilt in one process instead, into one scratch database.
- Below, a rebuild in place folds the log in one process, in the caller's transaction.
- Scratch databases live in a folder of the data directory named after the process
  (``scratch_folder``), removed after; those of processes now gone are removed first.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from events.port import Session, stored_entries
from events.stores.sqlbase import SqlLog
from projections.materialize import Materializer
from projections.shards import Unshardable, open_rebuilt, rebuild_in_one, rebuild_sharded

__all__ = [
    "PARALLEL_FROM",
    "WORKERS",
    "on_every_core",
    "rebuild_in_place",
    "rebuild_scratch",
    "scratch_folder",
]

PARALLEL_FROM = 20_000
"""From this many entries on, a rebuild runs on every core."""

WORKERS = max(2, min(os.cpu_count() or 1, 4))
"""Shards of a parallel rebuild: one per core, at least two (the test suite runs it anywhere),
at most four."""


def on_every_core(size: int, parallel: bool | None = None) -> bool:
    """Whether a rebuild of ``size`` entries runs on every core: as ``parallel`` says, else from
    ``PARALLEL_FROM`` entries on."""
    return parallel if parallel is not None else size >= PARALLEL_FROM


def rebuild_scratch(
    store: SqlLog,
    size: int,
    folder: Path,
    *,
    db: Path | None,
    parallel: bool | None = None,
    batch_size: int = 4000,
) -> tuple[Session, list[str]]:
    """Rebuild every projection of the first ``size`` entries of ``store`` into scratch
    databases under ``folder``; return a connection that reads them and the schemas a table's
    rows come from (``projections.schema.rebuilt_rows``). ``db``: the SQLite file of the log,
    which the workers of a rebuild on every core read (None: the log is not one, so one
    process does it).

    Raises:
        LogError, LogCorrupted, EventError: as the plain rebuild.
    """
    if db is not None and on_every_core(size, parallel):
        try:
            paths = rebuild_sharded(db, size, folder, workers=WORKERS, batch=batch_size)
        except Unshardable:
            pass  # a log its subjects cannot split: one process does it below
        else:
            return open_rebuilt(paths)
    entries = stored_entries(store, 0, size)
    return rebuild_in_one(folder / "all.db", entries, batch_size=batch_size)


def rebuild_in_place(
    projections: Materializer,
    store: SqlLog,
    size: int,
    *,
    db: Path | None,
    scratch: Path,
    parallel: bool | None = None,
    batch_size: int = 4000,
) -> int:
    """Drop every projection and rebuild it from the first ``size`` entries of ``store``, in
    the caller's transaction (which holds the write lock); return the number of entries
    applied. On every core (``on_every_core``), the rebuild goes into scratch databases in a
    ``scratch_folder`` of ``scratch`` first, which then replace the projections."""
    if not on_every_core(size, parallel):
        return projections.rebuild(stored_entries(store, 0, size), batch_size=batch_size)
    with scratch_folder(scratch, "rebuild") as tmp:
        rebuilt, schemas = rebuild_scratch(
            store, size, tmp, db=db, parallel=True, batch_size=batch_size
        )
        try:
            projections.replace_with(rebuilt, schemas)
        finally:
            rebuilt.close()
    return size


@contextlib.contextmanager
def scratch_folder(root: Path, kind: str) -> Iterator[Path]:
    """A temporary folder in the data directory ``root`` for a scratch rebuild, named after this
    process and removed after. Folders that processes now gone left behind (killed in the
    middle of a rebuild) are removed first: a scratch copy is about as large as the
    projections."""
    for old in root.glob(".scratch-*"):
        pid = old.name.split("-")[2] if old.name.count("-") >= 3 else ""
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(old, ignore_errors=True)
    with tempfile.TemporaryDirectory(prefix=f".scratch-{kind}-{os.getpid()}-", dir=root) as tmp:
        yield Path(tmp)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True  # another user's process, or not a pid: leave it
    return True
