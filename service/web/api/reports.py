"""Reports on runs (``POST /v1/runs/{ref}/reports``, ``post_on_run``): anonymous, signed and
appended by the index as ``report.filed.v1``, counted against the client address. A run with an
unresolved report is under review until an operator resolves or dismisses every one
(``POST /v1/reports/{id}/resolution``)."""

from __future__ import annotations

from typing import Any

import msgspec
from litestar import Request, Response, post
from litestar.concurrency import sync_to_thread
from litestar.openapi.datastructures import ResponseSpec
from litestar.openapi.spec import OpenAPIType, Schema
from litestar.params import FromPath, RawBody

from service.app import moderation, report
from service.app.keyadmin import Recorded
from service.core.logs import OpenedLog
from service.web.deps import LedgerDep, ReaderDep, ServicesDep
from service.web.docs import documented, json_body, object_of
from service.web.guards import operator_post
from service.web.limiting import Quota
from service.web.params import RUN_ERRORS, RunRef, problem
from service.web.refs import ref_of

__all__ = ["HANDLERS", "post_on_run"]

_ENC = msgspec.json.Encoder()


_REPORT = object_of(
    "reason",
    "text",
    reason=Schema(type=OpenAPIType.STRING, enum=list(report.REASONS)),
    text=Schema(
        type=OpenAPIType.STRING,
        min_length=1,
        description="what is wrong with the run: not blank, at most"
        f" {report.MAX_TEXT_BYTES} bytes of UTF-8",
    ),
)


@post(
    "/v1/runs/{ref:str}/reports",
    tags=["runs"],
    summary="Report the run",
    description="File an anonymous report on the run (the index signs it); the run is under"
    " review until an operator resolves or dismisses it.",
    operation_id="V1RunsRefReports",
    responses={
        201: ResponseSpec(
            report.Filed,
            description="Filed: the report's id and log index; 200 when the log held that"
            " report already",
            generate_examples=False,
        ),
        **RUN_ERRORS,
        429: problem("Over a rate limit (Retry-After says when to try again)"),
    },
    operation_class=documented(body=json_body(_REPORT)),
)
async def post_on_run(
    request: Request[Any, Any, Any], services: ServicesDep, ref: RunRef, body: RawBody
) -> Response[bytes]:
    """File an anonymous report on the run (the index signs it): the body is ``{"reason",
    "text"}``. The run is under review until an operator resolves or dismisses it. 201
    ``{"id", "index"}``; 200 with the same when the log held that report already."""
    ledger, reader, gate = services.ledger, services.reader, services.gate
    # In a worker thread: it waits for the writer.
    filed, new = await sync_to_thread(_file, gate.quota(request), ledger, ref_of(ref), body)
    reader.invalidate()
    return Response(
        _ENC.encode(filed), status_code=201 if new else 200, media_type="application/json"
    )


def _file(quota: Quota, ledger: OpenedLog, ref: str, body: bytes) -> tuple[report.Filed, bool]:
    """Count the report against the client address, then file it (in a worker thread)."""
    quota.anonymous()
    return report.file_report(ledger, ref, body)


@operator_post(
    "/v1/reports/{report_id:str}/resolution",
    {
        400: problem('The body is not {"resolution": "resolved" | "dismissed", "note"}'),
        404: problem("No report has this id"),
        409: problem("Resolved or dismissed already"),
    },
)
def resolution(
    ledger: LedgerDep, reader: ReaderDep, report_id: FromPath[str], body: RawBody
) -> Recorded:
    """Resolve or dismiss a report with a note (operators only; the index signs
    ``report.resolved.v1``). A run none of whose reports is open is no longer under review."""
    recorded = moderation.resolve_report(ledger, report_id, body)
    reader.invalidate()
    return recorded


HANDLERS = [post_on_run, resolution]
