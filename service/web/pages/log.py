"""``/log``: the log and how to audit it: origin, size, the signed checkpoint, the verifier key
and the latest entries."""

from __future__ import annotations

from typing import Any

from litestar import Request, Response, get

from service.app import log
from service.web.caching import settled
from service.web.deps import LedgerDep, ReaderDep
from service.web.pages.render import html
from service.web.params import AsOf, as_of

__all__ = ["RECENT", "log_page"]

RECENT = 20


@get("/log", include_in_schema=False, sync_to_thread=True)
def log_page(
    request: Request[Any, Any, Any], reader: ReaderDep, ledger: LedgerDep, as_of_text: AsOf = None
) -> Response[bytes]:
    """The log: origin, size, the latest signed checkpoint (as of ``asOf``: the latest signed
    at or below that size), the key, the last 20 entries."""
    at = as_of(reader, as_of_text)
    o = log.overview(ledger, reader.log, at, size=reader.size(), recent=RECENT)
    context = {
        "origin": o.origin,
        "size": o.size,
        "checkpoint": o.checkpoint.note.decode() if o.checkpoint else "(no checkpoint signed yet)",
        "vkey": o.vkey,
        "entries": o.entries,
        "as_of": at,
    }
    return html(request, "log.html", context, pinned=settled(reader, as_of_text, at))
