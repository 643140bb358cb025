"""``/v1/citations``: check a plain citation as pasted from a paper (a record, a digest, an
access date): was that digest a version of that record on that day? With the entry and its
inclusion proof, so the answer can itself be checked. And check a citation receipt online:
consistency from its checkpoint to today, and what changed since it was cited."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from litestar import Request, Response, get, post
from litestar.openapi.spec import OpenAPIType, Schema
from litestar.params import QueryParameter, RawBody

from service.app import cite
from service.web.caching import Read, etag_of
from service.web.deps import ReaderDep, ServicesDep
from service.web.docs import documented, json_body
from service.web.params import BAD_REQUEST, answer, problem

__all__ = ["HANDLERS"]

_ENC = msgspec.json.Encoder()
_RECEIPT = Schema(
    type=OpenAPIType.OBJECT, description="A citation receipt, as `benchproof cite` saves it"
)


@get(
    "/v1/citations/check",
    tags=["citations"],
    responses={**answer(cite.CheckedCitation, "Whether the citation holds"), **BAD_REQUEST},
)
async def check(
    reader: ReaderDep,
    run: Annotated[str, QueryParameter(description="the cited record: any run reference")],
    digest: Annotated[str, QueryParameter(description="the cited digest, sha256:<hex>")],
    accessed: Annotated[str, QueryParameter(description="the access date, YYYY-MM-DD")],
) -> Read:
    """``valid`` when the digest was a version of the record ``run`` names by the end of the
    access day (the reference resolves to it, to a correction of it, or is one of its
    aliases); the digest's ``run.ingested`` entry and its inclusion proof in the latest
    checkpoint either way, when the log holds it."""
    log = reader.log
    size = reader.size()
    body = _ENC.encode(cite.check_citation(log.session, log, run, digest, accessed))
    return Read(body, etag_of(body), size=size)


@post(
    "/v1/citations/verify",
    tags=["citations"],
    sync_to_thread=True,
    status_code=200,
    responses={
        **answer(cite.OnlineCheck, "The receipt holds; consistency since, and what changed"),
        422: problem("The receipt does not verify against this log (the check that failed)"),
    },
    operation_class=documented(body=json_body(_RECEIPT)),
)
def verify(
    request: Request[Any, Any, Any], services: ServicesDep, body: RawBody
) -> Response[bytes]:
    """Check a citation receipt (the body: the file) against this log: every offline check with
    this log's key, then a consistency proof from the receipt's checkpoint to the latest one
    (with it, signed), and what changed for the run since (superseded by whom, retracted, the
    evidence level now, attestations and reports added)."""
    log = services.reader.log
    base = services.base(request)
    checked = cite.verify_online(services.ledger, log.session, log, body, base=base)
    return Response(_ENC.encode(checked), media_type="application/json")


HANDLERS = [check, verify]
