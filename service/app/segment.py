"""``benchproof export``: a self-verifying segment of the log, which ``benchproof import-log``
takes into a mirror (``service.app.mirror``).

A segment is a folder in the tlog-tiles layout, so that any static file server can serve it and
``verifier.tiles.DirSource`` reads it as it reads a server:

- ``checkpoint``: the origin's signed checkpoint note of ``treeSize`` entries, as it stored it;
- ``tile/<L>/<N>[.p/<W>]``: every hash tile, of every level, of the tree of ``treeSize``
  entries: the proofs (any bundle checks against its level-0 tile, the tiles against the
  signed root);
- ``tile/entries/<N>[.p/<W>]``: the entry bundles that hold the entries ``[start, treeSize)``;
- ``log.vkey``: the origin's checkpoint verifier key, for information only: an import trusts the
  key it is given (``--log-key``), never one the segment carries;
- ``segment.json``: ``{format, origin, start, end, treeSize, rootBase64}``.
"""

from __future__ import annotations

import base64
import shutil
from collections.abc import Callable
from pathlib import Path

import msgspec

from events.port import SignedCheckpoint
from events.stores import open_reader
from events.stores.sqlbase import SqlLog
from events.tiles import bundle_of, tile_of, tiles_for
from keys import KeyringError, NoteVerifier, VerifyingKey, open_note
from projections.queries import keyring
from service.app.staging import fresh_folder, move_into_place, staging_folder
from service.core.config import DataDir
from service.errors import NotFound, UsageError

__all__ = ["SEGMENT_FILE", "SEGMENT_FORMAT", "Exported", "Segment", "export"]

SEGMENT_FILE = "segment.json"
SEGMENT_FORMAT = "benchproof-segment/v1"

Progress = Callable[[int], None]


class Segment(msgspec.Struct, frozen=True):
    """``segment.json``: which log, which entries (``[start, end)``) and which tree."""

    format: str
    origin: str
    start: int
    end: int
    treeSize: int
    rootBase64: str


class Exported(msgspec.Struct, frozen=True):
    """What ``export`` wrote."""

    dest: str
    origin: str
    start: int
    end: int
    treeSize: int
    rootBase64: str
    tiles: int
    bundles: int


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def export(
    root: Path,
    dest: Path,
    *,
    start: int = 0,
    end: int | None = None,
    progress: Progress | None = None,
    expect: Progress | None = None,
) -> Exported:
    """Write the segment ``[start, end)`` of the log of the data directory ``root`` (a mirror's
    too) into the folder ``dest``, which must be absent or empty; ``end`` (default: the latest
    checkpoint's size) must be a size the log signed a checkpoint for. The segment is written
    beside ``dest`` and moved into place whole.

    Raises:
        NotFound: ``root`` holds no log.
        UsageError: ``dest`` is not empty, ``end`` has no checkpoint (the nearest sizes that
            have one are named), ``start`` is beyond it.
        LogError: an entry is too large for a bundle (over 65,535 bytes).
    """
    data = DataDir(root)
    if not data.exists():
        raise NotFound(f"no log in {root}")
    target = fresh_folder(dest, "export DEST")
    store = open_reader(data.store)
    try:
        checkpoint = _checkpoint_of(store, end)
        size = checkpoint.size
        if start > size:
            raise UsageError(f"--start {start} is beyond the checkpoint's size {size}")
        vkey = _log_vkey(store, checkpoint)
        bundles = [t for t in tiles_for(size, 0) if t.end > start]
        if expect is not None:
            expect(size - start)
        staging = staging_folder(target, "export")
        try:
            count = 0
            for tile in tiles_for(size):
                _write(staging / tile.path(), tile_of(store, tile, size))
                count += 1
            for tile in bundles:
                _write(staging / tile.entries_path(), bundle_of(store, tile, size))
                if progress is not None:
                    progress(tile.end - max(tile.start, start))
            _write(staging / "checkpoint", checkpoint.note)
            _write(staging / "log.vkey", vkey.encode() + b"\n")
            segment = Segment(
                SEGMENT_FORMAT, store.origin, start, size, size, _b64(checkpoint.root)
            )
            described = msgspec.json.format(msgspec.json.encode(segment)) + b"\n"
            _write(staging / SEGMENT_FILE, described)
            move_into_place(staging, target)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
    finally:
        store.close()
    return Exported(
        str(dest), store.origin, start, size, size, _b64(checkpoint.root), count, len(bundles)
    )


def _checkpoint_of(store: SqlLog, size: int | None) -> SignedCheckpoint:
    """The checkpoint of ``size`` entries (default: the latest).

    Raises:
        UsageError: there is none; the nearest sizes that have one are named.
    """
    if size is None:
        latest = store.latest_checkpoint()
        if latest is None:
            raise UsageError("the log has no signed checkpoint yet")
        return latest
    found = store.checkpoint(size)
    if found is not None:
        return found
    below = store.checkpoint_at_or_below(size)
    above = next((c for c in store.checkpoints() if c.size > size), None)
    nearest = [str(c.size) for c in (below, above) if c is not None]
    hint = f"; the nearest checkpointed sizes are {' and '.join(nearest)}" if nearest else ""
    raise UsageError(f"the log has no signed checkpoint of size {size}{hint}")


def _log_vkey(store: SqlLog, checkpoint: SignedCheckpoint) -> str:
    """The verifier key of the log key that signed ``checkpoint``, among the log keys the log
    registered under its origin.

    Raises:
        UsageError: none of them verifies it (the log is damaged: ``benchproof verify`` says
            where).
    """
    for view in keyring(store.session).values():
        if view.role != "log" or view.name != store.origin:
            continue
        try:
            public = VerifyingKey.from_raw(base64.b64decode(view.publicKey))
            verifier = NoteVerifier.for_key(store.origin, public)
            open_note(checkpoint.note, [verifier])
        except (KeyringError, ValueError):
            continue
        return verifier.vkey
    raise UsageError(
        f"no log key the log registered verifies its checkpoint of size {checkpoint.size} "
        "(run `benchproof verify`)"
    )


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
