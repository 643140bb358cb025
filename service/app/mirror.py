"""``benchproof import-log``: take a segment (``service.app.segment``) or a server's C2SP
tlog-tiles into a mirror: a data directory that holds the same leaves at the same positions and
the origin's own checkpoint notes, and no keys (``service.core.mirror``: it has no appends and
signs nothing).

An import takes nothing it has not verified. (1) The checkpoint note must verify with the key
given, and name that key's log. (2) Each entry must hash to its level-0 tile's hash. (3) The
leaves go into the store inside one write transaction (``LogStore.append_leaves``: decoded,
each at its own position, recording times in order, no statement twice, and the tree they make
with the leaves held already must have the checkpoint's root at its size). (4) Every hash tile of
level 1 and up that the source holds must be the tree's. (5) ``benchproof verify``'s own checks
(``verifier.log``) run on the whole log as it would stand, still inside that
transaction: every signature against the key valid at its position, the tree, every
checkpoint. Only then does it commit (an update; the whole log is verified again each time), or
is the new data directory moved into place (a first import, built in a folder beside it). A
refusal leaves the data directory as it was, or absent.
"""

from __future__ import annotations

import base64
import shutil
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

import msgspec

from events.entries import decode_leaf
from events.errors import EventError, LogCorrupted, LogError
from events.port import SignedCheckpoint
from events.stores.sqlbase import SqlLog
from events.stores.sqlite import SqliteLog
from events.tiles import Tile, tile_of, tiles_for
from keys import NoteVerifier
from service.app.mirrorsource import check_segment, fetch_leaves, open_source
from service.app.staging import move_into_place, staging_folder
from service.core.config import DataDir
from service.core.mirror import Mirror, MirrorInfo, read_mirror, write_mirror
from service.errors import ServiceError, UsageError
from verifier.log import verify_log
from verifier.tiles import (
    FetchedCheckpoint,
    TileSource,
    fetch_checkpoint,
)

__all__ = ["ImportRefused", "Imported", "import_log"]

Progress = Callable[[int], None]
Note = Callable[[str], None]


class ImportRefused(ServiceError):
    """The source does not verify: nothing was taken (CLI exit 1)."""


class Imported(msgspec.Struct, frozen=True):
    """What ``import_log`` did: the mirror's size before and now, the entries it took (all of
    them verified, with the whole log), and the root of its checkpoint."""

    data: str
    origin: str
    source: str
    created: bool
    previousSize: int
    size: int
    appended: int
    rootBase64: str

    def summary(self) -> str:
        if not self.appended:
            return f"{self.data}: mirror of {self.origin} up to date at size {self.size}"
        first = "new mirror" if self.created else "mirror"
        return (
            f"{self.data}: {first} of {self.origin}: took entries {self.previousSize}.."
            f"{self.size - 1} from {self.source}; {self.size} entries, verified"
        )


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def import_log(
    root: Path,
    *,
    verifier: NoteVerifier,
    folder: Path | None = None,
    server: str | None = None,
    progress: Progress | None = None,
    expect: Progress | None = None,
    note: Note | None = None,
) -> Imported:
    """Take the log that ``folder`` (an exported segment) or ``server`` (a tlog-tiles base URL)
    holds into the mirror at ``root``: a fresh one if ``root`` is absent or empty, otherwise
    the entries since the ones it holds. ``verifier`` is the origin's checkpoint key, given by
    the caller (never read from the source). ``expect`` hears how many entries are to come,
    ``progress`` of each bundle fetched, ``note`` of each stage.

    Raises:
        UsageError: ``root`` is neither a mirror nor empty; a mirror of another log or key; the
            folder is not a segment of that log; the server cannot be reached; a segment that
            starts beyond the entries the mirror holds.
        ImportRefused, SourceInvalid: the source does not verify (nothing was taken).
    """
    if (folder is None) == (server is None):
        raise UsageError("import-log takes a segment folder or --server URL (one of them)")
    root = Path(root)
    mirror = read_mirror(root) if root.is_dir() else None
    if mirror is None and root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise UsageError(
            f"{root} is neither a mirror nor an empty folder: import-log makes a new mirror in "
            "an absent or empty data directory, or updates a mirror"
        )
    if mirror is not None and mirror.vkey != verifier.vkey:
        raise UsageError(
            f"{root} mirrors {mirror.origin} with the key {mirror.vkey}; --log-key is another key"
        )
    source, described, segment = open_source(folder, server, verifier)
    try:
        # (1) The checkpoint, opened with the key the caller holds.
        fetched = fetch_checkpoint(source, verifier)
        start = 0 if segment is None else check_segment(segment, fetched, described)
        if mirror is None:
            if expect is not None:
                expect(fetched.body.size)
            return _first_import(root, source, described, fetched, start, verifier, progress, note)
        return _update(root, mirror, source, described, fetched, start, progress, expect, note)
    finally:
        source.close()


def _take(
    store: SqlLog,
    start: int,
    leaves: list[bytes],
    fetched: FetchedCheckpoint,
    source: TileSource,
    note: Note | None,
    transaction: AbstractContextManager[object],
) -> None:
    """(3)-(5) Append the leaves and the checkpoint to ``store``, check the hash tiles and
    verify the whole log, all in ``transaction`` (the store's, or a mirror's ``taking``): it
    commits only if everything passed.

    Raises:
        ImportRefused: a check failed (the transaction rolled back).
    """
    body = fetched.body
    held = store.size
    held_root = store.root(held) if held else b""
    upper = _fetch_upper_tiles(source, body.size)
    checkpoint = SignedCheckpoint(
        body.size, fetched.checkpoint.note, body.root, _signed_at(leaves, body.size)
    )
    with transaction:
        try:
            store.append_leaves(start, leaves, checkpoint)
        except EventError as exc:
            if held and isinstance(exc, LogError) and not isinstance(exc, LogCorrupted):
                # The new leaves each matched their tiles, and with the held ones they do not
                # make the signed root.
                raise ImportRefused(
                    f"the source's checkpoint (size {body.size}, root {_b64(body.root)}) does "
                    f"not extend this mirror's log (size {held}, root {_b64(held_root)}): the "
                    "logs have forked, or the source's entries were altered"
                ) from None
            raise ImportRefused(f"the entries do not verify: {exc.detail}") from None
        _check_tiles(store, upper, body.size)
        if note is not None:
            note(f"verifying all {body.size} entries…")
        report = verify_log(store)
        if not report.ok:
            first = report.findings[0]
            more = (
                f" ({len(report.findings) - 1} more problems)" if len(report.findings) > 1 else ""
            )
            raise ImportRefused(f"the log does not verify: {first.reason}{more}")


def _signed_at(leaves: list[bytes], size: int) -> str:
    """When a mirror says it holds the checkpoint from: the recording time of its last entry
    (the origin signed it then or later). The same for every mirror of the same entries."""
    if not leaves:
        raise ImportRefused(f"no entries reach the checkpoint's size {size}")
    try:
        return decode_leaf(leaves[-1], position=size - 1).recordedAt
    except EventError as exc:
        raise ImportRefused(f"the entries do not verify: {exc.detail}") from None


def _fetch_upper_tiles(source: TileSource, size: int) -> dict[Tile, bytes]:
    """Every hash tile of level 1 and up of the tree of ``size`` entries, as the source serves
    it (one in 65,536 entries: a few).

    Raises:
        ImportRefused: one is missing.
    """
    tiles = {}
    for tile in tiles_for(size):
        if tile.level:
            served = source.get(tile.path())
            if served is None:
                raise ImportRefused(f"{source.describe()} does not serve {tile.path()}")
            tiles[tile] = served
    return tiles


def _check_tiles(store: SqlLog, upper: dict[Tile, bytes], size: int) -> None:
    """(4) The hash tiles of level 1 and up must be those of the tree the store holds (level-0
    tiles were checked leaf by leaf).

    Raises:
        ImportRefused: one differs.
    """
    for tile, served in upper.items():
        if served != tile_of(store, tile, size):
            raise ImportRefused(
                f"{tile.path()} is not the tile of the tree its checkpoint signs (size {size})"
            )


def _first_import(
    root: Path,
    source: TileSource,
    described: str,
    fetched: FetchedCheckpoint,
    start: int,
    verifier: NoteVerifier,
    progress: Progress | None,
    note: Note | None,
) -> Imported:
    """A new mirror: built and verified in a folder beside ``root``, then moved into place."""
    if start > 0:
        raise UsageError(
            f"the segment holds entries from {start} on: only a mirror that holds {start} "
            "entries already takes it (import the entries before it first)"
        )
    size = fetched.body.size
    leaves = fetch_leaves(source, size, 0, progress)
    target = root.resolve()
    staging = staging_folder(target, "import")
    try:
        data = DataDir.local(staging)
        store = SqliteLog.open(data.db, origin=verifier.name, create=True)
        try:
            _take(store, 0, leaves, fetched, source, note, store.transaction())
        finally:
            store.close()
        write_mirror(staging, MirrorInfo(verifier.name, verifier.vkey, described))
        if note is not None:
            note("building the views…")
        # Folds every projection from position 0 (a new mirror is a SQLite file).
        Mirror.open(staging, store=f"sqlite://{data.db.resolve()}").close()
        move_into_place(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return Imported(
        str(root), verifier.name, described, True, 0, size, size, _b64(fetched.body.root)
    )


def _update(
    root: Path,
    mirror: MirrorInfo,
    source: TileSource,
    described: str,
    fetched: FetchedCheckpoint,
    start: int,
    progress: Progress | None,
    expect: Progress | None,
    note: Note | None,
) -> Imported:
    """The entries since those the mirror holds, verified with the whole log, then committed
    with their projections in one transaction."""
    body = fetched.body
    with Mirror.open(root) as opened:
        store = opened.store
        held = store.refresh()
        if start > held:
            raise UsageError(
                f"the segment holds entries from {start} on, but this mirror holds {held}: "
                f"import entries {held}..{start - 1} first (an export with --start {held})"
            )
        if body.size <= held:
            if store.root(body.size) != body.root:
                raise ImportRefused(
                    f"the source's checkpoint (size {body.size}, root {_b64(body.root)}) is not "
                    f"this mirror's tree at that size (root {_b64(store.root(body.size))}; the "
                    f"mirror holds {held}): the logs have forked"
                )
            return Imported(
                str(root), mirror.origin, described, False, held, held, 0, _b64(store.root())
            )
        if expect is not None:
            expect(body.size - held)
        leaves = fetch_leaves(source, body.size, held, progress)
        # The projections fold the new entries in the same transaction (``Mirror.taking``).
        _take(store, held, leaves, fetched, source, note, opened.taking())
    write_mirror(root, msgspec.structs.replace(mirror, source=described))
    return Imported(
        str(root),
        mirror.origin,
        described,
        False,
        held,
        body.size,
        body.size - held,
        _b64(body.root),
    )
