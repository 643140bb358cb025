"""HTML pages rendered on the server (Jinja templates): readable with no JavaScript.

``/`` search and sources, ``/runs/{ref}`` the run dossier (DESIGN.md §8), ``/groups/{key}`` a
leaderboard, ``/compare`` runs side by side, ``/log`` the log and how to audit it. Errors on
these routes are HTML pages with the status the JSON API would give (404, 300 with candidates...).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
from litestar import Request, Response, Router, get
from litestar.exceptions import HTTPException
from litestar.params import FromPath, FromQuery
from litestar.response import Template
from litestar.types import ExceptionHandlersMap

from events.errors import EventError
from keys import KeyringError
from projections import queries
from projections.errors import AmbiguousRun, ProjectionError, UnknownRun
from service.dossier import Dossier, build_dossier, short_id
from service.errors import ServiceError
from service.logs import get_logger
from service.web import present
from service.web.api import (
    AsOf,
    as_of,
    checkpoint_note,
    compare_runs,
    resolve,
    respond,
    settled,
)
from service.web.charts import bar_chart
from service.web.deps import LedgerDep, ReaderDep
from service.web.pagereads import hardware_names, recent_entries, search_runs, sources
from service.web.problems import http_problem, to_problem
from service.web.reads import Reader, etag_of

__all__ = ["PAGE_HANDLERS"]

_log = get_logger("benchproof.pages")
PAGE_SIZE = 50


HTML = "text/html; charset=utf-8"


def _html(
    request: Request[Any, Any, Any], template: str, context: dict[str, Any], *, pinned: bool
) -> Response[bytes]:
    """A page rendered now and answered like any read: with its ETag (304 when it matches)."""
    engine = request.app.template_engine
    assert engine is not None  # noqa: S101 - create_app configures Jinja
    body = engine.get_template(template).render(**context, request=request).encode()
    return respond(request, body, etag_of(body), pinned=pinned, media_type=HTML)


def _artifacts(d: Dossier) -> list[dict[str, Any]]:
    return [{**a, "href": present.safe_url(a.get("uri"))} for a in d.artifacts]


def _group_label(reader: Reader, d: Dossier, at: int | None) -> str:
    operation = d.identity.get("operationDigest")
    body = queries.manifest(reader.conn, operation, at) if operation else None
    name = (body or {}).get("metadata", {}).get("title") or d.identity.get("benchmark") or d.name
    return f"{name} on {d.hardware}" if d.hardware else str(name)


@get("/runs/{ref:path}", include_in_schema=False, sync_to_thread=True)
def run_page(
    request: Request[Any, Any, Any],
    reader: ReaderDep,
    ledger: LedgerDep,
    ref: FromPath[Path],
    as_of_text: AsOf = None,
) -> Template | Response[bytes]:
    """The run dossier; an ambiguous alias answers 300 with its candidates as links."""
    at = as_of(reader, as_of_text)
    urls = present.Urls(at)
    text = str(ref).lstrip("/")
    try:
        digest = resolve(reader, text, at)
    except AmbiguousRun as exc:
        return _candidates_page(reader, exc, urls, at)
    accessed = ledger.clock().date().isoformat()
    base = str(request.base_url).rstrip("/")
    size = reader.size()

    def render() -> bytes:
        context = _run_context(reader, digest, text, at, urls, size, base, accessed)
        engine = request.app.template_engine
        assert engine is not None  # noqa: S101 - create_app configures Jinja
        html: str = engine.get_template("run.html").render(**context, request=request)
        return html.encode()

    # A page is a function of the reference as of a size, the host it is served for and the day
    # (its citation's access date): rendered once per such key.
    body, etag = reader.cached(("page", text, at, size, base, accessed), render)
    return respond(request, body, etag, pinned=settled(reader, as_of_text, at), media_type=HTML)


def _run_context(
    reader: Reader,
    digest: str,
    text: str,
    at: int | None,
    urls: present.Urls,
    size: int,
    base: str,
    accessed: str,
) -> dict[str, Any]:
    d = build_dossier(reader.conn, digest, at, size=size, standings=reader.standings)
    if d is None:
        raise UnknownRun(f"no run matches {text!r}")
    source = next((s for s in sources(reader.conn, at) if s.source == d.source), None)
    permalink = base + d.links.permalink
    leader = d.rank.leader if d.rank else None
    group_key = d.comparisonKey if d.kind == "BenchmarkRun" else d.cohortKey
    statement = {
        "_type": "https://in-toto.io/Statement/v1",
        "subject": [{"name": d.links.permalink, "digest": {"sha256": d.runDigest[7:]}}],
        "predicateType": "https://benchproof.dev/attestation/v1",
        "predicate": {"kind": "reproduction", "summary": "…"},
    }
    spec = (d.protocol or {}).get("spec", {})
    return {
        "d": d,
        "urls": urls,
        "as_of": at,
        "source": source,
        "source_name": source.name if source else d.source,
        "primary_value": present.quantity(d.primary.value, d.primary.unit) if d.primary else "—",
        "unranked_reason": present.unranked_reason(d),
        "compare_href": urls.compare([d.shortId, short_id(leader)])
        if leader and leader != digest
        else None,
        "highlights": present.native_highlights(d.sourceNative),
        "native": present.native_rows(d.sourceNative),
        "identity": present.identity_rows(d, source.name if source else d.source, urls),
        "correctness": [present.Row(k, str(v)) for k, v in (d.correctness or {}).items()],
        "correctness_text": present.correctness_text(d),
        "workload": present.workload_rows(d.workload),
        "measurements": present.measurement_rows(d.measurements),
        "protocol": present.protocol_rows(d),
        "protocol_notes": spec.get("comparability", {}).get("notes"),
        "environment": present.environment_rows(d),
        "artifacts": _artifacts(d),
        "unresolved": present.unresolved_refs(d),
        "statement": present.pretty_json(statement),
        "manifest_json": present.pretty_json(d.manifest),
        "permalink": permalink,
        "accessed": accessed,
        "bibtex": present.bibtex(d, permalink, accessed),
        "group_href": urls.group(group_key) if group_key else None,
        "group_label": _group_label(reader, d, at),
        "quantity": present.quantity,
        "pretty_json": present.pretty_json,
    }


def _candidate_digests(exc: Exception) -> list[str]:
    found = getattr(exc, "details", {}).get("candidates", [])
    return [str(c) for c in found] if isinstance(found, list) else []


def _candidates_page(
    reader: Reader, exc: AmbiguousRun, urls: present.Urls, at: int | None
) -> Template:
    rows = []
    for digest in _candidate_digests(exc):
        view = queries.run_view(reader.conn, str(digest), at)
        rows.append(
            {
                "shortId": short_id(str(digest)),
                "href": urls.run(str(digest)),
                "title": view.title or view.name if view else None,
                "hardware": view.hardware if view else None,
                "observedAt": view.observedAt if view else None,
            }
        )
    context = {
        "status": 300,
        "title": "The reference names several runs",
        "detail": exc.detail,
        "candidates": rows,
        "as_of": at,
    }
    return Template(template_name="error.html", context=context, status_code=300)


@get("/groups/{key:str}", include_in_schema=False, sync_to_thread=True)
def group_page(
    request: Request[Any, Any, Any], reader: ReaderDep, key: FromPath[str], as_of_text: AsOf = None
) -> Response[bytes]:
    """A comparison group's leaderboard: ranked runs, a bar chart and the leader history."""
    at = as_of(reader, as_of_text)
    urls = present.Urls(at)
    group = queries.group(reader.conn, key, at)
    ranked = queries.ranked_members(reader.conn, key, at)
    unit = ranked[0][1].primaryUnit if ranked else None
    rows = [
        {
            "rank": rank,
            "value": present.quantity(v.primaryValue, v.primaryUnit),
            "name": v.implementation or v.title or v.name,
            "href": urls.run(short_id(v.runDigest)),
            "evidence": v.evidenceLevel,
            "observed": v.observedAt,
        }
        for rank, v in ranked
    ]
    chart = bar_chart(
        [
            (
                rank,
                v.primaryValue or 0.0,
                v.implementation or v.title or v.name,
                urls.run(short_id(v.runDigest)),
                v.runDigest,
            )
            for rank, v in ranked
        ],
        unit,
    )
    by_digest = {v.runDigest: v for _, v in ranked}

    def name(digest: str | None) -> str:
        view = by_digest.get(digest or "") or (
            queries.run_view(reader.conn, digest, at) if digest else None
        )
        return (view.implementation or view.title or view.name) if view else short_id(digest or "")

    leaders = [
        {
            "at": lc.at,
            "name": name(lc.runDigest),
            "href": urls.run(short_id(lc.runDigest)),
            "value": present.quantity(by_digest[lc.runDigest].primaryValue, unit)
            if lc.runDigest in by_digest
            else None,
            "previous": name(lc.previousRunDigest) if lc.previousRunDigest else None,
            "previous_href": urls.run(short_id(lc.previousRunDigest))
            if lc.previousRunDigest
            else None,
            "cause": lc.cause,
        }
        for lc in queries.leader_history(reader.conn, key, at)
    ]
    heading, subtitle = "Comparison group " + short_id(key), None
    if ranked:
        first = ranked[0][1]
        operation = (
            queries.manifest(reader.conn, first.operationDigest, at)
            if first.operationDigest
            else None
        )
        workload = (
            queries.manifest(reader.conn, first.workloadDigest, at)
            if first.workloadDigest
            else None
        )
        title = (operation or {}).get("metadata", {}).get("title") or first.benchmark or first.name
        heading = f"{title} on {first.hardware}" if first.hardware else str(title)
        subtitle = (workload or {}).get("metadata", {}).get("title")
    metric = (
        " ".join(reversed(group.metricKey.split(":")[:2])) if group.metricKey != "none" else "value"
    )
    context = {
        "g": group,
        "rows": rows,
        "chart": chart,
        "leaders": leaders,
        "heading": heading,
        "subtitle": subtitle,
        "metric": metric,
        "urls": urls,
        "as_of": at,
    }
    return _html(request, "group.html", context, pinned=settled(reader, as_of_text, at))


@get("/compare", include_in_schema=False, sync_to_thread=True)
def compare_page(
    request: Request[Any, Any, Any],
    reader: ReaderDep,
    runs: FromQuery[str | None] = None,
    as_of_text: AsOf = None,
) -> Response[bytes]:
    """Runs side by side: the first material mismatch named, differing fields marked."""
    at = as_of(reader, as_of_text)
    c = compare_runs(reader, runs, at) if runs else None
    label, why = present.MISMATCH.get(c.firstMismatch or "", ("", "")) if c else ("", "")
    context = {
        "c": c,
        "table": present.compare_table(c, {s.source: s.name for s in sources(reader.conn, at)})
        if c
        else [],
        "mismatch_label": label,
        "mismatch_why": why,
        "runs": runs,
        "urls": present.Urls(at),
        "as_of": at,
    }
    return _html(request, "compare.html", context, pinned=settled(reader, as_of_text, at))


@get("/", include_in_schema=False, sync_to_thread=True)
def home_page(
    request: Request[Any, Any, Any],
    reader: ReaderDep,
    as_of_text: AsOf = None,
    q: FromQuery[str | None] = None,
    source: FromQuery[str | None] = None,
    hardware: FromQuery[str | None] = None,
    after: FromQuery[str | None] = None,
) -> Response[bytes]:
    """Search by operation, hardware and source (keyset pages), and the sources' notices."""
    at = as_of(reader, as_of_text)
    urls = present.Urls(at)
    q = (q or "").strip() or None
    found = search_runs(
        reader.conn, at, text=q, source=source, hardware=hardware, after=after, limit=PAGE_SIZE + 1
    )
    more = len(found) > PAGE_SIZE
    found = found[:PAGE_SIZE]
    listed = sources(reader.conn, at)
    names = {s.source: s.name for s in listed}
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
        for v in found
    ]
    params = {"q": q or "", "source": source or "", "hardware": hardware or ""}
    context = {
        "q": q,
        "source": source,
        "hardware": hardware,
        "after": after,
        "results": results,
        "next_href": urls.home(**params, after=found[-1].runDigest) if more else None,
        "first_href": urls.home(**params),
        "sources": [msgspec.structs.replace(s, url=present.safe_url(s.url)) for s in listed],
        "hardware_names": hardware_names(reader.conn, at),
        "total": sum(s.runs for s in listed),
        "size": reader.size() if at is None else at,
        "urls": urls,
        "as_of": at,
    }
    return _html(request, "home.html", context, pinned=settled(reader, as_of_text, at))


@get("/log", include_in_schema=False, sync_to_thread=True)
def log_page(
    request: Request[Any, Any, Any], reader: ReaderDep, ledger: LedgerDep, as_of_text: AsOf = None
) -> Response[bytes]:
    """The log: origin, size, the latest signed checkpoint (as of ``asOf``: the latest signed
    at or below that size), the key, the last 20 entries."""
    at = as_of(reader, as_of_text)
    note = checkpoint_note(reader, ledger, at)
    size = reader.size() if at is None else at
    context = {
        "origin": reader.store.origin,
        "size": size,
        "checkpoint": note.decode() if note else "(no checkpoint signed yet)",
        "vkey": ledger.signers.vkey,
        "entries": recent_entries(reader.conn, size),
        "as_of": at,
    }
    return _html(request, "log.html", context, pinned=settled(reader, as_of_text, at))


def error_page(request: Request[Any, Any, Any], exc: Exception) -> Template:
    """Any error on a page route as an HTML page, with the status the JSON API gives it."""
    if isinstance(exc, HTTPException):
        problem = http_problem(exc)
        status, title, detail = exc.status_code, str(problem.title), str(exc.detail)
    else:
        problem = to_problem(exc)
        status, title, detail = problem.status_code, str(problem.title), str(problem.detail)
    if status >= 500:
        _log.error("page.failed", path=request.url.path, exc_info=exc)
    candidates = [
        {"shortId": short_id(str(c)), "href": "/runs/" + str(c)} for c in _candidate_digests(exc)
    ]
    context = {
        "status": status,
        "title": title,
        "detail": detail,
        "candidates": candidates,
        "as_of": None,
    }
    return Template(template_name="error.html", context=context, status_code=status)


_ERRORS: ExceptionHandlersMap = {
    cls: error_page
    for cls in (HTTPException, ProjectionError, ServiceError, EventError, KeyringError)
}

PAGE_HANDLERS = [
    Router(
        path="/",
        route_handlers=[home_page, run_page, group_page, compare_page, log_page],
        exception_handlers=_ERRORS,
    )
]
