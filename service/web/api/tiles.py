"""The C2SP tlog-tiles read API beside the JSON one (``service.app.tiles``): ``GET /checkpoint``
(the signed checkpoint, as ``/v1/log/checkpoint``), ``GET /tile/<L>/<N>[.p/<W>]`` (tiles of
Merkle tree hashes) and ``GET /tile/entries/<N>[.p/<W>]`` (entry bundles, gzipped when the
client accepts it). Full tiles and bundles never change: cacheable for a year, ``immutable``;
partial ones and the checkpoint only briefly. Every answer has a strong ETag (``If-None-Match``
answers 304) and ``HEAD`` answers as ``GET`` without the body."""

from __future__ import annotations

from typing import Any

from litestar import Request, Response, get
from litestar.concurrency import sync_to_thread
from litestar.openapi.datastructures import ResponseSpec
from litestar.params import FromPath

from service.app import tiles
from service.web.caching import Prepared, etag_matches, etag_of, if_none_match
from service.web.deps import LedgerDep, ReaderDep
from service.web.params import problem

__all__ = ["FULL", "HANDLERS", "PARTIAL", "accepts_gzip"]

OCTETS = "application/octet-stream"
FULL = b"public, max-age=31536000, immutable"
"""A full tile or bundle: its bytes are fixed for the life of the log."""
PARTIAL = b"public, max-age=60"
"""A partial tile or bundle: fixed by its width too, but a log may stop serving it."""
CHECKPOINT = b"public, max-age=5"
"""The checkpoint changes with every commit: the spec asks for a few seconds at most."""

_STATE = "tiles"  # the app's ``Tiles`` (its cache), made on first use


def _tiles(request: Request[Any, Any, Any]) -> tiles.Tiles:
    state = request.app.state
    found = state.get(_STATE)
    if found is None:
        found = state[_STATE] = tiles.Tiles()
    return found


def accepts_gzip(header: str | None) -> bool:
    """Whether ``Accept-Encoding`` (RFC 9110 §12.5.3) accepts gzip: listed (or ``*`` when gzip
    is not), with a q-value above zero."""
    if not header:
        return False
    gzip_q: float | None = None
    star_q: float | None = None
    for part in header.split(","):
        coding, *params = (p.strip() for p in part.split(";"))
        q = 1.0
        for param in params:
            name, _, value = param.partition("=")
            if name.strip().lower() == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
        coding = coding.lower()
        if coding in ("gzip", "x-gzip"):
            gzip_q = q
        elif coding == "*":
            star_q = q
    if gzip_q is not None:
        return gzip_q > 0
    return star_q is not None and star_q > 0


def _answer(
    request: Request[Any, Any, Any], body: bytes, etag: str, headers: list[tuple[bytes, bytes]]
) -> Response[bytes]:
    headers = [(b"etag", etag.encode()), *headers]
    if etag_matches(if_none_match(request.scope["headers"]), etag):
        return Prepared(b"", headers, status=304)
    return Prepared(body, headers)


@get(
    "/checkpoint",
    tags=["tiles"],
    media_type="text/plain",
    responses={
        200: ResponseSpec(
            str,
            description="The signed checkpoint note (C2SP tlog-checkpoint)",
            media_type="text/plain; charset=utf-8",
            generate_examples=False,
        )
    },
)
async def checkpoint(
    request: Request[Any, Any, Any], ledger: LedgerDep, reader: ReaderDep
) -> Response[bytes]:
    """The latest signed checkpoint note, the same bytes as ``/v1/log/checkpoint``: the tree
    whose tiles ``/tile/…`` serves (C2SP tlog-tiles). Cacheable for 5 seconds."""
    note = tiles.checkpoint_note(ledger, log=reader.log)
    headers = [(b"cache-control", CHECKPOINT), (b"content-type", b"text/plain; charset=utf-8")]
    return _answer(request, note, etag_of(note), headers)


@get(
    "/tile/{rest:path}",
    tags=["tiles"],
    media_type=OCTETS,
    responses={
        200: ResponseSpec(
            bytes,
            description="A tile (hashes, 32 bytes each) or an entry bundle (each leaf prefixed "
            "with its length, big-endian uint16)",
            media_type=OCTETS,
            generate_examples=False,
        ),
        400: problem("Not a tile path of C2SP tlog-tiles (in its one encoding)"),
        404: problem("The tree of the latest checkpoint has no such tile"),
    },
)
async def tile(
    request: Request[Any, Any, Any], reader: ReaderDep, rest: FromPath[str]
) -> Response[bytes]:
    """``/tile/<L>/<N>[.p/<W>]``: the tile at level ``L`` and index ``N`` (``N`` in zero-padded
    groups of three digits, all but the last prefixed with ``x``; ``.p/<W>``: a partial tile of
    width ``W``). ``/tile/entries/<N>[.p/<W>]``: the entry bundle of level-0 tile ``N``, gzipped
    when ``Accept-Encoding`` allows. Full ones are cacheable for a year (``immutable``), partial
    ones for a minute. A partial tile is served for every width the tree has reached."""
    # The path exactly as sent: the router has merged repeated slashes and decoded %XX, and a
    # tile has one spelling only (C2SP tlog-tiles), so ``parse_path`` must see what was asked.
    raw = request.scope.get("raw_path") or ("/tile/" + rest.lstrip("/")).encode()
    path = raw.decode("latin-1").removeprefix("/")
    gzip_ok = accepts_gzip(request.headers.get("accept-encoding"))
    cache = _tiles(request)
    served = cache.cached(path, gzip_ok=gzip_ok)
    if served is None:

        def make() -> tiles.Served:
            return cache.read(reader.log, path, gzip_ok=gzip_ok)  # this thread's read handle

        served = await sync_to_thread(make)
    headers = [
        (b"cache-control", FULL if served.full else PARTIAL),
        (b"content-type", OCTETS.encode()),
    ]
    if path.startswith("tile/entries/"):
        headers.append((b"vary", b"accept-encoding"))
        if served.gzipped:
            headers.append((b"content-encoding", b"gzip"))
    return _answer(request, served.body, served.etag, headers)


HANDLERS = [checkpoint, tile]
