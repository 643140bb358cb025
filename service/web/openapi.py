"""The API's OpenAPI document and its viewer at ``/schema``, served whole by this service.

The viewer is Scalar's API reference, its released script kept in ``static/openapi/`` with its
version and license, so the docs work without internet; any other ``/schema/*`` path is the
site's own 404. Two routes serve several resources each: ``GET /v1/runs/{ref}`` also answers
…/manifest, …/history and …/citation, and ``POST /v1/runs/{ref}`` takes …/attestations,
…/reports and …/reruns (a reference may hold ``/``, so it is a path parameter, which must end
the route). ``document`` lists each of them as its own path, and the body that
``POST /v1/ingest/{source}`` takes, which litestar cannot see in a raw body.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from litestar import Router
from litestar.connection import ASGIConnection
from litestar.exceptions import NotFoundException
from litestar.handlers import BaseRouteHandler
from litestar.openapi import OpenAPIConfig
from litestar.openapi.plugins import ScalarRenderPlugin
from litestar.openapi.spec import (
    Components,
    OpenAPI,
    PathItem,
    SecurityScheme,
)

from service.web.openapi_paths import (
    RUN,
    ingest_body,
    raw_bodies,
    run_params,
    run_posts,
    run_reads,
)

__all__ = ["ASSETS", "SCALAR_VERSION", "config", "document"]

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


def document(schema: OpenAPI) -> None:
    """Complete the generated ``schema`` in place: each resource of the two path-catching run
    routes as its own path, and the request bodies of the routes that read theirs raw.

    Raises:
        RuntimeError: a route this describes is no longer in the document (a test catches it
            before a server starts without it).
    """
    paths = schema.paths if schema.paths is not None else {}
    run = paths.get(RUN)
    ingest = paths.get("/v1/ingest/{source}")
    if run is None or run.get is None or run.post is None or ingest is None or not ingest.post:
        raise RuntimeError("the OpenAPI document lacks the run or ingest routes it completes")
    get, post = run.get, run.post
    for suffix, operation in run_reads(get).items():
        paths.setdefault(f"{RUN}/{suffix}", PathItem(get=operation))
    for suffix, operation in run_posts(post).items():
        paths.setdefault(f"{RUN}/{suffix}", PathItem(post=operation))
    # The bare reference is a dossier (no ``format``); it takes no POST (each post names its
    # resource).
    run.get = replace(get, parameters=run_params(get, citation=False))
    run.post = None
    ingest.post = ingest_body(ingest.post)
    raw_bodies(paths)
    schema.paths = paths
