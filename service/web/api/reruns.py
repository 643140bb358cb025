"""``/v1/reruns``: index-controlled reruns. ``POST /v1/runs/{ref}/reruns`` (operators; in the
shared run route, ``request_on_run``) asks for one; ``GET /v1/reruns?state=`` lists the
requests with the environment each needs; a rerunner's worker reads a request's manifest
bundle, claims it (``…/claim``, its own signed ``rerun.claimed.v2``) and posts the measurement
(``…/result``, its DSSE in-toto statement); the index judges it against the tolerance policy."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from litestar import Request, Response, get, post
from litestar.concurrency import sync_to_thread
from litestar.params import FromPath, QueryParameter, RawBody

from events.entries import format_instant
from service.app import reruns
from service.app.attest import Posted
from service.app.keyadmin import Recorded
from service.web.auth import TokenStore
from service.web.caching import etag_of, respond
from service.web.deps import LedgerDep, ReaderDep, Services
from service.web.guards import bearer_token
from service.web.params import BAD_REQUEST, answer, problem
from service.web.problems import Unauthorized

__all__ = ["HANDLERS", "request_on_run"]

_ENC = msgspec.json.Encoder()
_SIGNER = {
    403: problem("Not a valid rerunner key, a signature that does not verify, or not the claimer"),
    404: problem("No rerun request has this id"),
    409: problem("Answered already, or another worker's lease holds it"),
    422: problem("The environment is not the one the run needs"),
}


async def request_on_run(
    request: Request[Any, Any, Any], services: Services, ref: str, body: bytes
) -> Response[bytes]:
    """``POST /v1/runs/{ref}/reruns`` with ``{"reason"}`` (operators only): 201 ``{id, index}``."""
    tokens: TokenStore = request.app.state.tokens
    if tokens.check(bearer_token(request.headers.get("authorization", ""))) is None:
        raise Unauthorized("a valid operator token is required (Authorization: Bearer <token>)")
    recorded, new = await sync_to_thread(reruns.request_rerun, services.ledger, ref, body)
    services.reader.invalidate()
    return _written(recorded, new)


def _written(answer: object, new: bool) -> Response[bytes]:
    """201 with ``answer``, or 200 when the log held the entry already."""
    return Response(
        _ENC.encode(answer), status_code=201 if new else 200, media_type="application/json"
    )


@get(
    "/v1/reruns",
    tags=["reruns"],
    responses={**answer(reruns.RerunPage, "The rerun requests"), **BAD_REQUEST},
)
async def rerun_list(
    request: Request[Any, Any, Any],
    reader: ReaderDep,
    ledger: LedgerDep,
    wanted: Annotated[
        str | None,
        QueryParameter(name="state", description="pending, claimed or completed (default: all)"),
    ] = None,
) -> Response[bytes]:
    """Rerun requests, oldest first, each with its state now (claimed while a worker's lease
    runs) and the environment its run needs (``kind`` cpu or gpu, ``model``, ``architecture``)."""
    page = reruns.rerun_list(
        reader.conn, size=reader.size(), now=format_instant(ledger.clock()), state=wanted
    )
    body = _ENC.encode(page)
    return respond(request, body, etag_of(body), pinned=False)


@get(
    "/v1/reruns/{request_id:str}/bundle",
    tags=["reruns"],
    responses={404: problem("No rerun request has this id")},
)
async def bundle(
    request: Request[Any, Any, Any], reader: ReaderDep, request_id: FromPath[str]
) -> Response[bytes]:
    """The harness's material: the run's digest and the manifests it was ingested with, by role
    (run, protocol, environment, workload, implementation, …)."""
    body = _ENC.encode(reruns.request_bundle(reader.conn, reader.log, request_id))
    return respond(request, body, etag_of(body), pinned=False)


@post(
    "/v1/reruns/{request_id:str}/claim",
    tags=["reruns"],
    sync_to_thread=True,
    status_code=201,
    responses={
        **answer(Recorded, "The claim's entry (200: the log held it already)"),
        400: problem("Malformed envelope or claim"),
        **_SIGNER,
    },
)
def claim(
    ledger: LedgerDep, reader: ReaderDep, request_id: FromPath[str], body: RawBody
) -> Response[bytes]:
    """A rerunner's worker takes the request until its lease ends: the body is its DSSE
    envelope over ``rerun.claimed.v2`` {runDigest, requestId, worker, leaseUntil (at most an
    hour away), environment}."""
    recorded, new = reruns.claim_rerun(ledger, request_id, body, reader.log)
    reader.invalidate()
    return _written(recorded, new)


@post(
    "/v1/reruns/{request_id:str}/result",
    tags=["reruns"],
    sync_to_thread=True,
    status_code=201,
    responses={
        **answer(Posted, "Where the result landed, a checkpoint and the inclusion proof"),
        400: problem("Malformed, a verdict of its own, another run, or too few samples"),
        **_SIGNER,
    },
)
def result(
    ledger: LedgerDep, reader: ReaderDep, request_id: FromPath[str], body: RawBody
) -> Response[bytes]:
    """The claimer's measurement: a DSSE envelope over an in-toto Statement v1 about the run
    with the predicate ``https://benchproof.dev/rerun/v2`` (requestId, samples in ns,
    correctness, environment, harness; no verdict). 201; 200 when the log held it already."""
    posting = reruns.complete_rerun(ledger, request_id, body, reader.log)
    reader.invalidate()
    return _written(posting.posted, posting.new)


HANDLERS = [rerun_list, bundle, claim, result]
