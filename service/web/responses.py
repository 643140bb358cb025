"""Cached reads answered without litestar's general response machinery.

A cached read's status, headers and body are final when the handler returns: there is nothing
to merge (the app sets no layer headers, cookies or type encoders on these routes) and nothing
to encode. ``Prepared`` is still a litestar ``Response`` (so the handlers' return annotations,
and with them the OpenAPI schema, stay as they are), but turns into a two-message ASGI callable
directly: about a fifth of the cost of a cached read otherwise."""

from __future__ import annotations

from typing import Any

from litestar import Response
from litestar.types import Receive, Scope, Send

__all__ = ["Prepared", "etag_matches", "if_none_match"]


class _Send:
    __slots__ = ("_body", "_start")

    def __init__(self, start: dict[str, Any], body: bytes) -> None:
        self._start = start
        self._body = body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send(self._start)  # type: ignore[arg-type]
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
        start = {"type": "http.response.start", "status": status, "headers": headers}
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
