"""The JSON API under ``/v1``, one module per resource: ``runs`` (dossiers, lists, compare),
``groups`` (leaderboards, leader history), ``log`` (checkpoint, key, entries, proofs),
``keys`` (challenges, registration, listing, revocation, grants), ``attestations`` (list, show,
withdraw, hide, the predicate's schema), ``reports`` (resolution) and ``operator`` (health,
ingest); beside them, at the root, ``tiles`` (the C2SP tlog-tiles read API: ``/checkpoint``,
``/tile/…``). Handlers translate: they
parse the request, call one use case of ``service.app`` and answer with its result, as a cached
read (``service.web.caching``) where they read.

The posts about a run (``POST /v1/runs/{ref}/attestations`` and ``…/reports``) share one route,
``run_post``: a reference may hold ``/`` (``<source>:submission/7``), so it is a path parameter,
which must end the route; the suffix picks the resource."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from litestar import Request, Response, post
from litestar.openapi.datastructures import ResponseSpec
from litestar.params import FromPath, RawBody

from service.app.attest import Posted
from service.errors import NotFound
from service.web.api import (
    attestations,
    citations,
    groups,
    keys,
    log,
    operator,
    reports,
    reruns,
    runs,
    tiles,
)
from service.web.deps import Services, ServicesDep
from service.web.params import RUN_ERRORS, problem

__all__ = ["API_HANDLERS"]

_POSTS: dict[
    str, Callable[[Request[Any, Any, Any], Services, str, bytes], Awaitable[Response[bytes]]]
] = {
    "/attestations": attestations.post_on_run,
    "/reports": reports.post_on_run,
    "/reruns": reruns.request_on_run,
}


@post(
    "/v1/runs/{ref:path}",
    tags=["runs"],
    responses={
        201: ResponseSpec(
            Posted,
            description="Appended (attestations: the receipt; reports: {id, index}); 200 when "
            "the log held the same statement already",
            generate_examples=False,
        ),
        **RUN_ERRORS,
        403: problem("Attestation: unknown or unfit key, or a signature that does not verify"),
        422: problem("Attestation: the statement is about no run, or another run"),
        429: problem("Over a rate limit (Retry-After says when to try again)"),
    },
)
async def run_post(
    request: Request[Any, Any, Any],
    services: ServicesDep,
    ref: FromPath[str],
    body: RawBody,
) -> Response[bytes]:
    """``POST /v1/runs/{ref}/attestations``: the body is the attester's DSSE envelope over an
    in-toto Statement v1 about the run (predicate: ``GET /schemas/attestation/v1``).
    ``POST /v1/runs/{ref}/reports``: ``{"reason", "text"}``, anonymous.
    ``POST /v1/runs/{ref}/reruns``: ``{"reason"}``, operators only (a bearer token)."""
    ref = ref.lstrip("/")
    for suffix, answer in _POSTS.items():
        if ref.endswith(suffix):
            return await answer(request, services, ref.removesuffix(suffix), body)
    raise NotFound("POST /v1/runs/{ref} takes …/attestations, …/reports or …/reruns")


API_HANDLERS = [
    *operator.HANDLERS,
    *runs.HANDLERS,
    *groups.HANDLERS,
    *log.HANDLERS,
    *keys.HANDLERS,
    *attestations.HANDLERS,
    *reports.HANDLERS,
    *reruns.HANDLERS,
    *citations.HANDLERS,
    *tiles.HANDLERS,
    run_post,
]
