"""The API's OpenAPI document and its viewer at ``/schema``, served whole by this service.

The viewer is Scalar's API reference, its released script kept in ``static/openapi/`` with its
version and license, so the docs work without internet; any other ``/schema/*`` path is the
site's own 404. The document is litestar's, made from the routes alone: each resource is a
route of its own, and what a route's signature cannot show (a body read raw, an answer in
several media types) the route names in its decorator (``service.web.docs``).
"""

from __future__ import annotations

from typing import Any

from litestar import Router
from litestar.connection import ASGIConnection
from litestar.exceptions import NotFoundException
from litestar.handlers import BaseRouteHandler
from litestar.openapi import OpenAPIConfig
from litestar.openapi.plugins import ScalarRenderPlugin
from litestar.openapi.spec import Components, SecurityScheme

__all__ = ["ASSETS", "SCALAR_VERSION", "config"]

SCALAR_VERSION = "1.76.0"
"""The version of ``@scalar/api-reference`` kept in ``static/openapi/`` (its README there says
where it came from and how to update it)."""

ASSETS = "/static/openapi"
SCALAR_JS = f"{ASSETS}/scalar-api-reference-{SCALAR_VERSION}/standalone.js"
DOCS_CSS = f"{ASSETS}/docs.css"

# Scalar's defaults reach out to the internet: fonts from its CDN, telemetry, its AI agent and
# MCP integrations. The page loads nothing but this server's own files.
_SCALAR_OPTIONS: dict[str, Any] = {
    "withDefaultFonts": False,
    "telemetry": False,
    "agent": {"disabled": True},
    "mcp": {"disabled": True},
    "showDeveloperTools": "never",
}


def _schema_pages_only(
    connection: ASGIConnection[Any, Any, Any, Any], handler: BaseRouteHandler
) -> None:
    """A guard on the ``/schema`` router: its catch-all route (litestar's own bare "Error 404"
    page for any other path) raises, so the app's handler answers the site's 404 instead.

    Raises:
        NotFoundException: on the catch-all route.
    """
    if any("{path:" in path for path in handler.paths):
        raise NotFoundException(f"no such page of the API docs: {connection.url.path}")


def config() -> OpenAPIConfig:
    """The OpenAPI configuration: the document at ``/schema/openapi.json``, the viewer at
    ``/schema`` (and ``/schema/scalar``) with its assets from ``/static/openapi``."""
    return OpenAPIConfig(
        title="Benchproof",
        version="1",
        description="A signed, event-sourced, offline-verifiable index of benchmark runs.",
        openapi_router=Router(
            "/schema",
            route_handlers=[],
            include_in_schema=False,
            guards=[_schema_pages_only],
        ),
        render_plugins=[
            ScalarRenderPlugin(
                js_url=SCALAR_JS, css_url=DOCS_CSS, favicon="", options=_SCALAR_OPTIONS
            )
        ],
        components=Components(
            security_schemes={
                "operatorToken": SecurityScheme(
                    type="http",
                    scheme="bearer",
                    description="An operator token (`benchproof token create NAME`).",
                )
            }
        ),
    )
