"""``/`` search by operation, hardware and source (the search of ``GET /v1/runs``, and the
sources' notices), and ``/compare`` runs side by side."""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import urlencode

import msgspec
from litestar import Request, get
from litestar.params import FromQuery, QueryParameter

from service.app import browse
from service.app.runs import EVIDENCE_LEVELS
from service.readmodel.dossier import short_id
from service.web import present
from service.web.caching import Read
from service.web.deps import ReaderDep
from service.web.pages.render import html
from service.web.params import AsOf, asked

__all__ = ["PAGE_SIZE", "compare_page", "home_page"]

PAGE_SIZE = 50


@get("/", include_in_schema=False, sync_to_thread=True)
def home_page(
    request: Request[Any, Any, Any],
    reader: ReaderDep,
    as_of_text: AsOf = None,
    q: FromQuery[str | None] = None,
    source: FromQuery[str | None] = None,
    hardware: FromQuery[str | None] = None,
    evidence: Annotated[str | None, QueryParameter(name="evidenceLevel", required=False)] = None,
    comparison_key: Annotated[
        str | None, QueryParameter(name="comparisonKey", required=False)
    ] = None,
    after: FromQuery[str | None] = None,
) -> Read:
    """Search by operation, hardware, source, evidence level and comparison group, with the
    parameters of ``GET /v1/runs`` and its answer (keyset pages, in its order), and the sources'
    notices: every source, registered or only named by runs (manifest imports), so the count and
    the filter cover every run."""
    asked_for = asked(reader, as_of_text)
    at = asked_for.at
    urls = present.Urls(at)
    q = (q or "").strip() or None
    found = browse.search(
        reader.conn,
        at,
        size=asked_for.size,
        text=q,
        source=source,
        hardware=hardware,
        evidence=evidence,
        group_key=comparison_key,
        after=after,
        limit=PAGE_SIZE,
    )
    names = {s.source: s.name for s in found.sources}
    results = [
        {
            "title": v.title or v.name,
            "shortId": short_id(v.runDigest),
            "href": urls.run(short_id(v.runDigest)),
            "source": names.get(v.source, v.source),
            "hardware": v.hardware,
            "value": present.quantity(v.primaryValue, v.primaryUnit),
            "evidence": v.evidenceLevel,
            "observed": v.observedAt,
        }
        for v in found.runs
    ]
    params = {
        "q": q or "",
        "source": source or "",
        "hardware": hardware or "",
        "evidenceLevel": evidence or "",
        "comparisonKey": comparison_key or "",
    }
    api = {k: v for k, v in params.items() if v} | ({} if at is None else {"asOf": str(at)})
    context = {
        "q": q,
        "source": source,
        "hardware": hardware,
        "evidence": evidence,
        "evidence_levels": EVIDENCE_LEVELS,
        "comparison_key": comparison_key,
        "after": after,
        "results": results,
        "next_href": urls.home(**params, after=found.next) if found.next else None,
        "first_href": urls.home(**params),
        # The same search as JSON: the API takes the same parameters (``service.app.runs``).
        "api_href": "/v1/runs" + ("?" + urlencode(api) if api else ""),
        "sources": [msgspec.structs.replace(s, url=present.safe_url(s.url)) for s in found.sources],
        "hardware_names": found.hardware,
        "total": found.total,
        "size": found.asOf,
        "urls": urls,
        "as_of": at,
    }
    return html(request, "home.html", context, pinned=asked_for.pinned)


@get("/compare", include_in_schema=False, sync_to_thread=True)
def compare_page(
    request: Request[Any, Any, Any],
    reader: ReaderDep,
    runs_text: Annotated[str | None, QueryParameter(name="runs", required=False)] = None,
    as_of_text: AsOf = None,
) -> Read:
    """Runs side by side: the first material mismatch named, differing fields marked."""
    asked_for = asked(reader, as_of_text)
    at = asked_for.at
    side = (
        browse.side_by_side(reader.conn, runs_text.split(","), at, size=asked_for.size)
        if runs_text
        else None
    )
    c = side.comparison if side else None
    label, why = present.MISMATCH.get(c.firstMismatch or "", ("", "")) if c else ("", "")
    context = {
        "c": c,
        "table": present.compare_table(side.comparison, side.sourceNames) if side else [],
        "mismatch_label": label,
        "mismatch_why": why,
        "runs": runs_text,
        "urls": present.Urls(at),
        "as_of": at,
    }
    return html(request, "compare.html", context, pinned=asked_for.pinned)
