"""Reports on runs (``POST /v1/runs/{ref}/reports``, ``post``): anonymous, signed and appended
by the index as ``report.filed.v1``. A run with an unresolved report is under review."""

from __future__ import annotations

import msgspec
from litestar import Response

from service.app import report
from service.ledger import Ledger
from service.web.reads import Reader

__all__ = ["post"]

_ENC = msgspec.json.Encoder()


def post(ledger: Ledger, reader: Reader, ref: str, body: bytes) -> Response[bytes]:
    """``POST /v1/runs/{ref}/reports`` with ``{"reason", "text"}``: 201 ``{"id", "index"}``;
    200 with the same when the log held that report already."""
    filed, new = report.file_report(ledger, ref, body)
    reader.invalidate()
    return Response(
        _ENC.encode(filed), status_code=201 if new else 200, media_type="application/json"
    )
