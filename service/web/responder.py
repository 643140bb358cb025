"""The one responder of reads: a handler returns a ``Read`` (``service.web.caching``), and the
app's response class (``Responder``) answers it, in one place:

- ``ETag`` and ``Cache-Control`` (a year and ``immutable`` when pinned, else ``no-cache``), and
  304 with no body when ``If-None-Match`` matches;
- on a JSON answer that says its tree size (every JSON read under ``/v1``), the size in
  ``Benchproof-Tree-Size`` and the log key's signature over (size, target, body) in
  ``Benchproof-Signature`` (``verifier.answers``), made once per size, target and body through
  the signer's cache. The target is the request's path as sent, and its query.

A read of "now" is labelled with the size its handler read before its queries ran: it is signed
only if the log has not grown since, so that the body reflects exactly that size; if it has,
the answer goes out unsigned (ask again, or with ``asOf``). An ``asOf`` read is exact and always
signed. A server without the log key (a mirror) says the size unsigned.

Anything else a handler returns is answered as litestar answers it.
"""

from __future__ import annotations

from typing import Any, Protocol, cast

from litestar import Request, Response
from litestar.types import ASGIApp

from service.web.caching import FOREVER, JSON, Read, etag_matches, if_none_match, sent
from service.web.reads import Reader
from verifier.answers import SIGNATURE_HEADER, TREE_SIZE_HEADER, AnswerSigner, normal_target

__all__ = ["Answers", "Responder"]

_SIZE = TREE_SIZE_HEADER.lower().encode()
_SIGNATURE = SIGNATURE_HEADER.lower().encode()


class Answers:
    """How an app answers its reads: the ``reader`` (to tell whether the log grew while a read
    of "now" was made) and the log key's ``signer`` (None: a server without it)."""

    __slots__ = ("reader", "signer")

    def __init__(self, reader: Reader, signer: AnswerSigner | None) -> None:
        self.reader = reader
        self.signer = signer

    def answer(self, request: Request[Any, Any, Any], read: Read) -> ASGIApp:
        """The answer to ``request`` that ``read`` makes (see the module's docstring)."""
        media_type = read.media_type
        text = media_type.startswith("text/") and "charset=" not in media_type
        content_type = f"{media_type}; charset=utf-8" if text else media_type
        headers = [
            (b"etag", read.etag.encode()),
            (b"cache-control", FOREVER if read.pinned else b"no-cache"),
            (b"content-type", content_type.encode()),
        ]
        if etag_matches(if_none_match(request.scope["headers"]), read.etag):
            return sent(b"", headers[:2], status=304)
        if read.size is not None and media_type == JSON:
            headers += self._signed(request.scope, read, read.size)
        return sent(read.body, headers)

    def _signed(self, scope: Any, read: Read, size: int) -> list[tuple[bytes, bytes]]:
        headers = [(_SIZE, str(size).encode())]
        signer = self.signer
        if signer is None:
            return headers
        # ASGI's raw_path is the path as sent, without the query (litestar's test client leaves
        # the query on it, so it is cut here: no path can hold a raw "?").
        raw = (scope.get("raw_path") or scope["path"].encode()).partition(b"?")[0]
        query = scope.get("query_string", b"")
        target = normal_target(raw + b"?" + query if query else raw)
        value = signer.cached(size, target, read.etag)
        if value is None:
            if not read.exact and not self.reader.unchanged(size):
                return headers
            value = signer.sign(size, target, read.etag, read.body)
        headers.append((_SIGNATURE, value.encode()))
        return headers


class _Answering(Protocol):
    answers: Answers


class Responder(Response[Any]):
    """The app's response class: a ``Read`` as the app's ``Answers`` answer it (the app is
    ``service.web.app.BenchproofApp``, which holds them: litestar keeps a route's response class
    on its handler, and the handlers are shared by every app a process makes); anything else as
    litestar answers it."""

    def to_asgi_response(self, app: Any, request: Request[Any, Any, Any], **kw: Any) -> Any:
        content = self.content
        if isinstance(content, Read):
            return cast("_Answering", request.app).answers.answer(request, content)
        return super().to_asgi_response(app, request, **kw)
