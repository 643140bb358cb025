"""Rendering a page: a Jinja template answered like any read (a ``Read``: its ETag, 304 when it
matches)."""

from __future__ import annotations

from typing import Any

from litestar import Request

from service.web.caching import Read, etag_of

__all__ = ["HTML", "html", "page", "render"]

HTML = "text/html; charset=utf-8"


def render(request: Request[Any, Any, Any], template: str, context: dict[str, Any]) -> bytes:
    """The page ``template`` rendered with ``context``, as bytes."""
    engine = request.app.template_engine
    assert engine is not None  # noqa: S101 - create_app configures Jinja
    text: str = engine.get_template(template).render(**context, request=request)
    return text.encode()


def html(
    request: Request[Any, Any, Any], template: str, context: dict[str, Any], *, pinned: bool
) -> Read:
    """A page rendered now and answered like any read: with its ETag (304 when it matches)."""
    return page(render(request, template, context), pinned=pinned)


def page(body: bytes, etag: str | None = None, *, pinned: bool = False) -> Read:
    """A rendered page (``body``, its ETag ``etag`` else made here) as a read."""
    return Read(body, etag_of(body) if etag is None else etag, pinned=pinned, media_type=HTML)
