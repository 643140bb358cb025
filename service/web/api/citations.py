"""``/v1/citations``: check a plain citation as pasted from a paper (a record, a digest, an
access date): was that digest a version of that record on that day? With the entry and its
inclusion proof, so the answer can itself be checked."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from litestar import Request, Response, get
from litestar.params import QueryParameter

from service.app import cite
from service.web.caching import etag_of, respond
from service.web.deps import ReaderDep
from service.web.params import BAD_REQUEST, answer

__all__ = ["HANDLERS"]

_ENC = msgspec.json.Encoder()


@get(
    "/v1/citations/check",
    tags=["citations"],
    responses={**answer(cite.CheckedCitation, "Whether the citation holds"), **BAD_REQUEST},
)
async def check(
    request: Request[Any, Any, Any],
    reader: ReaderDep,
    run: Annotated[str, QueryParameter(description="the cited record: any run reference")],
    digest: Annotated[str, QueryParameter(description="the cited digest, sha256:<hex>")],
    accessed: Annotated[str, QueryParameter(description="the access date, YYYY-MM-DD")],
) -> Response[bytes]:
    """``valid`` when the digest was a version of the record ``run`` names by the end of the
    access day (the reference resolves to it, to a correction of it, or is one of its
    aliases); the digest's ``run.ingested`` entry and its inclusion proof in the latest
    checkpoint either way, when the log holds it."""
    log = reader.log
    body = _ENC.encode(cite.check_citation(log.session, log, run, digest, accessed))
    return respond(request, body, etag_of(body), pinned=False)


HANDLERS = [check]
