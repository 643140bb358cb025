"""Mirrors: ``benchproof export`` writes a self-verifying segment of the log, and ``benchproof
import-log`` takes a segment (or a server's C2SP tlog-tiles) into a mirror: a data directory
that holds the same leaves at the same positions and the origin's own checkpoint notes, and no
keys (``service.core.ledger``: it refuses local writes and signs nothing).

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
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import msgspec

from events.entries import decode_leaf
from events.errors import EventError, LogCorrupted, LogError
from events.merkle import leaf_hash
from events.port import SignedCheckpoint, stored_entries
from events.stores import open_reader
from events.stores.sqlbase import SqlLog
from events.stores.sqlite import SqliteLog
from events.tiles import Tile, bundle_of, tile_of, tiles_for
from keys import KeyringError, NoteVerifier, VerifyingKey, open_note
from projections.queries import keyring
from service.core.config import DataDir
from service.core.ledger import Ledger, MirrorInfo, read_mirror, write_mirror
from service.errors import NotFound, ServiceError, UsageError
from verifier.log import verify_log
from verifier.tiles import (
    DirSource,
    FetchedCheckpoint,
    HttpSource,
    LeafStream,
    SourceInvalid,
    TileSource,
    fetch_checkpoint,
)

__all__ = [
    "SEGMENT_FILE",
    "SEGMENT_FORMAT",
    "Exported",
    "ImportRefused",
    "Imported",
    "Segment",
    "export",
    "import_log",
]

SEGMENT_FILE = "segment.json"
SEGMENT_FORMAT = "benchproof-segment/v1"

Progress = Callable[[int], None]
Note = Callable[[str], None]


class ImportRefused(ServiceError):
    """The source does not verify: nothing was taken (CLI exit 1)."""


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


# --- export --------------------------------------------------------------------------------


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
    target = _fresh_folder(dest, "export DEST")
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
        staging = _staging(target, "export")
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
            _move_into_place(staging, target)
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


# --- import --------------------------------------------------------------------------------


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
    source, described, segment = _open_source(folder, server, verifier)
    try:
        # (1) The checkpoint, opened with the key the caller holds.
        fetched = fetch_checkpoint(source, verifier)
        start = 0 if segment is None else _check_segment(segment, fetched, described)
        if mirror is None:
            if expect is not None:
                expect(fetched.body.size)
            return _first_import(root, source, described, fetched, start, verifier, progress, note)
        return _update(root, mirror, source, described, fetched, start, progress, expect, note)
    finally:
        source.close()


def _open_source(
    folder: Path | None, server: str | None, verifier: NoteVerifier
) -> tuple[TileSource, str, Segment | None]:
    """The source, how to name it, and the segment's description (a folder's).

    Raises:
        UsageError: not a server URL; not a segment folder of the log ``verifier`` names.
    """
    if server is not None:
        if not server.startswith(("http://", "https://")):
            raise UsageError(f"--server {server!r} is not an http(s) URL")
        source = HttpSource(server)
        return source, source.describe(), None
    assert folder is not None  # noqa: S101 - one of the two, checked by the caller
    dir_source = DirSource(folder)
    raw = dir_source.get(SEGMENT_FILE)
    if raw is None:
        raise UsageError(f"{folder} is not a segment export: it holds no {SEGMENT_FILE}")
    try:
        segment = msgspec.json.decode(raw, type=Segment)
    except msgspec.DecodeError as exc:
        raise UsageError(f"{folder}/{SEGMENT_FILE} is not a segment description: {exc}") from None
    if segment.format != SEGMENT_FORMAT:
        raise UsageError(f"{folder} is a {segment.format!r} segment, not {SEGMENT_FORMAT}")
    if segment.origin != verifier.name:
        raise UsageError(f"{folder} is a segment of {segment.origin}, not of {verifier.name}")
    return dir_source, str(Path(folder).resolve()), segment


def _check_segment(segment: Segment, fetched: FetchedCheckpoint, where: str) -> int:
    """The first entry of the segment, once its description agrees with its signed checkpoint.

    Raises:
        SourceInvalid: it does not.
    """
    body = fetched.body
    if (segment.treeSize, segment.end, segment.rootBase64) != (
        body.size,
        body.size,
        _b64(body.root),
    ):
        raise SourceInvalid(
            f"{where}/{SEGMENT_FILE} describes a tree of {segment.treeSize} entries that is not "
            f"the one its checkpoint signs ({body.size} entries, root {_b64(body.root)})"
        )
    if not 0 <= segment.start <= body.size:
        raise SourceInvalid(f"{where}/{SEGMENT_FILE}: start {segment.start} is not in the tree")
    return segment.start


def _fetch_leaves(
    source: TileSource, size: int, start: int, progress: Progress | None
) -> list[bytes]:
    """(2) The leaves ``[start, size)``, each checked against its level-0 tile.

    Raises:
        SourceInvalid: a bundle or tile is missing or malformed, or a leaf does not hash to
            its tile's hash.
    """
    leaves: list[bytes] = []
    for bundle in LeafStream(source, size, start, progress=progress):
        if bundle.start != start + len(leaves):
            raise SourceInvalid(f"{source.describe()}: entry {start + len(leaves)} is missing")
        for i, (leaf, expected) in enumerate(zip(bundle.leaves, bundle.hashes, strict=True)):
            if leaf_hash(leaf) != expected:
                position = bundle.start + i
                tile = next(t for t in tiles_for(size, 0) if t.end > position)
                raise SourceInvalid(
                    f"entry {position} does not hash to the hash its level-0 tile holds "
                    f"({tile.entries_path()} against {tile.path()} of the tree of {size})"
                )
        leaves.extend(bundle.leaves)
    return leaves


def _take(
    store: SqlLog,
    start: int,
    leaves: list[bytes],
    fetched: FetchedCheckpoint,
    source: TileSource,
    note: Note | None,
    then: Callable[[], None] | None = None,
) -> None:
    """(3)-(5) Append the leaves and the checkpoint, check the hash tiles and verify the whole
    log, all in one transaction: it commits only if everything passed (``then`` runs last,
    inside it).

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
    with store.transaction():
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
        if then is not None:
            then()


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
    leaves = _fetch_leaves(source, size, 0, progress)
    target = root.resolve()
    staging = _staging(target, "import")
    try:
        data = DataDir.local(staging)
        store = SqliteLog.open(data.db, origin=verifier.name, create=True)
        try:
            _take(store, 0, leaves, fetched, source, note)
        finally:
            store.close()
        write_mirror(staging, MirrorInfo(verifier.name, verifier.vkey, described))
        if note is not None:
            note("building the views…")
        # Folds every projection from position 0 (a new mirror is a SQLite file).
        Ledger.open(staging, store=f"sqlite://{data.db.resolve()}").close()
        _move_into_place(staging, target)
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
    with Ledger.open(root) as ledger:
        store = ledger.store
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
        leaves = _fetch_leaves(source, body.size, held, progress)

        def project() -> None:
            position = ledger.projections.position()
            ledger.projections.apply(list(stored_entries(store, position, body.size)))

        _take(store, held, leaves, fetched, source, note, project)
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


# --- folders -------------------------------------------------------------------------------


def _fresh_folder(path: Path, what: str) -> Path:
    """``path``, resolved, once it is known to be absent or an empty folder.

    Raises:
        UsageError: it is a file, or a folder that holds something.
    """
    if path.exists():
        if not path.is_dir():
            raise UsageError(f"{what} {path} is a file, not a folder")
        if any(path.iterdir()):
            raise UsageError(f"{what} {path} is not empty")
    return path.resolve()


def _staging(target: Path, kind: str) -> Path:
    """A fresh folder beside ``target`` (same file system: it is renamed into place)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = target.parent / f".{target.name}.{kind}-{os.getpid()}"
    if staging.exists():
        shutil.rmtree(staging)  # left by an earlier run of this pid, killed midway
    staging.mkdir()
    return staging


def _move_into_place(staging: Path, target: Path) -> None:
    """Rename ``staging`` to ``target`` (absent, or an empty folder it replaces).

    Raises:
        UsageError: ``target`` was filled meanwhile.
    """
    try:
        os.replace(staging, target)
    except OSError as exc:
        raise UsageError(f"cannot move the result into {target}: {exc.strerror}") from None
