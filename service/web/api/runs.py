"""``/v1/runs`` and ``/v1/compare``: a run's dossier (and its manifest and history), pages of
runs, runs compared field by field."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from litestar import Request, Response, get
from litestar.concurrency import sync_to_thread
from litestar.params import FromPath, QueryParameter

from service.app import cite, history, runs
from service.readmodel.dossier import Dossier
from service.web.caching import etag_of, respond, settled
from service.web.deps import ReaderDep, Services, ServicesDep
from service.web.params import RUN_ERRORS, AsOf, Limit, answer, as_of, problem
from service.web.reads import Reader

__all__ = ["HANDLERS"]

_ENC = msgspec.json.Encoder()


@get(
    "/v1/runs/{ref:path}",
    tags=["runs"],
    responses={
        **answer(
            Dossier | history.RunHistory,  # type: ignore[arg-type]
            "The run's dossier (Dossier); …/manifest: its manifest bundle; …/history: every"
            " entry that touched it (RunHistory)",
        ),
        **RUN_ERRORS,
    },
)
async def run_show(
    request: Request[Any, Any, Any],
    services: ServicesDep,
    ref: FromPath[str],
    as_of_text: AsOf = None,
    citation_format: Annotated[
        str,
        QueryParameter(
            name="format",
            description="…/citation only: text, bibtex, biblatex, csl-json or receipt",
        ),
    ] = "receipt",
) -> Response[bytes]:
    """A run's dossier (docs/runs.md). ``ref``: short id, ``sha256:`` digest, ``kernelindex:<uuid>``
    or ``<source>:<externalId>`` (external ids may hold ``/``: KernelBot's ``submission/N``).
    404 if nothing matches, 300 with the candidates if an alias names several runs.

    Three sub-resources share this route: ``…/manifest`` (the canonical manifest bundle {run,
    protocol, environment} as recorded), ``…/history`` (``RunHistory``: every entry that
    touched the run, in log order — ingest, supersession or retraction, attestations and their
    withdrawal or hiding, reports and resolutions, reruns, evidence changes, rank and leader
    changes of its group — each with its position, recording time, type, signer and a link to
    its inclusion proof at the size answered) and ``…/citation?format=`` (how to cite it;
    ``receipt``: a file the log's key signs, checked offline by
    ``benchproof verify-citation``)."""
    ref = ref.lstrip("/")
    reader = services.reader
    if ref.endswith("/citation"):
        return await _citation(request, services, ref.removesuffix("/citation"), citation_format)
    if ref.endswith("/manifest"):
        return _run_part(request, reader, ref.removesuffix("/manifest"), "manifest", as_of_text)
    if ref.endswith("/history"):
        return _history(request, reader, ref.removesuffix("/history"), as_of_text)
    at = as_of(reader, as_of_text)
    size = reader.size()

    def make() -> bytes:
        log = reader.log
        dossier = runs.show_run(log.session, log, ref, at, size=size, standings=reader.standings)
        return _ENC.encode(dossier)

    # Keyed by the reference as asked and the log size: what a reference names can only change
    # when the log grows (an alias gaining a second run), and then the size differs.
    body, etag = reader.cached(("run", ref, at, size), make)
    return respond(request, body, etag, pinned=settled(reader, as_of_text, at))


async def _citation(
    request: Request[Any, Any, Any], services: Services, ref: str, fmt: str
) -> Response[bytes]:
    base = services.base(request)

    def make() -> tuple[bytes, str]:
        log = services.reader.log  # this worker thread's own read handle
        return cite.citation(services.ledger, log.session, log, ref, fmt, base=base)

    body, media = await sync_to_thread(make)
    headers = {"Cache-Control": "no-store"}  # each citation names the instant it was asked for
    if fmt == "receipt":
        headers["Content-Disposition"] = 'attachment; filename="citation-receipt.txt"'
    return Response(body, media_type=media, headers=headers)


def _history(
    request: Request[Any, Any, Any], reader: Reader, ref: str, as_of_text: str | None
) -> Response[bytes]:
    at = as_of(reader, as_of_text)
    size = reader.size()

    def make() -> bytes:
        log = reader.log
        # "Now" is the size read above: the entries, the body's asOf and the proof links agree
        # even if the log grows meanwhile.
        asked = size if at is None else at
        return _ENC.encode(history.run_history(log.session, log, ref, asked, size=size))

    body, etag = reader.cached(("history", ref, at, size), make)
    return respond(request, body, etag, pinned=settled(reader, as_of_text, at))


def _run_part(
    request: Request[Any, Any, Any], reader: Reader, ref: str, part: str, as_of_text: str | None
) -> Response[bytes]:
    at = as_of(reader, as_of_text)
    log = reader.log
    dossier = runs.show_run(
        log.session, log, ref, at, size=reader.size(), standings=reader.standings
    )
    body = _ENC.encode(dossier.manifest if part == "manifest" else dossier.history)
    # A run's manifest never changes, but what a short id or alias names can (an alias gaining a
    # second run): only a full digest pins it.
    by_digest = ref.startswith("sha256:") and ref == dossier.runDigest
    pinned = settled(reader, as_of_text, at) or (part == "manifest" and by_digest)
    return respond(request, body, etag_of(body), pinned=pinned)


_LIST_DOC = (
    "Runs, a page at a time: the home page's search (`q` and the filters narrow it; the same"
    " query, fields and order). Ordered by workload (the benchmark a run ran, else its workload"
    " manifest's name, else its own name), then primary value best-first (lowest first where"
    " lower is better, highest first where higher is), runs without a value last, then digest."
    " `next` is the cursor of the next page: pass it back unchanged as `after`. An unknown"
    " `evidenceLevel` or `source`, or a cursor no page gave, is a 400 problem whose `parameter`"
    " names it (and `allowed` lists the values it takes)."
)


@get(
    "/v1/runs",
    tags=["runs"],
    description=_LIST_DOC,
    responses={
        **answer(runs.RunPage, "A page of runs"),
        400: problem(
            "A malformed parameter (asOf, limit, evidenceLevel, source, after): for the last"
            " three `parameter` names it, and `allowed` lists what evidenceLevel and source take"
        ),
    },
)
async def runs_list(
    request: Request[Any, Any, Any],
    reader: ReaderDep,
    as_of_text: AsOf = None,
    q: Annotated[
        str | None,
        QueryParameter(
            description="text search, the home page's: runs whose name, title, benchmark or"
            " operation (name or title) contains it, case-insensitive",
            required=False,
        ),
    ] = None,
    comparison_key: Annotated[
        str | None,
        QueryParameter(
            name="comparisonKey",
            description="only the runs of this comparison group",
            required=False,
        ),
    ] = None,
    source: Annotated[
        str | None,
        QueryParameter(
            description="only the runs of this source (a key the log knows, e.g."
            " `gpumode-kernelbot`; the sources of runs imported from manifests count too)",
            required=False,
        ),
    ] = None,
    evidence: Annotated[
        str | None,
        QueryParameter(
            name="evidenceLevel",
            description="only the runs at this evidence level: " + ", ".join(runs.EVIDENCE_LEVELS),
            required=False,
        ),
    ] = None,
    hardware: Annotated[
        str | None,
        QueryParameter(
            description="only the runs on this accelerator (its name as listed)", required=False
        ),
    ] = None,
    after: Annotated[
        str | None,
        QueryParameter(
            description="keyset cursor: a previous page's `next`, passed back unchanged (opaque)",
            required=False,
        ),
    ] = None,
    limit: Limit = 100,
) -> Response[bytes]:
    """Runs, a page at a time: the home page's search in its order (``_LIST_DOC``)."""
    at = as_of(reader, as_of_text)
    page = runs.run_page(
        reader.conn,
        at,
        size=reader.size(),
        text=q,
        group_key=comparison_key,
        source=source,
        evidence=evidence,
        hardware=hardware,
        after=after,
        limit=limit,
    )
    body = _ENC.encode(page)
    return respond(request, body, etag_of(body), pinned=settled(reader, as_of_text, at))


@get(
    "/v1/compare",
    tags=["runs"],
    responses={**answer(runs.Comparison, "The runs compared"), **RUN_ERRORS},
)
async def compare(
    request: Request[Any, Any, Any],
    reader: ReaderDep,
    runs_text: Annotated[
        str, QueryParameter(name="runs", description="2 to 8 run references, comma-separated")
    ],
    as_of_text: AsOf = None,
) -> Response[bytes]:
    """Compare runs field by field; name the first material mismatch (the first part of the
    comparison key that differs), or say they are comparable (one comparison group)."""
    at = as_of(reader, as_of_text)
    comparison = runs.compare(reader.conn, runs_text.split(","), at, size=reader.size())
    body = _ENC.encode(comparison)
    return respond(request, body, etag_of(body), pinned=settled(reader, as_of_text, at))


HANDLERS = [run_show, runs_list, compare]
