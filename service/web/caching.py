"""The cache policy of every read (API, log and pages), and the value a read answers with.

Every read has a strong ETag (``If-None-Match`` answers 304, RFC 9110 §13.1.2 weak comparison,
lists and ``*``). A read whose view can never change (``pinned``: ``asOf`` a tree size, or an
instant before the latest entry) may be cached for good; anything else is ``no-cache``.

A read handler returns a ``Read``: the encoded view, its ETag, whether it is pinned and the tree
size it reflects. One responder (``service.web.responder``) turns it into the answer: the cache
headers, a 304 when ``If-None-Match`` matches, and on a JSON answer under ``/v1`` the tree size
and the log key's signature.

A read's status, headers and body are final when the handler returns: there is nothing to merge
(the app sets no layer headers, cookies or type encoders on these routes) and nothing to encode.
``Prepared`` is still a litestar ``Response``, but turns into a two-message ASGI callable
directly: about a fifth of the cost of a cached read otherwise.
"""

from __future__ import annotations

import hashlib
from typing import Any

from litestar import Response
from litestar.types import ASGIApp, HTTPResponseStartEvent, Receive, Scope, Send

__all__ = [
    "FOREVER",
    "JSON",
    "Prepared",
    "Read",
    "etag_matches",
    "etag_of",
    "if_none_match",
    "sent",
]

JSON = "application/json"


class Read:
    """What a read handler answers: the encoded view (``body``) and its ``etag``; ``pinned``:
    it can never change (cached for good); ``size``: the tree size it reflects, which a JSON
    answer under ``/v1`` says and the log key signs (None: a page, or a document outside the
    log); ``exact``: that size is the one ``asOf`` named, so the body reflects exactly it (else
    it is the size read as the read began, which the log may have outgrown meanwhile).

    A plain class, not a struct: litestar would document a struct a handler returns as a schema
    of the OpenAPI document, and a ``Read`` is no part of any answer's shape."""

    __slots__ = ("body", "etag", "exact", "media_type", "pinned", "size")

    def __init__(
        self,
        body: bytes,
        etag: str,
        *,
        pinned: bool = False,
        size: int | None = None,
        exact: bool = False,
        media_type: str = JSON,
    ) -> None:
        self.body = body
        self.etag = etag
        self.pinned = pinned
        self.size = size
        self.exact = exact
        self.media_type = media_type


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
        return sent(self.content, self._raw_headers, self.status_code or 200)


def sent(body: bytes, headers: list[tuple[bytes, bytes]], status: int = 200) -> ASGIApp:
    """The ASGI callable that sends ``status``, ``headers`` (given in full: names lower-case)
    and ``body`` (none on a 304), with its ``Content-Length``."""
    if status != 304:
        headers = [*headers, (b"content-length", str(len(body)).encode())]
    start: HTTPResponseStartEvent = {
        "type": "http.response.start",
        "status": status,
        "headers": headers,
    }
    return _Send(start, body if status != 304 else b"")


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
