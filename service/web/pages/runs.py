"""``/runs/{ref}``: the run dossier page (docs/runs.md), and ``/runs/{ref}/history``: every
entry that touched the run; an ambiguous alias answers 300 with its candidates as links. The
reference is one path segment, a ``/`` in it sent as ``%2F`` (``service.web.refs``)."""

from __future__ import annotations

from datetime import UTC, date, datetime, time
from typing import Any

import msgspec
from litestar import Request, get
from litestar.concurrency import sync_to_thread
from litestar.enums import MediaType
from litestar.params import FromPath
from litestar.response import Template

from projections.errors import AmbiguousRun
from projections.queries.neighbours import BETTER_ELSEWHERE_CAP
from service.app import cite, history, pages, report, runs
from service.app.keylist import KeyRecord
from service.readmodel.dossier import short_id
from service.web import community, present, sections
from service.web.caching import Read
from service.web.deps import ReaderDep, ServicesDep
from service.web.pages.render import page, render
from service.web.params import AsOf, asked
from service.web.refs import ref_of

__all__ = ["history_page", "run_page"]


@get("/runs/{ref:str}", include_in_schema=False)
async def run_page(
    request: Request[Any, Any, Any],
    services: ServicesDep,
    ref: FromPath[str],
    as_of_text: AsOf = None,
) -> Template | Read:
    """The run dossier; an ambiguous alias answers 300 with its candidates as links. Permalinks
    and citations name ``--public-url``, else the address the request came to.

    One dependency (``services``: litestar resolves several in a task group on every request)
    and a page already rendered answered on the event loop; a page to render (queries and the
    template) is made on a thread. Together a third of a warm page's cost (issue 28)."""
    reader, ledger = services.reader, services.ledger
    text = ref_of(ref)
    asked_for = asked(reader, as_of_text)
    at, size = asked_for.at, asked_for.size
    urls = present.Urls(at)
    accessed = ledger.clock().date().isoformat()
    base = services.base(request)

    def make() -> bytes:
        log = reader.log
        sheet = runs.run_sheet(log.session, log, text, at, size=size, standings=reader.standings)
        keys = pages.attesters(log.session, log, (a.attester for a in sheet.dossier.attestations))
        return render(request, "run.html", _context(sheet, keys, at, urls, base, accessed))

    # A page is a function of the reference as of a size, the host it is served for and the day
    # (its citation's access date): rendered once per such key.
    key = ("page", text, at, size, base, accessed)

    def miss() -> tuple[bytes, str] | Template:
        try:
            return reader.cached(key, make)
        except AmbiguousRun as exc:
            return _candidates_page(runs.candidate_runs(reader.conn, exc, at), exc, urls, at)

    hit = reader.peek(key)
    if hit is None:
        made = await sync_to_thread(miss)
        if isinstance(made, Template):
            return made
        hit = made
    body, etag = hit
    return page(body, etag, pinned=asked_for.pinned)


@get("/runs/{ref:str}/history", include_in_schema=False, sync_to_thread=True)
def history_page(
    request: Request[Any, Any, Any], reader: ReaderDep, ref: FromPath[str], as_of_text: AsOf = None
) -> Template | Read:
    """Every entry that touched the run, as a table linking each to its proof and signer."""
    text = ref_of(ref)
    asked_for = asked(reader, as_of_text)
    at, size = asked_for.at, asked_for.size
    urls = present.Urls(at)

    def make() -> bytes:
        log = reader.log
        sheet = history.history_sheet(log.session, log, text, at, size=size)
        view = sheet.view
        context = {
            "h": sheet.history,
            "view": view,
            "title": view.title or view.name,
            "short": short_id(view.runDigest),
            "run_href": urls.run(view.runDigest),
            "json_href": f"/v1/runs/{view.runDigest}/history"
            + (f"?asOf={at}" if at is not None else ""),
            "as_of": at,
        }
        return render(request, "history.html", context)

    try:
        body, etag = reader.cached(("history-page", text, at, size), make)
    except AmbiguousRun as exc:
        return _candidates_page(runs.candidate_runs(reader.conn, exc, at), exc, urls, at)
    return page(body, etag, pinned=asked_for.pinned)


def _group_label(sheet: runs.RunSheet) -> str:
    """The group by its operation's display name (its manifest's title; else the workload's)
    and hardware."""
    d = sheet.dossier
    name = (
        sheet.operationTitle
        or (d.workload or {}).get("title")
        or d.identity.get("benchmark")
        or d.name
    )
    return f"{name} on {d.hardware}" if d.hardware else str(name)


def _elsewhere(d: Any, urls: present.Urls) -> dict[str, Any] | None:
    """Better runs of this workload on this hardware that other comparison groups hold."""
    found = d.betterElsewhere
    if not found:
        return None
    parts = [p for p in present.KEY_PARTS if any(p in n.differs for n in found)]
    labels = [present.MISMATCH[p][0] for p in parts]
    return {
        "count": len(found),
        # The dossier lists at most BETTER_ELSEWHERE_CAP of them: a full list may be a cut one.
        "more": len(found) >= BETTER_ELSEWHERE_CAP,
        "better": "faster" if d.metricKey.startswith("latency:") else "better",
        "why": "different " + " and ".join(labels) if labels else "another comparison key",
        "runs": [
            {
                "shortId": n.shortId,
                "href": urls.run(n.shortId),
                "value": present.quantity(n.value, n.unit),
                "group_href": urls.group(n.groupKey),
                # Named per run only where it differs from what the sentence says of all.
                "differs": ", ".join(present.MISMATCH[p][0] for p in n.differs)
                if n.differs != parts
                else None,
            }
            for n in found
        ],
    }


def _citations(d: Any, source_name: str, base: str, accessed: str) -> dict[str, str]:
    """The record in each pasteable format, as of the access day ``accessed``."""
    item = cite.citable(
        title=d.title or d.name,
        digest=d.runDigest,
        source=source_name,
        issued=d.publishedAt or d.observedAt,
        evidence_level=d.evidenceLevel,
        accessed=datetime.combine(date.fromisoformat(accessed), time(0), UTC),
        base=base,
    )
    return {
        "Text": cite.rendered(item, "text").decode(),
        "BibTeX": cite.rendered(item, "bibtex").decode(),
        "biblatex": cite.rendered(item, "biblatex").decode(),
        "CSL-JSON": present.pretty_json(msgspec.json.decode(cite.rendered(item, "csl-json"))),
    }


def _context(
    sheet: runs.RunSheet,
    keys: dict[str, KeyRecord],
    at: int | None,
    urls: present.Urls,
    base: str,
    accessed: str,
) -> dict[str, Any]:
    d, source = sheet.dossier, sheet.source
    permalink = cite.permalink(base, d.runDigest)
    leader = d.rank.leader if d.rank else None
    group_key = d.comparisonKey if d.kind == "BenchmarkRun" else d.cohortKey
    spec = (d.protocol or {}).get("spec", {})
    lead, missing = sections.evidence_missing(d.evidenceReason)
    return {
        "d": d,
        "urls": urls,
        "as_of": at,
        "source": source,
        "source_name": source.name if source else d.source,
        "primary_value": present.quantity(d.primary.value, d.primary.unit) if d.primary else "—",
        "unranked_reason": sections.unranked_reason(d),
        "compare_href": urls.compare([d.shortId, short_id(leader)])
        if leader and leader != d.runDigest
        else None,
        "elsewhere": _elsewhere(d, urls),
        "evidence_lead": lead,
        "evidence_missing": missing,
        "highlights": sections.native_highlights(d.sourceNative),
        "native": sections.native_rows(d.sourceNative),
        "identity": sections.identity_rows(d, source.name if source else d.source, urls),
        "correctness": [present.Row(k, str(v)) for k, v in (d.correctness or {}).items()],
        "correctness_text": sections.correctness_text(d),
        "workload": sections.workload_rows(d.workload),
        "measurements": sections.measurement_rows(d.measurements),
        "protocol": sections.protocol_rows(d),
        "protocol_notes": spec.get("comparability", {}).get("notes"),
        "environment": sections.environment_rows(d),
        "artifacts": [{**a, "href": present.safe_url(a.get("uri"))} for a in d.artifacts],
        "unresolved": sections.unresolved_refs(d),
        "notes": community.notes(d, keys),
        "commands": community.commands(d, base),
        "statement": present.pretty_json(community.statement(d)),
        "reasons": report.REASONS,
        "max_text_bytes": report.MAX_TEXT_BYTES,
        "server": base,
        "manifest_json": present.pretty_json(d.manifest),
        "permalink": permalink,
        "accessed": accessed,
        "citations": _citations(d, source.name if source else d.source, base, accessed),
        "receipt_href": f"/v1/runs/{d.runDigest}/citation?format=receipt",
        "group_href": urls.group(group_key) if group_key else None,
        "group_label": _group_label(sheet),
        "quantity": present.quantity,
        "breakable": present.breakable,
        "samples_svg": present.samples_svg,
    }


def _candidates_page(
    found: list[runs.Candidate], exc: AmbiguousRun, urls: present.Urls, at: int | None
) -> Template:
    rows = [
        {
            "shortId": short_id(digest),
            "href": urls.run(digest),
            "title": view.title or view.name if view else None,
            "hardware": view.hardware if view else None,
            "observedAt": view.observedAt if view else None,
        }
        for digest, view in found
    ]
    context = {
        "status": 300,
        "title": "The reference names several runs",
        "detail": exc.detail,
        "candidates": rows,
        "as_of": at,
    }
    # Named: the route's own media type is JSON (litestar's, for a handler that may return a
    # value), which a template would otherwise take.
    return Template(
        template_name="error.html", context=context, status_code=300, media_type=MediaType.HTML
    )
