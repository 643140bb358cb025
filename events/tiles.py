"""The C2SP tlog-tiles encoding of the log: tile coordinates and their paths, which tiles a tree
of a given size has, entry bundles, and reading a tile or a bundle out of a ``LogReader``.

Spec: C2SP ``tlog-tiles.md``. A tile at level ``L`` and index ``N`` holds up to 256 consecutive
Merkle tree hashes at tree level ``8 L``: hash ``i`` is the hash of the perfect subtree
``(8 L, 256 N + i)``, which covers the entries ``[(256 N + i) 256^L, (256 N + i + 1) 256^L)``.
A full tile holds 256 hashes; the rightmost tile of a level is partial, with
``floor(size / 256^L) mod 256`` hashes, and an empty tile does not exist. ``N`` is written in
zero-padded groups of three digits, all but the last prefixed with ``x`` (1234067 is
``x001/x234/067``); a partial tile's path ends in ``.p/<W>``. An entry bundle
(``tile/entries/<N>[.p/<W>]``) is the level-0 tile's entries, each prefixed with its length as
a big-endian unsigned 16-bit integer, so a leaf is at most 65,535 bytes.

Pure: the only input is a ``LogReader`` (``events.port``)."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from events.errors import LogError
from events.merkle import leaf_hash
from events.port import LogReader

__all__ = [
    "HASH_SIZE",
    "MAX_LEAF",
    "TILE_HEIGHT",
    "TILE_WIDTH",
    "LeafTooLarge",
    "Tile",
    "TileError",
    "bundle_hashes",
    "bundle_of",
    "decode_bundle",
    "encode_bundle",
    "encode_index",
    "parse_path",
    "tile_of",
    "tiles_for",
]

TILE_HEIGHT = 8
TILE_WIDTH = 1 << TILE_HEIGHT  # hashes in a full tile
HASH_SIZE = 32
MAX_LEAF = 0xFFFF  # an entry bundle's 16-bit length prefix
MAX_LEVEL = 63


class TileError(LogError):
    """A tile path, tile or entry bundle that is not well formed (or not of this tree)."""


class LeafTooLarge(LogError):
    """An entry whose leaf is longer than ``MAX_LEAF`` bytes: an entry bundle cannot hold it, so
    the log does not take it. ``details``: ``entryType``, ``subject``, ``size`` and ``limit``
    (``entryType``, not ``type``: the problem+json it becomes has a ``type`` of its own)."""


@dataclass(frozen=True, slots=True)
class Tile:
    """A tile's coordinates: ``level``, ``index`` and ``width`` (256 for a full tile)."""

    level: int
    index: int
    width: int = TILE_WIDTH

    @property
    def partial(self) -> bool:
        return self.width < TILE_WIDTH

    @property
    def first(self) -> int:
        """The index, at tree level ``8 level``, of the tile's first hash."""
        return self.index * TILE_WIDTH

    @property
    def start(self) -> int:
        """The first entry the tile spans."""
        return self.index << (TILE_HEIGHT * (self.level + 1))

    @property
    def end(self) -> int:
        """One past the last entry its hashes span (``start`` + width × 256^level)."""
        return self.start + (self.width << (TILE_HEIGHT * self.level))

    def path(self) -> str:
        """``tile/<L>/<N>[.p/<W>]``."""
        return f"tile/{self.level}/{_suffixed(self)}"

    def entries_path(self) -> str:
        """``tile/entries/<N>[.p/<W>]`` (the bundle of a level-0 tile)."""
        if self.level:
            raise TileError("only a level-0 tile has an entry bundle")
        return f"tile/entries/{_suffixed(self)}"


def encode_index(n: int) -> str:
    """``N`` in zero-padded three-digit groups, all but the last prefixed with ``x``."""
    if n < 0:
        raise TileError(f"a tile index is not negative: {n}")
    groups = []
    while True:
        groups.append(f"{n % 1000:03d}")
        n //= 1000
        if not n:
            break
    groups.reverse()
    return "/".join([*("x" + g for g in groups[:-1]), groups[-1]])


def _suffixed(tile: Tile) -> str:
    if not 1 <= tile.width <= TILE_WIDTH:
        raise TileError(f"a tile's width is 1 to 256, not {tile.width}")
    text = encode_index(tile.index)
    return f"{text}.p/{tile.width}" if tile.partial else text


_DECIMAL = re.compile(r"0|[1-9][0-9]*")
_GROUP = re.compile(r"x[0-9]{3}")
_LAST = re.compile(r"[0-9]{3}")


def parse_path(path: str) -> tuple[Tile, bool]:
    """The tile a path names, and whether it names its entry bundle: ``tile/<L>/<N>[.p/<W>]``
    or ``tile/entries/<N>[.p/<W>]`` (a leading ``/`` is allowed). Strict: ``L`` from 0 to 63
    and ``W`` from 1 to 255, both without leading zeros; ``N`` in its one encoding.

    Raises:
        TileError: not such a path.
    """
    parts = path.lstrip("/").split("/")
    if len(parts) < 3 or parts[0] != "tile":
        raise TileError(f"not a tile path: {path!r}")
    entries = parts[1] == "entries"
    if not entries and not (_DECIMAL.fullmatch(parts[1]) and int(parts[1]) <= MAX_LEVEL):
        raise TileError(f"a tile's level is 0 to 63, without leading zeros: {path!r}")
    level = 0 if entries else int(parts[1])
    rest = parts[2:]
    width = TILE_WIDTH
    if len(rest) >= 2 and rest[-2].endswith(".p"):
        w = rest[-1]
        if not (_DECIMAL.fullmatch(w) and 1 <= int(w) < TILE_WIDTH):
            raise TileError(f"a partial tile's width is 1 to 255, without leading zeros: {path!r}")
        width = int(w)
        rest = [*rest[:-2], rest[-2][:-2]]
    if not rest or not all(_GROUP.fullmatch(g) for g in rest[:-1]):
        raise TileError(f"not a tile index: {path!r}")
    if not _LAST.fullmatch(rest[-1]):
        raise TileError(f"not a tile index: {path!r}")
    index = int("".join(g.lstrip("x") for g in rest))
    tile = Tile(level, index, width)
    if encode_index(index) != "/".join(rest):  # "x000/001" is not the encoding of 1
        raise TileError(f"not the one encoding of tile index {index}: {path!r}")
    return tile, entries


def tiles_for(size: int, level: int | None = None) -> Iterator[Tile]:
    """Every tile of a tree of ``size`` entries (or only those of ``level``), full ones then the
    partial one of each level, levels from 0 up."""
    levels = range(MAX_LEVEL + 1) if level is None else (level,)
    for lv in levels:
        hashes = size >> (TILE_HEIGHT * lv)  # perfect subtrees at tree level 8 lv
        if not hashes:
            break
        full, rest = divmod(hashes, TILE_WIDTH)
        for n in range(full):
            yield Tile(lv, n)
        if rest:
            yield Tile(lv, full, rest)


def tile_of(log: LogReader, tile: Tile, size: int | None = None) -> bytes:
    """The tile's bytes (its hashes, concatenated), read from ``log``.

    Raises:
        TileError: the tile is not one of the tree of ``size`` (default: the log's size): it
            lies beyond it, or is partial where the tree has more (or fewer) hashes there.
    """
    _check_exists(tile, log.size if size is None else size)
    level = TILE_HEIGHT * tile.level
    return b"".join(log.node_range(level, tile.first, tile.first + tile.width))


def bundle_of(log: LogReader, tile: Tile, size: int | None = None) -> bytes:
    """The entry bundle of level-0 ``tile``, read from ``log``.

    Raises:
        TileError: as ``tile_of``; or a leaf longer than 65,535 bytes (it has no encoding).
    """
    if tile.level:
        raise TileError("only a level-0 tile has an entry bundle")
    _check_exists(tile, log.size if size is None else size)
    leaves = [leaf for _, leaf in log.leaves(tile.start, tile.end)]
    if len(leaves) != tile.width:
        raise TileError(f"the log does not hold entries {tile.start}..{tile.end - 1}")
    return encode_bundle(leaves)


def _check_exists(tile: Tile, size: int) -> None:
    hashes = size >> (TILE_HEIGHT * tile.level)
    # A full tile is in every tree that reaches its end; a partial one only in the trees whose
    # hashes at its level end inside it, after exactly ``width`` of them.
    if tile.first + tile.width > hashes or (tile.partial and tile.first + tile.width != hashes):
        raise TileError(f"{tile.path()} is not a tile of a tree of {size} entries")


def encode_bundle(leaves: Sequence[bytes]) -> bytes:
    """Each leaf prefixed with its length (big-endian, 16 bits).

    Raises:
        TileError: a leaf is longer than 65,535 bytes.
    """
    out = bytearray()
    for leaf in leaves:
        if len(leaf) > MAX_LEAF:
            raise TileError(f"a leaf of {len(leaf)} bytes does not fit an entry bundle")
        out += len(leaf).to_bytes(2, "big")
        out += leaf
    return bytes(out)


def decode_bundle(data: bytes, count: int | None = None) -> list[bytes]:
    """The leaves of an entry bundle (exactly ``count`` of them, if given).

    Raises:
        TileError: a length runs past the end, or the count is not ``count``.
    """
    leaves = []
    at, end = 0, len(data)
    while at < end:
        if at + 2 > end:
            raise TileError("an entry bundle ends inside a length prefix")
        n = int.from_bytes(data[at : at + 2], "big")
        at += 2
        if at + n > end:
            raise TileError("an entry bundle ends inside an entry")
        leaves.append(data[at : at + n])
        at += n
    if count is not None and len(leaves) != count:
        raise TileError(f"an entry bundle of {len(leaves)} entries where {count} were expected")
    return leaves


def bundle_hashes(leaves: Sequence[bytes]) -> bytes:
    """The level-0 tile that ``leaves`` hash to."""
    return b"".join(leaf_hash(leaf) for leaf in leaves)
