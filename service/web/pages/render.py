"""Rendering a page: a Jinja template answered like any read (its ETag, 304 when it matches)."""

from __future__ import annotations

from typing import Any

from litestar import Request, Response

from service.web.caching import etag_of, respond

__all__ = ["HTML", "html", "render"]

HTML = "text/html; charset=utf-8"


def render(request: Request[Any, Any, Any], template: str, context: dict[str, Any]) -> bytes:
    """The page ``template`` rendered with ``context``, as bytes."""
    engine = request.app.template_engine
    assert engine is not None  # noqa: S101 - create_app configures Jinja
    text: str = engine.get_template(template).render(**context, request=request)
    return text.encode()


def html(
    request: Request[Any, Any, Any], template: str, context: dict[str, Any], *, pinned: bool
) -> Response[bytes]:
    """A page rendered now and answered like any read: with its ETag (304 when it matches)."""
    body = render(request, template, context)
    return respond(request, body, etag_of(body), pinned=pinned, media_type=HTML)
