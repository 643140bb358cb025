"""The operator's routes: ``/healthz`` and ``POST /v1/ingest/{source}``, which only a request
with a valid operator token reaches (the ``operator_only`` guard)."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from litestar import Request, get
from litestar.openapi.spec import (
    OpenAPIFormat,
    OpenAPIMediaType,
    OpenAPIType,
    RequestBody,
    Schema,
)
from litestar.params import FromPath, QueryParameter, RawBody

from service.app.ingest import ingest_upload, upload_name
from service.ingest.api import SOURCES
from service.ingest.core import IngestResult
from service.web.deps import LedgerDep, ReaderDep
from service.web.docs import OBJECT, TEXT, documented
from service.web.guards import operator_post
from service.web.params import MAX_BODY_TEXT, problem

__all__ = ["HANDLERS"]


_INGEST_FORMATS = (
    "The file to import, as its source publishes it (at most 64 MiB unless the server sets"
    " another limit). `?filename=` picks its format by its suffix; without it the content type"
    " does: JSON (`application/json`, the default), YAML (`application/yaml`), JSON lines"
    " (`application/x-ndjson`), CSV (`text/csv`) or zstd-compressed JSON lines"
    " (`application/zstd`, the KernelIndex catalog export). Sources: `manifest` takes"
    " KernelIndex manifests (one, a JSON array, JSON lines or several YAML documents);"
    " `kernelindex-catalog` the catalog export; `sol-execbench`, `liger`, `mlperf-inference`"
    " and `kernelbench-timings` their published result files (mapping rules:"
    " service/ingest/README.md)."
)
_INGEST_BODY = RequestBody(
    required=True,
    description=_INGEST_FORMATS,
    content={
        "application/json": OpenAPIMediaType(
            schema=Schema(
                one_of=[OBJECT, Schema(type=OpenAPIType.ARRAY, items=OBJECT)],
                description="A record or manifest, or an array of them",
            )
        ),
        "application/yaml": OpenAPIMediaType(schema=TEXT),
        "application/x-ndjson": OpenAPIMediaType(schema=TEXT),
        "text/csv": OpenAPIMediaType(schema=TEXT),
        "application/zstd": OpenAPIMediaType(
            schema=Schema(type=OpenAPIType.STRING, format=OpenAPIFormat.BINARY)
        ),
    },
)


class Health(msgspec.Struct, frozen=True):
    """The service is up; how many entries its log holds, and its name."""

    status: str
    treeSize: int
    origin: str


@get("/healthz", tags=["service"])
async def healthz(reader: ReaderDep) -> Health:
    """Liveness and the log size."""
    return Health("ok", reader.size(), reader.log.origin)


@operator_post(
    "/v1/ingest/{source:str}",
    {
        400: problem("Unknown source"),
        413: problem(f"The body is over the size limit ({MAX_BODY_TEXT})"),
        422: problem(
            "Invalid input, refused whole: nothing was appended (a body that does not parse as"
            " its format says which format it was read as, and what decides the format)"
        ),
    },
    status_code=200,
    operation_class=documented(
        body=_INGEST_BODY,
        values={"source": Schema(type=OpenAPIType.STRING, enum=list(SOURCES))},
    ),
)
def ingest(
    request: Request[Any, Any, Any],
    ledger: LedgerDep,
    reader: ReaderDep,
    source: FromPath[str],
    body: RawBody,
    filename: Annotated[
        str | None,
        QueryParameter(
            description="the uploaded file's name: its suffix (.json, .jsonl, .yaml, .yml, .csv,"
            " .jsonl.zst) picks the format"
        ),
    ] = None,
) -> IngestResult:
    """Import one file of ``source`` into the log (operator token required: ``Authorization:
    Bearer <token>``); the body is the file, at most 64 MiB unless the server sets another
    limit (413 above it). Invalid input is refused whole (422, nothing appended).

    The format is the suffix of ``?filename=``; else the ``Content-Type`` (``application/json``,
    ``application/yaml`` or ``application/x-yaml`` or ``text/yaml``, ``text/csv``,
    ``application/x-ndjson``, ``application/zstd``); else what the body is (zstd, JSON, JSON
    lines, YAML). A body that does not parse as the format so chosen is 422, saying so."""
    name, decided = upload_name(filename, request.headers.get("content-type"), body)
    result = ingest_upload(ledger, source, body, name, decided=decided)
    reader.invalidate()
    return result


HANDLERS = [healthz, ingest]
