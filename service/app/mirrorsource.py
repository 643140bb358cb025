"""Reading what ``benchproof import-log`` is to take: the source (an exported segment's folder
or a server), its segment's description against its signed checkpoint, and its leaves, each
checked against the hash its level-0 tile holds."""

from __future__ import annotations

import base64
from collections.abc import Callable
from pathlib import Path

import msgspec

from events.merkle import leaf_hash
from events.tiles import tiles_for
from keys import NoteVerifier
from service.app.segment import SEGMENT_FILE, SEGMENT_FORMAT, Segment
from service.errors import UsageError
from verifier.tiles import (
    DirSource,
    FetchedCheckpoint,
    HttpSource,
    LeafStream,
    SourceInvalid,
    TileSource,
)

__all__ = ["check_segment", "fetch_leaves", "open_source"]

Progress = Callable[[int], None]


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def open_source(
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


def check_segment(segment: Segment, fetched: FetchedCheckpoint, where: str) -> int:
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


def fetch_leaves(
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
