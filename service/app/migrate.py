"""``benchproof migrate-store SRC DST``: copy a log from one store to another (SQLite to
PostgreSQL, or back), leaf for leaf, and rebuild its projections there.

The copy takes nothing it has not verified, and DST ends up holding the very bytes SRC holds:

1. SRC is opened read-only and verified whole, as ``benchproof verify`` does
   (``verifier.log``: every signature against the key valid at its position, the
   tree, every checkpoint note against the log key). A source that does not verify is refused
   before DST is opened (``MigrationRefused``).
2. DST is opened (made, if absent) with SRC's origin. It must be empty, or hold a prefix of SRC
   byte for byte, with exactly SRC's checkpoints up to its size: a copy that was interrupted
   then goes on from where it stopped. Any other DST is refused and left as it is
   (``UsageError``).
3. SRC's checkpoints are walked by size; the leaves up to each are taken into DST in one
   transaction with SRC's own signed note (``LogStore.append_leaves``: every leaf decodes and
   names its position, recording times never decrease, and the tree they make has the
   checkpoint's root). DST signs nothing: it holds no key.
4. On arrival, DST's root at SRC's size and every checkpoint (size, note, root) must be SRC's.
5. DST's projections are rebuilt from its log, as a mirror's are when first taken in.

Keys are not involved: they stay files in the data directory, which names its store
(``--store``, ``$BENCHPROOF_STORE``, or the one ``init --store`` recorded).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import msgspec

from events.port import SignedCheckpoint, stored_entries
from events.stores import (
    display_store,
    open_reader,
    open_store,
    same_store,
    sqlite_path,
    store_kind,
)
from events.stores.sqlbase import SqlLog
from projections.materialize import Materializer
from service.errors import ServiceError, UsageError
from verifier.log import verify_log

__all__ = ["Migrated", "MigrationRefused", "migrate_store", "rebuild_projections"]

Progress = Callable[[int], None]
Note = Callable[[str], None]

_COMPARE_CHUNK = 4096  # leaves compared per read when DST holds a prefix already


class MigrationRefused(ServiceError):
    """The source does not verify, or the copy does not match it on arrival: nothing more was
    written (CLI exit 1)."""


class Migrated(msgspec.Struct, frozen=True):
    """What ``migrate_store`` did: the two stores (passwords hidden), the log's origin, its size
    and root (lowercase hex) as both now hold it, how many checkpoints both hold, how many
    entries DST held before (``previousSize``), how many this call took in, and whether it
    rebuilt DST's projections (not when they had folded every entry already)."""

    src: str
    dst: str
    origin: str
    size: int
    root: str
    checkpoints: int
    previousSize: int
    appended: int
    rebuilt: bool

    def summary(self) -> str:
        """One line for a person."""
        taken = (
            f"copied entries {self.previousSize}..{self.size - 1}"
            if self.appended
            else "nothing to copy"
        )
        views = "projections rebuilt" if self.rebuilt else "projections up to date"
        return (
            f"{self.dst}: {taken} of {self.origin} from {self.src}; {self.size} entries, root "
            f"{self.root}, {self.checkpoints} checkpoints, all equal to the source's; {views}"
        )


def migrate_store(
    src_url: str,
    dst_url: str,
    *,
    progress: Progress | None = None,
    expect: Progress | None = None,
    note: Note | None = None,
) -> Migrated:
    """Copy the log at ``src_url`` into the store ``dst_url`` (steps in the module's docstring).
    ``expect`` hears how many entries are to be copied, ``progress`` how many each commit took
    in, ``note`` of each stage.

    Raises:
        UsageError: the two URLs name one store; DST holds another log, or one that is not a
            prefix of SRC (nothing is written to it).
        MigrationRefused: SRC does not verify (DST is not touched), or DST does not equal it on
            arrival.
        LogError: a URL names no store, SRC holds no log, DST holds another origin.
        StorageFault: a store cannot be reached or written.
    """
    if same_store(src_url, dst_url):
        raise UsageError(f"SRC and DST are the same store ({display_store(src_url)})")
    src_shown, dst_shown = display_store(src_url), display_store(dst_url)
    src = open_reader(src_url)
    origin = src.origin
    try:
        # (1) The source, verified whole before anything is written anywhere.
        if note is not None:
            note(f"verifying {src_shown}…")
        report = verify_log(src)
        if not report.ok:
            first = report.findings[0]
            more = f" ({len(report.findings) - 1} more)" if len(report.findings) > 1 else ""
            raise MigrationRefused(
                f"{src_shown} does not verify, nothing was copied: {first.reason}{more}"
            )
        size = report.entries
        # Checkpoints a live source signed after the verification are left for a later run.
        checkpoints = [c for c in src.checkpoints() if c.size <= size]
        if store_kind(dst_url) == "sqlite":  # a new file's folder, as a data directory's
            sqlite_path(dst_url).parent.mkdir(parents=True, exist_ok=True)
        dst = open_store(dst_url, origin=origin, create=True)
        try:
            # (2) What DST holds must be where SRC begins.
            held = _held_prefix(src, dst, checkpoints, size, src_shown, dst_shown)
            if expect is not None:
                expect(size - held)
            # (3) Leaf for leaf, one transaction per checkpoint of the source.
            if note is not None and held < size:
                note(f"copying entries {held}..{size - 1} into {dst_shown}…")
            for checkpoint in checkpoints:
                if checkpoint.size <= dst.size:
                    continue
                start = dst.size
                leaves = [leaf for _, leaf in src.leaves(start, checkpoint.size)]
                dst.append_leaves(start, leaves, checkpoint)
                if progress is not None:
                    progress(len(leaves))
            # (4) Verified on arrival.
            root = _check_arrival(src, dst, checkpoints, size, dst_shown)
            # (5) The views, folded from DST's own log.
            if note is not None:
                note("rebuilding the projections…")
            rebuilt = rebuild_projections(dst, size, always=held < size) > 0
        finally:
            dst.close()
    finally:
        src.close()
    return Migrated(
        src_shown,
        dst_shown,
        origin,
        size,
        root.hex(),
        len(checkpoints),
        held,
        size - held,
        rebuilt,
    )


def rebuild_projections(store: SqlLog, size: int, *, always: bool = True) -> int:
    """Fold every projection of the first ``size`` entries of ``store`` again from position 0,
    in one transaction under its writer's lock (``Ledger.rebuild_projections`` without the
    keys a ledger needs); return the number of entries folded. ``always=False``: leave
    projections that have folded exactly ``size`` entries, in the current format, as they are
    (0 is returned).

    Raises:
        LogCorrupted, EventError: an entry does not decode (nothing is changed).
    """
    with store.transaction():
        materializer = Materializer(store.session)
        if not always and not materializer.stale() and materializer.position() == size:
            return 0
        return materializer.rebuild(stored_entries(store, 0, size))


def _held_prefix(
    src: SqlLog,
    dst: SqlLog,
    checkpoints: Sequence[SignedCheckpoint],
    size: int,
    src_shown: str,
    dst_shown: str,
) -> int:
    """How many entries DST holds, once they are known to be SRC's first ones, byte for byte,
    with exactly SRC's checkpoints of those sizes.

    Raises:
        UsageError: DST holds more entries than SRC, another leaf, or other checkpoints.
    """
    held = dst.refresh()
    ours = [(c.size, c.note, c.root) for c in dst.checkpoints()]
    if held == 0 and not ours:
        return 0
    refusal = (
        f"{dst_shown} already holds a log that is not a beginning of {src_shown}'s; "
        "migrate-store copies into an empty store, or one an earlier copy of this log filled "
        "(nothing was written)"
    )
    if held > size:
        raise UsageError(f"{refusal}: it holds {held} entries, the source {size}")
    for start in range(0, held, _COMPARE_CHUNK):
        end = min(start + _COMPARE_CHUNK, held)
        theirs = src.leaves(start, end)
        for (seq, leaf), (_, mine) in zip(theirs, dst.leaves(start, end), strict=True):
            if leaf != mine:
                raise UsageError(f"{refusal}: entry {seq} differs")
    expected = [(c.size, c.note, c.root) for c in checkpoints if c.size <= held]
    if ours != expected:
        differing = next(
            (a[0] for a, b in zip(ours, expected, strict=False) if a != b),
            min(len(ours), len(expected)),
        )
        raise UsageError(f"{refusal}: its checkpoints differ (from the one at size {differing})")
    return held


def _check_arrival(
    src: SqlLog,
    dst: SqlLog,
    checkpoints: Sequence[SignedCheckpoint],
    size: int,
    dst_shown: str,
) -> bytes:
    """(4) DST's size, root and checkpoints must be SRC's; return the root.

    Raises:
        MigrationRefused: they are not.
    """
    arrived = dst.refresh()
    root = src.root(size)
    if arrived != size or dst.root(size) != root:
        raise MigrationRefused(
            f"{dst_shown} holds {arrived} entries whose root is not the source's at size {size}"
        )
    ours = [(c.size, c.note, c.root) for c in dst.checkpoints()]
    if ours != [(c.size, c.note, c.root) for c in checkpoints]:
        raise MigrationRefused(f"{dst_shown} does not hold the source's checkpoints, note for note")
    return root
