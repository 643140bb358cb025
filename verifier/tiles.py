"""Reading a log through its C2SP tlog-tiles resources, from a server or from a folder that holds
them in the same layout (an exported segment): the signed checkpoint, the hash tiles and the
entry bundles, fetched in parallel and, where a cache folder is given, kept so that an
interrupted read resumes without fetching again.

Nothing here trusts what it fetches: the checkpoint is opened with the verifier key given, and
``LeafStream`` checks each bundle against its level-0 tile as it goes; the tree and the
signatures are checked by whoever consumes the leaves (``service.audit``, the mirror import).
"""

from __future__ import annotations

import os
import threading
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import NamedTuple, Protocol

import httpx

from events.checkpoints import Checkpoint, parse_checkpoint_body
from events.errors import LogError
from events.port import SignedCheckpoint
from events.tiles import TILE_WIDTH, Tile, TileError, decode_bundle, parse_path, tiles_for
from keys import KeyringError, NoteVerifier, open_note
from verifier.errors import VerifierError, VerifierUsageError

__all__ = [
    "DirSource",
    "FetchedCheckpoint",
    "HttpSource",
    "LeafStream",
    "SourceError",
    "SourceInvalid",
    "TileSource",
    "fetch_checkpoint",
    "open_source",
]

_TIMEOUT = 60.0
_RETRIES = 3


class SourceError(VerifierUsageError):
    """The source cannot be read: unreachable, or an error answer."""


class SourceInvalid(VerifierError):
    """The source serves what is not so: a checkpoint that does not verify, a missing or
    malformed tile or bundle (an audit that meets it fails)."""


class TileSource(Protocol):
    """Where tlog-tiles resources come from."""

    def get(self, path: str) -> bytes | None:
        """The resource at ``path`` (``checkpoint``, ``tile/…``), or None if there is none.

        Raises:
            SourceError: the source cannot be read.
        """
        ...

    def describe(self) -> str:
        """The source, for messages."""
        ...

    def close(self) -> None: ...


class HttpSource:
    """A server's tlog-tiles API under ``base`` (``/checkpoint``, ``/tile/…``); thread-safe."""

    def __init__(self, base: str, *, connections: int = 8) -> None:
        self.base = base.rstrip("/")
        limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
        self._client = httpx.Client(timeout=_TIMEOUT, limits=limits, follow_redirects=False)

    def describe(self) -> str:
        return self.base

    def _fetch(self, url: str, *, retry_server_errors: bool) -> httpx.Response:
        """``GET url``, tried up to three times: again on a transport error and, if asked, on a
        5xx answer (the last answer is then returned).

        Raises:
            SourceError: no answer at all.
        """
        last = ""
        for attempt in range(_RETRIES):
            try:
                response = self._client.get(url)
            except httpx.HTTPError as exc:
                last = f"{type(exc).__name__}: {exc}"
                continue
            if retry_server_errors and response.status_code >= 500 and attempt < _RETRIES - 1:
                continue
            return response
        raise SourceError(f"cannot read {url}: {last}")

    def get(self, path: str) -> bytes | None:
        url = f"{self.base}/{path}"
        response = self._fetch(url, retry_server_errors=True)
        if response.status_code == 404:
            return None
        if response.status_code != 200:
            raise SourceError(f"{url} answered {response.status_code}")
        return response.content

    def get_answer(self, target: str) -> tuple[int, httpx.Headers, bytes]:
        """A JSON answer at ``target`` (a path and query): its status, headers and body.

        Raises:
            SourceError: the server cannot be reached.
        """
        response = self._fetch(f"{self.base}{target}", retry_server_errors=False)
        return response.status_code, response.headers, response.content

    def close(self) -> None:
        self._client.close()


class DirSource:
    """A folder holding the resources in the tlog-tiles layout (what ``benchproof export``
    writes)."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        if not self.root.is_dir():
            raise SourceError(f"{self.root} is not a folder")

    def describe(self) -> str:
        return str(self.root)

    def get(self, path: str) -> bytes | None:
        target = self.root / path
        try:
            return target.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise SourceError(f"cannot read {target}: {exc.strerror}") from None

    def close(self) -> None:
        pass


def open_source(where: str) -> TileSource:
    """An ``http(s)://`` URL is a server; anything else a folder."""
    if where.startswith(("http://", "https://")):
        return HttpSource(where)
    return DirSource(Path(where))


class FetchedCheckpoint(NamedTuple):
    """A checkpoint whose note verified with the key given."""

    checkpoint: SignedCheckpoint
    body: Checkpoint


def open_checkpoint(note: bytes, verifier: NoteVerifier, where: str) -> FetchedCheckpoint:
    """Verify a checkpoint note with ``verifier`` (its origin must be the key's name).

    Raises:
        SourceInvalid: the note does not verify, or is not a checkpoint of that log.
    """
    try:
        text = open_note(note, [verifier]).text
        body = parse_checkpoint_body(text)
    except (KeyringError, LogError) as exc:
        raise SourceInvalid(f"the checkpoint of {where} does not verify: {exc}") from None
    if body.origin != verifier.name:
        raise SourceInvalid(f"the checkpoint of {where} is of {body.origin}, not {verifier.name}")
    return FetchedCheckpoint(SignedCheckpoint(body.size, note, body.root, ""), body)


def fetch_checkpoint(source: TileSource, verifier: NoteVerifier) -> FetchedCheckpoint:
    """The source's checkpoint, verified with ``verifier``.

    Raises:
        SourceInvalid: there is none, or it does not verify.
    """
    note = source.get("checkpoint")
    if note is None:
        raise SourceInvalid(f"{source.describe()} serves no checkpoint")
    return open_checkpoint(note, verifier, source.describe())


class Bundle(NamedTuple):
    """The entries of one level-0 tile from ``start`` (the first position asked for), and the
    tile's hashes as served, for the same positions."""

    start: int
    leaves: list[bytes]
    hashes: list[bytes]


class LeafStream:
    """The leaves ``[start, size)`` of a tree of ``size`` entries, bundle by bundle in order,
    fetched ``ahead`` bundles in advance on a thread pool. Each bundle must hold exactly the
    tile's width of entries and come with its level-0 tile; the caller compares them (a
    verifier reports a leaf whose hash is not its tile's).

    With ``cache`` (a folder), each resource fetched is written there first and read from
    there next time: an interrupted read resumes where it stopped.
    """

    def __init__(
        self,
        source: TileSource,
        size: int,
        start: int = 0,
        *,
        cache: Path | None = None,
        workers: int = 8,
        ahead: int = 8,
        progress: Callable[[int], None] | None = None,
    ) -> None:
        self.source = source
        self.size = size
        self.start = start
        self.cache = cache
        self.workers = workers
        self.ahead = ahead
        self.progress = progress
        self._lock = threading.Lock()
        self.fetched = 0  # resources fetched from the source (not the cache)

    def _get(self, path: str) -> bytes:
        cached = self.cache / path if self.cache is not None else None
        if cached is not None and cached.is_file():
            return cached.read_bytes()
        data = self.source.get(path)
        if data is None:
            raise SourceInvalid(f"{self.source.describe()} does not serve {path}")
        with self._lock:
            self.fetched += 1
        if cached is not None:
            cached.parent.mkdir(parents=True, exist_ok=True)
            tmp = cached.with_name(cached.name + f".{os.getpid()}.{threading.get_ident()}.tmp")
            tmp.write_bytes(data)
            os.replace(tmp, cached)
        return data

    def _fetch(self, tile: Tile) -> tuple[list[bytes], bytes]:
        data = self._get(tile.entries_path())
        hashes = self._get(tile.path())
        try:
            leaves = decode_bundle(data, tile.width)
        except TileError as exc:
            raise SourceInvalid(f"{tile.entries_path()}: {exc}") from None
        if len(hashes) != 32 * tile.width:
            raise SourceInvalid(f"{tile.path()} holds {len(hashes)} bytes, not {32 * tile.width}")
        return leaves, hashes

    def tiles(self) -> list[Tile]:
        """The level-0 tiles that hold ``[start, size)``."""
        first = self.start // TILE_WIDTH
        return [t for t in tiles_for(self.size, 0) if t.index >= first]

    def __iter__(self) -> Iterator[Bundle]:
        tiles = self.tiles()
        with ThreadPoolExecutor(self.workers, thread_name_prefix="fetch") as pool:
            pending: deque[tuple[Tile, Future[tuple[list[bytes], bytes]]]] = deque()
            queue = iter(tiles)
            for tile in queue:
                pending.append((tile, pool.submit(self._fetch, tile)))
                if len(pending) >= self.ahead:
                    break
            try:
                while pending:
                    tile, future = pending.popleft()
                    leaves, raw = future.result()
                    for nxt in queue:
                        pending.append((nxt, pool.submit(self._fetch, nxt)))
                        break
                    skip = max(0, self.start - tile.start)
                    hashes = [raw[i : i + 32] for i in range(0, len(raw), 32)]
                    if self.progress is not None:
                        self.progress(len(leaves) - skip)
                    yield Bundle(tile.start + skip, leaves[skip:], hashes[skip:])
            finally:
                for _, future in pending:
                    future.cancel()


def fetch_upper_tiles(source: TileSource, size: int) -> dict[tuple[int, int], bytes]:
    """Every hash tile of level 1 and up of a tree of ``size`` entries, as (tree level, index)
    → hash: the perfect subtrees of tree levels 8, 16, … that the tiles hold.

    Raises:
        SourceInvalid: a tile is missing, or is not whole hashes of its width.
    """
    nodes: dict[tuple[int, int], bytes] = {}
    for tile in tiles_for(size):
        if tile.level == 0:
            continue
        path = tile.path()
        data = source.get(path)
        if data is None:
            raise SourceInvalid(f"{source.describe()} does not serve {path}")
        if len(data) != 32 * tile.width:
            raise SourceInvalid(f"{path} holds {len(data)} bytes, not {32 * tile.width}")
        for i in range(tile.width):
            nodes[8 * tile.level, tile.first + i] = data[32 * i : 32 * i + 32]
    return nodes


def check_tile_path(path: str) -> Tile:
    """The tile a path names (for messages and tests).

    Raises:
        SourceError: not a tile path.
    """
    try:
        return parse_path(path)[0]
    except TileError as exc:
        raise SourceError(str(exc)) from None
