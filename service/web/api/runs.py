"""``/v1/runs`` and ``/v1/compare``: a run's dossier, its manifest, history and citation (each a
route of its own: the reference is one path segment, a ``/`` in it sent as ``%2F``, see
``service.web.refs``), pages of runs, runs compared field by field."""

from __future__ import annotations

from datetime import UTC
from typing import Annotated, Any

import msgspec
from litestar import Request, Response, get, post
from litestar.concurrency import sync_to_thread
from litestar.openapi.spec import OpenAPIMediaType, OpenAPIResponse, OpenAPIType, Schema
from litestar.params import QueryParameter, RawBody

from projections import queries
from service.app import cite, history, runs
from service.errors import NotFound
from service.readmodel.dossier import Dossier
from service.web.caching import Read
from service.web.deps import ReaderDep, ServicesDep
from service.web.docs import OBJECT, TEXT, documented
from service.web.params import RUN_ERRORS, AsOf, Limit, RunRef, answer, asked, problem
from service.web.refs import ref_of

__all__ = ["HANDLERS"]

_ENC = msgspec.json.Encoder()
_MANIFEST = OpenAPIResponse(
    description="The manifest bundle",
    content={
        "application/json": OpenAPIMediaType(
            schema=Schema(
                type=OpenAPIType.OBJECT,
                properties={"run": OBJECT, "protocol": OBJECT, "environment": OBJECT},
                description="The canonical manifests the run was recorded with",
            )
        )
    },
)
_CITATION = OpenAPIResponse(
    description="The citation",
    content={
        "text/plain": OpenAPIMediaType(schema=TEXT),
        "application/x-bibtex": OpenAPIMediaType(schema=TEXT),
        "application/vnd.citationstyles.csl+json": OpenAPIMediaType(schema=OBJECT),
    },
)


@get(
    "/v1/runs/{ref:str}",
    tags=["runs"],
    responses={**answer(Dossier, "The run's dossier"), **RUN_ERRORS},
)
async def run_show(
    request: Request[Any, Any, Any], reader: ReaderDep, ref: RunRef, as_of_text: AsOf = None
) -> Read:
    """A run's dossier (docs/runs.md). ``ref``: short id, ``sha256:`` digest, ``kernelindex:<uuid>``
    or ``<source>:<externalId>`` (external ids may hold ``/``, sent as ``%2F``: KernelBot's
    ``submission%2FN``). 404 if nothing matches, 300 with the candidates if an alias names
    several runs."""
    ref = ref_of(ref)
    asked_for = asked(reader, as_of_text)
    at, size = asked_for.at, asked_for.size

    def make() -> bytes:
        log = reader.log
        dossier = runs.show_run(log.session, log, ref, at, size=size, standings=reader.standings)
        return _ENC.encode(dossier)

    # Keyed by the reference as asked and the log size: what a reference names can only change
    # when the log grows (an alias gaining a second run), and then the size differs.
    body, etag = reader.cached(("run", ref, at, size), make)
    return asked_for.read(body, etag)


@get(
    "/v1/runs/{ref:str}/manifest",
    tags=["runs"],
    summary="The run's manifest bundle",
    description="The canonical manifest bundle {run, protocol, environment} as recorded.",
    operation_id="V1RunsRefManifest",
    responses=RUN_ERRORS,
    operation_class=documented(answers={"200": _MANIFEST}),
)
async def run_manifest(
    request: Request[Any, Any, Any], reader: ReaderDep, ref: RunRef, as_of_text: AsOf = None
) -> Read:
    """The canonical manifest bundle {run, protocol, environment} as recorded."""
    ref = ref_of(ref)
    asked_for = asked(reader, as_of_text)
    log = reader.log
    dossier = runs.show_run(
        log.session, log, ref, asked_for.at, size=asked_for.size, standings=reader.standings
    )
    # A run's manifest never changes, but what a short id or alias names can (an alias gaining a
    # second run): only a full digest pins it.
    by_digest = ref.startswith("sha256:") and ref == dossier.runDigest
    return asked_for.read(_ENC.encode(dossier.manifest), pinned=by_digest)


@get(
    "/v1/runs/{ref:str}/history",
    tags=["runs"],
    summary="The run's history",
    description="Every entry that touched the run, in log order: ingest, supersession or"
    " retraction, attestations and their withdrawal or hiding, reports and resolutions, reruns,"
    " evidence changes, rank and leader changes of its group; each with its position, recording"
    " time, type, signer and a link to its inclusion proof at the size answered.",
    operation_id="V1RunsRefHistory",
    responses={**answer(history.RunHistory, "The run's history"), **RUN_ERRORS},
)
async def run_history(
    request: Request[Any, Any, Any], reader: ReaderDep, ref: RunRef, as_of_text: AsOf = None
) -> Read:
    """Every entry that touched the run, in log order: ingest, supersession or retraction,
    attestations and their withdrawal or hiding, reports and resolutions, reruns, evidence
    changes, rank and leader changes of its group; each with its position, recording time, type,
    signer and a link to its inclusion proof at the size answered."""
    ref = ref_of(ref)
    asked_for = asked(reader, as_of_text)
    at, size = asked_for.at, asked_for.size

    def make() -> bytes:
        log = reader.log
        # "Now" is the size read above: the entries, the body's asOf and the proof links agree
        # even if the log grows meanwhile.
        return _ENC.encode(history.run_history(log.session, log, ref, asked_for.tree, size=size))

    body, etag = reader.cached(("history", ref, at, size), make)
    return asked_for.read(body, etag)


@get(
    "/v1/runs/{ref:str}/citation",
    tags=["runs"],
    summary="How to cite the run",
    description="The citation in the asked `format`: `text`, `bibtex`, `biblatex`, `csl-json`"
    " or `receipt` (the default: a file the log's key signs, checked offline by"
    " `benchproof verify-citation`). Not cached: each names the instant it was asked.",
    operation_id="V1RunsRefCitation",
    responses=RUN_ERRORS,
    operation_class=documented(answers={"200": _CITATION}),
)
async def run_citation(
    request: Request[Any, Any, Any],
    services: ServicesDep,
    ref: RunRef,
    citation_format: Annotated[
        str,
        QueryParameter(
            name="format",
            description="text, bibtex, biblatex, csl-json or receipt (the default)",
        ),
    ] = "receipt",
) -> Response[bytes]:
    """The citation in the asked ``format``: ``text``, ``bibtex``, ``biblatex``, ``csl-json`` or
    ``receipt`` (the default: a file the log's key signs, checked offline by
    ``benchproof verify-citation``). Not cached: each names the instant it was asked."""
    ref = ref_of(ref)
    base = services.base(request)

    def make() -> tuple[bytes, str, str]:
        log = services.reader.log  # this worker thread's own read handle
        body, media = cite.citation(
            services.ledger, log.session, log, ref, citation_format, base=base
        )
        if citation_format != "receipt":
            return body, media, ""
        # Saved under a name that says which run and when: receipts of two runs, or of one
        # run on two days, do not overwrite each other in a downloads folder.
        day = services.ledger.clock().astimezone(UTC).date().isoformat()
        return (
            body,
            media,
            f"benchproof-receipt-{queries.resolve_run(log.session, ref)[7:19]}-{day}.txt",
        )

    body, media, saved_as = await sync_to_thread(make)
    headers = {"Cache-Control": "no-store"}  # each citation names the instant it was asked for
    if saved_as:
        headers["Content-Disposition"] = f'attachment; filename="{saved_as}"'
    return Response(body, media_type=media, headers=headers)


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
) -> Read:
    """Runs, a page at a time: the home page's search in its order (``_LIST_DOC``)."""
    asked_for = asked(reader, as_of_text)
    page = runs.run_page(
        reader.conn,
        asked_for.at,
        size=asked_for.size,
        text=q,
        group_key=comparison_key,
        source=source,
        evidence=evidence,
        hardware=hardware,
        after=after,
        limit=limit,
    )
    return asked_for.read(_ENC.encode(page))


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
) -> Read:
    """Compare runs field by field; name the first material mismatch (the first part of the
    comparison key that differs), or say they are comparable (one comparison group)."""
    asked_for = asked(reader, as_of_text)
    comparison = runs.compare(reader.conn, runs_text.split(","), asked_for.at, size=asked_for.size)
    return asked_for.read(_ENC.encode(comparison))


@post("/v1/runs/{ref:str}", include_in_schema=False)
async def run_post(ref: RunRef, body: RawBody) -> None:
    """A run takes no post of its own: each post names its resource (404, as a post to any
    other resource of a run). The body is read first, as on every post (a body over the limit
    is a 413).

    Raises:
        NotFound: always.
    """
    raise NotFound("POST /v1/runs/{ref} takes …/attestations, …/reports or …/reruns")


HANDLERS = [run_show, run_manifest, run_history, run_citation, run_post, runs_list, compare]
