"""Reports on runs (``POST /v1/runs/{ref}/reports``, ``post_on_run``): anonymous, signed and
appended by the index as ``report.filed.v1``, counted against the client address. A run with an
unresolved report is under review until an operator resolves or dismisses every one
(``POST /v1/reports/{id}/resolution``)."""

from __future__ import annotations

from typing import Any

import msgspec
from litestar import Request, Response
from litestar.concurrency import sync_to_thread
from litestar.params import FromPath, RawBody

from service.app import moderation, report
from service.app.keyadmin import Recorded
from service.core.logs import OpenedLog
from service.web.deps import LedgerDep, ReaderDep, Services
from service.web.guards import operator_post
from service.web.limiting import Quota
from service.web.params import problem

__all__ = ["HANDLERS", "post_on_run"]

_ENC = msgspec.json.Encoder()


async def post_on_run(
    request: Request[Any, Any, Any], services: Services, ref: str, body: bytes
) -> Response[bytes]:
    """``POST /v1/runs/{ref}/reports`` with ``{"reason", "text"}``: 201 ``{"id", "index"}``;
    200 with the same when the log held that report already (in a worker thread: it waits for
    the writer)."""
    ledger, reader, gate = services.ledger, services.reader, services.gate
    filed, new = await sync_to_thread(_file, gate.quota(request), ledger, ref, body)
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


HANDLERS = [resolution]
