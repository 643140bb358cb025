"""``/v1/reruns``: index-controlled reruns. ``POST /v1/runs/{ref}/reruns`` (operators,
``request_on_run``) asks for one; ``GET /v1/reruns?state=`` lists the
requests with the environment each needs; a rerunner's worker reads a request's manifest
bundle, claims it (``…/claim``, its own signed ``rerun.claimed.v2``) and posts the measurement
(``…/result``, its DSSE in-toto statement); the index judges it against the tolerance policy."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from litestar import Request, Response, get, post
from litestar.concurrency import sync_to_thread
from litestar.openapi.datastructures import ResponseSpec
from litestar.params import FromPath, QueryParameter, RawBody

from events.entries import INTOTO_PAYLOAD_TYPE, format_instant
from service.app import reruns
from service.app.attest import Posted
from service.app.keyadmin import Recorded
from service.web.auth import TokenStore
from service.web.caching import Read, etag_of
from service.web.deps import LedgerDep, ReaderDep, ServicesDep
from service.web.docs import TEXT, documented, envelope, event, json_body, object_of
from service.web.guards import bearer_token
from service.web.params import BAD_REQUEST, OPERATOR_TOKEN, RUN_ERRORS, RunRef, answer, problem
from service.web.problems import Unauthorized
from service.web.refs import ref_of

__all__ = ["HANDLERS", "request_on_run"]

_ENC = msgspec.json.Encoder()
_RESULT = envelope(
    INTOTO_PAYLOAD_TYPE,
    "base64 of an in-toto Statement v1 with the rerun's measurement",
    "A DSSE envelope signed by the rerunner's key that holds the claim",
)
_SIGNER = {
    403: problem("Not a valid rerunner key, a signature that does not verify, or not the claimer"),
    404: problem("No rerun request has this id"),
    409: problem("Answered already, or another worker's lease holds it"),
    422: problem("The environment is not the one the run needs"),
}


@post(
    "/v1/runs/{ref:str}/reruns",
    tags=["runs"],
    summary="Ask for a rerun",
    description="An operator asks for an index-controlled rerun of the run (the index signs"
    " `rerun.requested.v1`).",
    operation_id="V1RunsRefReruns",
    security=[{"operatorToken": []}],
    responses={
        201: ResponseSpec(
            Recorded,
            description="Asked: the request's id and log index; 200 when the log held it already",
            generate_examples=False,
        ),
        **RUN_ERRORS,
        422: problem(
            "The run cannot be rerun: no hardware to rerun on, or a primary value that is not"
            " a time"
        ),
        **OPERATOR_TOKEN,
    },
    operation_class=documented(body=json_body(object_of("reason", reason=TEXT))),
)
async def request_on_run(
    request: Request[Any, Any, Any], services: ServicesDep, ref: RunRef, body: RawBody
) -> Response[bytes]:
    """An operator asks for an index-controlled rerun of the run (the index signs
    ``rerun.requested.v1``): the body is ``{"reason"}``, with an operator token. 201
    ``{id, index}``; 200 when the log held it already."""
    tokens: TokenStore = request.app.state.tokens
    if tokens.check(bearer_token(request.headers.get("authorization", ""))) is None:
        raise Unauthorized("a valid operator token is required (Authorization: Bearer <token>)")
    recorded, new = await sync_to_thread(reruns.request_rerun, services.ledger, ref_of(ref), body)
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
) -> Read:
    """Rerun requests, oldest first, each with its state now (claimed while a worker's lease
    runs) and the environment its run needs (``kind`` cpu or gpu, ``model``, ``architecture``)."""
    size = reader.size()
    page = reruns.rerun_list(
        reader.conn, size=size, now=format_instant(ledger.clock()), state=wanted
    )
    body = _ENC.encode(page)
    return Read(body, etag_of(body), size=size)


@get(
    "/v1/reruns/{request_id:str}/bundle",
    tags=["reruns"],
    responses={
        **answer(dict[str, Any], "The run's digest and its manifests by role"),
        404: problem("No rerun request has this id"),
    },
)
async def bundle(reader: ReaderDep, request_id: FromPath[str]) -> Read:
    """The harness's material: the run's digest and the manifests it was ingested with, by role
    (run, protocol, environment, workload, implementation, …)."""
    size = reader.size()
    body = _ENC.encode(reruns.request_bundle(reader.conn, reader.log, request_id))
    return Read(body, etag_of(body), size=size)


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
    operation_class=documented(body=json_body(event("rerun.claimed.v2", "a rerunner's key"))),
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
    operation_class=documented(body=json_body(_RESULT)),
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


HANDLERS = [request_on_run, rerun_list, bundle, claim, result]
