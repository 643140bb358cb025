"""The C2SP tlog-tiles read API (``tlog-tiles.md``): the signed checkpoint, the tree as tiles
and the entries as entry bundles, made from the log on demand (``events.tiles``) and kept in a
bounded in-process cache, never stored as a second copy of the log.

Which tiles there are: those of the tree of the latest signed checkpoint (each commit signs
one, so it covers every committed entry). A full tile is served once the tree reaches its end.
A partial tile ``<N>.p/<W>`` is served for every width ``W`` the tree has reached at that tile,
also after the tile became full: its hashes are the partial tile of the tree of
``(256 N + W) × 256^L`` entries, which never change. The spec lets a log drop partial tiles
once the full one exists; serving them costs nothing and a client that verified an older
checkpoint reads what it needs. Anything else is ``TileNotFound``.

The cache holds full and partial tiles and bundles alike, keyed by their path (a partial
tile's bytes are fixed by its width): least recently used first out, at most ``CACHE_BYTES``
of bytes per process. Bundles are kept gzipped (``Content-Encoding: gzip``, which the spec asks
logs to use) and unzipped for the rare client that refuses gzip.
"""

from __future__ import annotations

import gzip
import hashlib
import threading
from collections import OrderedDict
from typing import NamedTuple

from events.errors import LogError
from events.port import LogReader
from events.tiles import TILE_HEIGHT, Tile, TileError, bundle_of, parse_path, tile_of
from service.app.log import latest_checkpoint
from service.core.logs import OpenedLog
from service.errors import NotFound, ServiceError, UsageError

__all__ = [
    "CACHE_BYTES",
    "BadTilePath",
    "Served",
    "TileNotFound",
    "Tiles",
    "checkpoint_note",
    "least_size",
]

CACHE_BYTES = 64 * 1024 * 1024
"""The most bytes of tiles and (gzipped) bundles one process keeps: 8,192 full tiles, or a
few dozen bundles of large entries."""

_LARGEST_ITEM = CACHE_BYTES // 8  # a bigger one is served, not kept
_OVERHEAD = 200  # bytes of bookkeeping per cached item, counted against the budget


class BadTilePath(UsageError):
    """The path is not a tile or entry bundle path of the spec (HTTP 400)."""


class TileNotFound(NotFound):
    """The tree of the latest checkpoint has no such tile (HTTP 404)."""


class Served(NamedTuple):
    """A tile or bundle as answered: its bytes, their ETag, whether they are gzipped, and
    whether it is a full tile or bundle (cacheable for good; a partial one, briefly)."""

    body: bytes
    etag: str
    gzipped: bool
    full: bool


class _Item(NamedTuple):
    data: bytes  # a tile's bytes, or a bundle's gzipped bytes
    etag: str  # of the uncompressed bytes
    gzip_etag: str | None  # bundles: of the gzipped bytes
    full: bool


def _etag(body: bytes) -> str:
    return '"' + hashlib.sha256(body).hexdigest()[:32] + '"'


def checkpoint_note(ledger: OpenedLog, *, log: LogReader | None = None) -> bytes:
    """The latest signed checkpoint note, the bytes ``GET /v1/log/checkpoint`` answers (signed
    on the spot if the log has outgrown the latest one; read through ``log`` if given, see
    ``latest_checkpoint``)."""
    return latest_checkpoint(ledger, log=log).note


def least_size(tile: Tile) -> int:
    """The smallest tree that holds ``tile``: for a partial tile, the one tree size whose
    rightmost tile at its level it is with that width."""
    return (tile.first + tile.width) << (TILE_HEIGHT * tile.level)


class Tiles:
    """Tiles and entry bundles of one log, with their cache (thread-safe)."""

    def __init__(self, budget: int = CACHE_BYTES) -> None:
        self._budget = budget
        self._items: OrderedDict[tuple[Tile, bool], _Item] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    @property
    def cached_bytes(self) -> int:
        """The bytes the cache holds now (its items' data and bookkeeping)."""
        return self._bytes

    @staticmethod
    def parse(path: str) -> tuple[Tile, bool]:
        """The tile ``path`` names and whether it names its entry bundle.

        Raises:
            BadTilePath: not a path of the spec, in its one encoding.
        """
        try:
            return parse_path(path)
        except TileError as exc:
            raise BadTilePath(exc.detail, path=path) from None

    def cached(self, path: str, *, gzip_ok: bool) -> Served | None:
        """The tile or bundle at ``path`` if the cache holds it (no read of the log).

        Raises:
            BadTilePath: as ``parse``.
        """
        key = self.parse(path)
        with self._lock:
            item = self._items.get(key)
            if item is not None:
                self._items.move_to_end(key)
        return None if item is None else _served(item, gzip_ok)

    def read(self, log: LogReader, path: str, *, gzip_ok: bool) -> Served:
        """The tile or bundle at ``path``: from the cache, or made from ``log`` and cached.

        Raises:
            BadTilePath: as ``parse``.
            TileNotFound: the tree of the log's latest checkpoint does not hold it.
            ServiceError: a bundle holds a leaf over 65,535 bytes (written before the log
                refused them); it has no encoding.
        """
        hit = self.cached(path, gzip_ok=gzip_ok)
        if hit is not None:
            return hit
        key = tile, entries = self.parse(path)
        checkpoint = log.latest_checkpoint()
        size = 0 if checkpoint is None else checkpoint.size
        least = least_size(tile)
        if least > size:
            raise TileNotFound(
                f"{path.lstrip('/')} is not in the tree of the latest checkpoint ({size} entries)",
                path=path,
                treeSize=size,
            )
        item = _make(log, tile, entries, least)
        self._keep(key, item)
        return _served(item, gzip_ok)

    def _keep(self, key: tuple[Tile, bool], item: _Item) -> None:
        cost = len(item.data) + _OVERHEAD
        if cost > min(_LARGEST_ITEM, self._budget):
            return
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._bytes -= len(old.data) + _OVERHEAD
            self._items[key] = item
            self._bytes += cost
            while self._bytes > self._budget:
                _, dropped = self._items.popitem(last=False)
                self._bytes -= len(dropped.data) + _OVERHEAD


def _make(log: LogReader, tile: Tile, entries: bool, size: int) -> _Item:
    """The tile or bundle ``tile`` of the tree of ``size`` entries, read from ``log``."""
    try:
        if not entries:
            data = tile_of(log, tile, size)
            return _Item(data, _etag(data), None, not tile.partial)
        raw = bundle_of(log, tile, size)
    except LogError as exc:  # a leaf too long for a bundle, or a node the store misses
        raise ServiceError(f"{tile.path()}: {exc.detail}") from None
    # mtime=0: the same bundle gzips to the same bytes (and ETag) in every process.
    packed = gzip.compress(raw, compresslevel=6, mtime=0)
    return _Item(packed, _etag(raw), _etag(packed), not tile.partial)


def _served(item: _Item, gzip_ok: bool) -> Served:
    if item.gzip_etag is None:
        return Served(item.data, item.etag, False, item.full)
    if gzip_ok:
        return Served(item.data, item.gzip_etag, True, item.full)
    return Served(gzip.decompress(item.data), item.etag, False, item.full)
