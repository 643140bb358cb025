"""The cache policy of every read (API, log and pages), and the responses that carry it.

Every read has a strong ETag (``If-None-Match`` answers 304, RFC 9110 §13.1.2 weak comparison,
lists and ``*``). A read whose view can never change (``settled``: ``asOf`` a tree size, or an
instant before the latest entry) may be cached for good; anything else is ``no-cache``.

A read's status, headers and body are final when the handler returns: there is nothing to merge
(the app sets no layer headers, cookies or type encoders on these routes) and nothing to encode.
``Prepared`` is still a litestar ``Response``, but turns into a two-message ASGI callable
directly: about a fifth of the cost of a cached read otherwise.

A JSON answer to a ``GET /v1/…`` also says the tree size it reflects and carries the log key's
signature over it (``verifier.answers``): ``Answering`` gathers, while the answer is made, the size
it reflects (the ``asOf`` the handler resolved, which ``settled`` records, else the size it read
from the reader), and ``respond`` signs (size, target, body) once, through the signer's cache.
"""

from __future__ import annotations

import hashlib
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from litestar import Request, Response
from litestar.types import HTTPResponseStartEvent, Receive, Scope, Send

from verifier.answers import AnswerSigner, normal_target

if TYPE_CHECKING:
    from service.web.reads import Reader

__all__ = [
    "ANSWERING",
    "JSON",
    "Answering",
    "Prepared",
    "etag_matches",
    "etag_of",
    "if_none_match",
    "respond",
    "settled",
]

JSON = "application/json"
_SIZE_HEADER = b"benchproof-tree-size"
_SIGNATURE_HEADER = b"benchproof-signature"


class Answering:
    """What the answer to one ``GET /v1/…`` reflects, gathered while a handler makes it: the
    ``asOf`` size it resolved (``at``, set by ``settled``), else the size it last read from the
    reader (``size``: ``Reader.size`` records it; it starts as the size read when the request
    came in). ``signer`` is None on a server without the log key: answers then say their size
    but carry no signature."""

    __slots__ = ("at", "reader", "signer", "size")

    def __init__(self, reader: Reader, signer: AnswerSigner | None, size: int) -> None:
        self.reader = reader
        self.signer = signer
        self.size = size
        self.at: int | None = None


ANSWERING: ContextVar[Answering | None] = ContextVar("benchproof_answering", default=None)
"""The record of the ``/v1`` read being answered (None outside one)."""


def etag_of(body: bytes) -> str:
    """A strong ETag: the first 128 bits of the body's SHA-256."""
    return '"' + hashlib.sha256(body).hexdigest()[:32] + '"'


class _Send:
    __slots__ = ("_body", "_start")

    def __init__(self, start: HTTPResponseStartEvent, body: bytes) -> None:
        self._start = start
        self._body = body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send(self._start)
        await send({"type": "http.response.body", "body": self._body, "more_body": False})


class Prepared(Response[bytes]):
    """A response whose headers are given in full (names lower-case, as ASGI wants them)."""

    __slots__ = ("_raw_headers",)

    def __init__(self, body: bytes, headers: list[tuple[bytes, bytes]], status: int = 200) -> None:
        super().__init__(content=body, status_code=status)
        self._raw_headers = headers

    def to_asgi_response(self, app: Any, request: Any, **_: Any) -> Any:
        status = self.status_code or 200
        headers = self._raw_headers
        if status != 304:
            headers = [*headers, (b"content-length", str(len(self.content)).encode())]
        start: HTTPResponseStartEvent = {
            "type": "http.response.start",
            "status": status,
            "headers": headers,
        }
        return _Send(start, self.content if status != 304 else b"")


def if_none_match(raw: Any) -> str | None:
    """The ``If-None-Match`` header from the raw ASGI headers (building litestar's header mapping
    costs a twentieth of a cached read, and only this one header is needed)."""
    for name, value in raw:
        if name == b"if-none-match":  # ASGI servers lower-case header names
            return str(value.decode("latin-1"))
    return None


def etag_matches(header: str | None, etag: str) -> bool:
    """RFC 9110 §13.1.2: ``If-None-Match`` matches when it is ``*`` or lists ``etag`` under the
    weak comparison (a ``W/`` prefix on either side is ignored)."""
    if header is None:
        return False
    if header.strip() == "*":
        return True
    ours = etag.removeprefix("W/")
    return any(tag.strip().removeprefix("W/") == ours for tag in header.split(","))


FOREVER = b"public, max-age=31536000, immutable"
"""The cache policy of an answer that never changes: a year (RFC 9111's customary most), and
``immutable`` so a browser does not revalidate it either."""


def settled(reader: Reader, text: str | None, at: int | None) -> bool:
    """Whether the view ``asOf`` names can never change, so the answer may be cached for good.

    A tree size is fixed once the log has reached it. An instant is fixed once the log holds an
    entry recorded after it (recording times never decrease); an instant at or beyond the
    latest entry (the future included) names the current size, which grows.

    It also notes ``at`` as the size the answer reflects (``Answering``): a read that resolves
    ``asOf`` passes it here, or its signed answer would name the size read now instead."""
    if at is None or text is None:
        return False
    answering = ANSWERING.get()
    if answering is not None:
        answering.at = at  # the answer reflects the size asOf names
    return text.strip().isdigit() or at < reader.size()


def respond(
    request: Request[Any, Any, Any], body: bytes, etag: str, *, pinned: bool, media_type: str = JSON
) -> Response[bytes]:
    """A cacheable read: ETag always; reads pinned to a tree size never change."""
    cache = FOREVER if pinned else b"no-cache"
    text = media_type.startswith("text/") and "charset=" not in media_type
    content_type = f"{media_type}; charset=utf-8" if text else media_type
    headers = [
        (b"etag", etag.encode()),
        (b"cache-control", cache),
        (b"content-type", content_type.encode()),
    ]
    if etag_matches(if_none_match(request.scope["headers"]), etag):
        return Prepared(b"", headers[:2], status=304)
    if media_type == JSON:
        answering = ANSWERING.get()
        if answering is not None:
            headers += _signed(answering, request.scope, body, etag)
    return Prepared(body, headers)


def _signed(answering: Answering, scope: Any, body: bytes, etag: str) -> list[tuple[bytes, bytes]]:
    """The headers that say which tree size a JSON answer reflects, and the log key's signature
    over it (made once per size, target and body: the signer caches it)."""
    at = answering.at
    size = answering.size if at is None else at
    headers = [(_SIZE_HEADER, str(size).encode())]
    signer = answering.signer
    if signer is None:
        return headers
    # ASGI's raw_path is the path as sent, without the query (litestar's test client leaves the
    # query on it, so it is cut here: no path can hold a raw "?").
    raw = (scope.get("raw_path") or scope["path"].encode()).partition(b"?")[0]
    query = scope.get("query_string", b"")
    target = normal_target(raw + b"?" + query if query else raw)
    value = signer.cached(size, target, etag)
    if value is None:
        # A read of "now" was labelled with a size read from the reader a moment before its
        # queries ran: sign only if the log has not grown since, so that the body reflects
        # exactly that size. If it has, the answer goes out unsigned (ask again, or with asOf).
        if at is None and not answering.reader.unchanged(size):
            return headers
        value = signer.sign(size, target, etag, body)
    headers.append((_SIGNATURE_HEADER, value.encode()))
    return headers
