"""One canonical log line per request, with a request id (taken from ``X-Request-ID`` or new),
and the security headers on every answer (``SECURITY_HEADERS``); ``HEAD`` on every read,
answered as the ``GET`` would be without its body (RFC 9110 §9.3.2)."""

from __future__ import annotations

import functools
import itertools
import secrets
import time
from typing import Any

import structlog
from litestar.enums import ScopeType
from litestar.types import ASGIApp, Message, Receive, Scope, Send

from service.web.logs import log_request

__all__ = [
    "CONTENT_SECURITY_POLICY",
    "DOCS_CONTENT_SECURITY_POLICY",
    "HEAD_MARK",
    "SECURITY_HEADERS",
    "RequestLog",
    "head_as_get",
]

HEAD_MARK = "benchproof.head"

_POLICY = {
    # Scripts only from this site's own static files: no inline script, no eval, no other host.
    "default-src": "'self'",
    "script-src": "'self'",
    "style-src": "'self'",
    "img-src": "'self' data:",
    "font-src": "'self' data:",
    "connect-src": "'self'",
    "object-src": "'none'",
    "base-uri": "'none'",
    "form-action": "'self'",
    "frame-ancestors": "'none'",
}


def _policy(**changes: str) -> bytes:
    merged = {**_POLICY, **{name.replace("_", "-"): value for name, value in changes.items()}}
    return "; ".join(f"{name} {value}" for name, value in merged.items()).encode()


CONTENT_SECURITY_POLICY = _policy()
"""The ``Content-Security-Policy`` of every answer but the API docs' page."""

DOCS_CONTENT_SECURITY_POLICY = _policy(style_src="'self' 'unsafe-inline'")
"""The API docs' page (``/schema``): Scalar's script, served from ``/static/openapi``, sets
styles of its own as it renders (inline ``<style>`` elements and ``style`` attributes); its
scripts are still this site's files only."""

SECURITY_HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"x-content-type-options", b"nosniff"),
    # Not "no-referrer": with it, browsers send "Origin: null" on the report form's POST,
    # which the form refuses as a foreign origin.
    (b"referrer-policy", b"strict-origin-when-cross-origin"),
    (b"x-frame-options", b"DENY"),
    (b"cross-origin-opener-policy", b"same-origin"),
)
"""Sent with every answer, beside ``Content-Security-Policy``."""


@functools.cache
def _verify_policy() -> bytes:
    """The verifier page's (``/verify``): the site's policy, with the page's one inline script
    and one inline style admitted by their hashes (still no other host, no 'unsafe-inline')."""
    from service.verifierpage.page import page_hashes

    script, style = page_hashes()
    return _policy(script_src=f"'self' {script}", style_src=f"'self' {style}")


def _csp_for(path: str) -> bytes:
    if path == "/schema" or path.startswith("/schema/"):
        return DOCS_CONTENT_SECURITY_POLICY
    if path == "/verify":
        return _verify_policy()
    return CONTENT_SECURITY_POLICY


_PREFIX = secrets.token_hex(8)
_COUNTER = itertools.count()


def _new_id() -> str:
    """A request id unique within this process and, through a random prefix, across processes
    (cheaper than uuid4, which reads the OS's randomness every time)."""
    return f"{_PREFIX}{next(_COUNTER):016x}"


class RequestLog:
    """Binds ``request_id`` for the request's logs, writes one line when it ends, and adds the
    request id and the security headers to the answer. A plain ASGI wrapper around the whole
    app (not litestar middleware, which the router's own answers, such as a 404 for a path no
    route takes, never pass through); lifespan and websocket scopes pass through."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != ScopeType.HTTP:
            await self.app(scope, receive, send)
            return
        next_app = self.app
        head = bool(scope.get(HEAD_MARK))
        headers = dict(scope.get("headers", []))
        request_id = headers.get(b"x-request-id", b"").decode("latin-1")[:64] or _new_id()
        structlog.contextvars.clear_contextvars()
        structlog.contextvars.bind_contextvars(request_id=request_id)
        policy = _csp_for(scope.get("path", ""))
        start = time.perf_counter()
        status = 500
        size = 0

        async def send_wrapper(message: Message) -> None:
            nonlocal status, size
            if message["type"] == "http.response.start":
                status = message["status"]
                sent = list(message.get("headers", []))
                names = {name.lower() for name, _ in sent}
                extra = [(name, value) for name, value in SECURITY_HEADERS if name not in names]
                if b"content-security-policy" not in names:
                    extra.append((b"content-security-policy", policy))
                message["headers"] = [*sent, *extra, (b"x-request-id", request_id.encode())]
            elif message["type"] == "http.response.body":
                size += len(message.get("body", b""))
            await send(message)

        try:
            await next_app(scope, receive, send_wrapper)
        finally:
            fields: dict[str, Any] = {
                "method": "HEAD" if head else scope.get("method"),
                "path": scope.get("path"),
                "status": status,
                "bytes": size,
                "ms": round((time.perf_counter() - start) * 1000, 3),
            }
            log_request(request_id, fields)


def head_as_get(scope: Scope, send: Send) -> tuple[Scope, Send]:
    """A ``HEAD`` request as the ``GET`` it mirrors, and a ``send`` that drops the body (the
    headers, ``content-length`` included, stay those of the ``GET``). Applied before routing, so
    every GET route answers HEAD too."""
    if scope["type"] != ScopeType.HTTP or scope.get("method") != "HEAD":
        return scope, send
    as_get: Any = {**scope, "method": "GET", HEAD_MARK: True}

    async def bodiless(message: Message) -> None:
        if message["type"] == "http.response.body":
            message = {**message, "body": b""}
        await send(message)

    return as_get, bodiless
