"""The JSON API under ``/v1``. Handlers parse, call one read or command, and shape the answer;
every read takes ``asOf`` (a tree size or an RFC 3339 instant of the log's recording time)."""

from __future__ import annotations

import tempfile
from base64 import b64encode
from pathlib import Path
from typing import Annotated, Any

import msgspec
from litestar import Request, Response, get, post
from litestar.openapi.datastructures import ResponseSpec
from litestar.params import FromPath, FromQuery, QueryParameter, RawBody

from events.errors import EventError, ProofError
from projections import queries
from projections.errors import UnknownRun
from service.asof import parse_as_of
from service.dossier import Dossier, build_dossier, short_id
from service.errors import NotFound, ServiceError, UsageError
from service.ingest.api import SOURCES, run_import
from service.ingest.core import IngestResult
from service.ledger import Ledger
from service.web.deps import LedgerDep, ReaderDep, TokensDep
from service.web.problems import Unauthorized
from service.web.reads import Reader, etag_of
from service.web.responses import Prepared, etag_matches, if_none_match

__all__ = ["API_HANDLERS"]

_ENC = msgspec.json.Encoder()
JSON = "application/json"
AsOf = Annotated[
    str | None,
    QueryParameter(name="asOf", description="a tree size or an RFC 3339 instant", required=False),
]


class Problem(msgspec.Struct, frozen=True, omit_defaults=True):
    """An error, RFC 9457 problem details (``application/problem+json``)."""

    type: str
    title: str
    status: int
    detail: str = ""
    candidates: list[str] | None = None  # 300: the runs an ambiguous alias names


def _problem(description: str) -> ResponseSpec:
    return ResponseSpec(
        Problem,
        description=description,
        media_type="application/problem+json",
        generate_examples=False,
    )


BAD_REQUEST = {400: _problem("Malformed parameters (asOf, sizes, limits...)")}
RUN_ERRORS = {
    **BAD_REQUEST,
    300: _problem("The alias names several runs: `candidates` lists their digests"),
    404: _problem("No run matches the reference (malformed references included)"),
}
GROUP_ERRORS = {**BAD_REQUEST, 404: _problem("No comparison group has this key")}
MAX_BODY_TEXT = "64 MiB unless the server sets another limit"


class RunSummary(msgspec.Struct, frozen=True, omit_defaults=True):
    runDigest: str
    shortId: str
    kind: str
    name: str
    status: str
    source: str
    evidenceLevel: str
    observedAt: str
    title: str | None = None
    comparisonKey: str | None = None
    cohortKey: str | None = None
    primaryValue: float | None = None
    primaryUnit: str | None = None
    metricKey: str | None = None
    hardware: str | None = None
    externalId: str | None = None


class RunPage(msgspec.Struct, frozen=True):
    items: list[RunSummary]
    asOf: int
    next: str | None = None


class Ranked(msgspec.Struct, frozen=True):
    rank: int
    run: RunSummary


class GroupPage(msgspec.Struct, frozen=True):
    group: queries.GroupSummary
    runs: list[Ranked]
    asOf: int


class Comparison(msgspec.Struct, frozen=True, omit_defaults=True):
    runs: list[RunSummary]
    comparable: bool
    fields: dict[str, list[str | None]]
    asOf: int
    firstMismatch: str | None = None


class Proof(msgspec.Struct, frozen=True):
    index: int
    treeSize: int
    hashes: list[str]


class ConsistencyProof(msgspec.Struct, frozen=True):
    oldSize: int
    newSize: int
    hashes: list[str]


class LeafItem(msgspec.Struct, frozen=True):
    index: int
    leaf: str


class Entries(msgspec.Struct, frozen=True):
    entries: list[LeafItem]
    treeSize: int


class Health(msgspec.Struct, frozen=True):
    status: str
    treeSize: int
    origin: str


def summary(view: Any) -> RunSummary:
    return RunSummary(
        runDigest=view.runDigest,
        shortId=short_id(view.runDigest),
        kind=view.kind,
        name=view.name,
        status=view.status,
        source=view.source,
        evidenceLevel=view.evidenceLevel,
        observedAt=view.observedAt,
        title=view.title,
        comparisonKey=view.comparisonKey,
        cohortKey=view.cohortKey,
        primaryValue=view.primaryValue,
        primaryUnit=view.primaryUnit,
        metricKey=view.metricKey,
        hardware=view.hardware,
        externalId=view.externalId,
    )


def as_of(reader: Reader, text: str | None) -> int | None:
    return parse_as_of(text, size=reader.size, at_instant=lambda i: _at_instant(reader, i))


def _at_instant(reader: Reader, instant: str) -> int:
    return reader.log.size_at_instant(instant)


def settled(reader: Reader, text: str | None, at: int | None) -> bool:
    """Whether the view ``asOf`` names can never change, so the answer may be cached for good.

    A tree size is fixed once the log has reached it. An instant is fixed once the log holds an
    entry recorded after it (recording times never decrease); an instant at or beyond the
    latest entry (the future included) names the current size, which grows."""
    if at is None or text is None:
        return False
    return text.strip().isdigit() or at < reader.size()


def respond(
    request: Request[Any, Any, Any], body: bytes, etag: str, *, pinned: bool, media_type: str = JSON
) -> Response[bytes]:
    """A cacheable read: ETag always; reads pinned to a tree size never change."""
    cache = b"public, max-age=86400, immutable" if pinned else b"no-cache"
    text = media_type.startswith("text/") and "charset=" not in media_type
    content_type = f"{media_type}; charset=utf-8" if text else media_type
    headers = [
        (b"etag", etag.encode()),
        (b"cache-control", cache),
        (b"content-type", content_type.encode()),
    ]
    if etag_matches(if_none_match(request.scope["headers"]), etag):
        return Prepared(b"", headers[:2], status=304)
    return Prepared(body, headers)


def resolve(reader: Reader, ref: str, at: int | None) -> str:
    """A run digest from any reference; unknown (malformed included) is 404, ambiguous 300."""
    return queries.resolve_run(reader.conn, ref, at)


@get("/healthz", tags=["service"])
async def healthz(reader: ReaderDep) -> Health:
    """Liveness and the log size."""
    return Health("ok", reader.size(), reader.store.origin)


@get("/v1/runs/{ref:path}", tags=["runs"], responses=RUN_ERRORS)
async def run_show(
    request: Request[Any, Any, Any], reader: ReaderDep, ref: FromPath[str], as_of_text: AsOf = None
) -> Response[Dossier]:
    """A run's dossier (DESIGN.md §8). ``ref``: short id, ``sha256:`` digest, ``kernelindex:<uuid>``
    or ``<source>:<externalId>`` (external ids may hold ``/``: KernelBot's ``submission/N``).
    404 if nothing matches, 300 with the candidates if an alias names several runs.

    Two sub-resources share this route: ``…/manifest`` (the canonical manifest bundle {run,
    protocol, environment} as recorded) and ``…/history`` (every change to the run: the entry
    that made it, when, and the evidence level after it)."""
    ref = ref.lstrip("/")
    for suffix, part in (("/manifest", "manifest"), ("/history", "history")):
        if ref.endswith(suffix):
            return _run_part(request, reader, ref.removesuffix(suffix), part, as_of_text)  # type: ignore[return-value]
    at = as_of(reader, as_of_text)
    size = reader.size()

    def make() -> bytes:
        digest = resolve(reader, ref, at)
        dossier = build_dossier(reader.conn, digest, at, size=size, standings=reader.standings)
        if dossier is None:
            raise UnknownRun(f"no run matches {ref!r}")
        return _ENC.encode(dossier)

    # Keyed by the reference as asked and the log size: what a reference names can only change
    # when the log grows (an alias gaining a second run), and then the size differs.
    body, etag = reader.cached(("run", ref, at, size), make)
    return respond(request, body, etag, pinned=settled(reader, as_of_text, at))  # type: ignore[return-value]


def _run_part(
    request: Request[Any, Any, Any], reader: Reader, ref: str, part: str, as_of_text: str | None
) -> Response[bytes]:
    at = as_of(reader, as_of_text)
    digest = resolve(reader, ref, at)
    dossier = build_dossier(reader.conn, digest, at, size=reader.size(), standings=reader.standings)
    if dossier is None:
        raise UnknownRun(f"no run matches {ref!r}")
    body = _ENC.encode(dossier.manifest if part == "manifest" else dossier.history)
    # A run's manifest never changes, but what a short id or alias names can (an alias gaining a
    # second run): only a full digest pins it.
    by_digest = ref.startswith("sha256:") and ref == digest
    pinned = settled(reader, as_of_text, at) or (part == "manifest" and by_digest)
    return respond(request, body, etag_of(body), pinned=pinned)


@get("/v1/runs", tags=["runs"], responses=BAD_REQUEST)
async def runs_list(
    request: Request[Any, Any, Any],
    reader: ReaderDep,
    as_of_text: AsOf = None,
    comparison_key: Annotated[
        str | None, QueryParameter(name="comparisonKey", required=False)
    ] = None,
    source: FromQuery[str | None] = None,
    evidence: Annotated[str | None, QueryParameter(name="evidenceLevel", required=False)] = None,
    hardware: FromQuery[str | None] = None,
    after: Annotated[
        str | None, QueryParameter(description="keyset cursor: the last runDigest seen")
    ] = None,
    limit: Annotated[int, QueryParameter(ge=1, le=1000)] = 100,
) -> Response[RunPage]:
    """Runs ordered by digest, a page at a time (``next`` is the cursor for ``after``)."""
    at = as_of(reader, as_of_text)
    views = list(
        queries.list_runs(
            reader.conn,
            at,
            group_key=comparison_key,
            source=source,
            evidence=evidence,
            hardware=hardware,
            after=after,
            limit=limit + 1,
        )
    )
    more = len(views) > limit
    items = [summary(v) for v in views[:limit]]
    page = RunPage(
        items, reader.size() if at is None else at, items[-1].runDigest if more else None
    )
    body = _ENC.encode(page)
    return respond(request, body, etag_of(body), pinned=settled(reader, as_of_text, at))  # type: ignore[return-value]


@get("/v1/groups/{key:str}", tags=["groups"], responses=GROUP_ERRORS)
async def group_show(
    request: Request[Any, Any, Any], reader: ReaderDep, key: FromPath[str], as_of_text: AsOf = None
) -> Response[GroupPage]:
    """A comparison group (or serving cohort) and its ranked runs, best first."""
    at = as_of(reader, as_of_text)
    group = queries.group(reader.conn, key, at)
    ranked = [Ranked(r, summary(v)) for r, v in queries.ranked_members(reader.conn, key, at)]
    body = _ENC.encode(GroupPage(group, ranked, reader.size() if at is None else at))
    return respond(request, body, etag_of(body), pinned=settled(reader, as_of_text, at))  # type: ignore[return-value]


@get("/v1/groups/{key:str}/history", tags=["groups"], responses=GROUP_ERRORS)
async def group_history(
    request: Request[Any, Any, Any], reader: ReaderDep, key: FromPath[str], as_of_text: AsOf = None
) -> Response[list[Any]]:
    """The group's leader changes (ranking-v1), oldest first."""
    at = as_of(reader, as_of_text)
    queries.group(reader.conn, key, at)  # 404 for an unknown group
    body = _ENC.encode(list(queries.leader_history(reader.conn, key, at)))
    return respond(request, body, etag_of(body), pinned=settled(reader, as_of_text, at))  # type: ignore[return-value]


_COMPARED = (
    "kind",
    "operationDigest",
    "workloadDigest",
    "protocolKey",
    "environmentKey",
    "correctnessKey",
    "metricKey",
)


def compare_runs(reader: Reader, runs: str, at: int | None) -> Comparison:
    """Compare the runs ``runs`` names (2 to 8 references, comma-separated) field by field.

    The first material mismatch is the first part of the comparison key that differs (or is
    missing); runs with none are comparable (one comparison group).

    Raises:
        UsageError: fewer than 2 or more than 8 references.
        UnknownRun, AmbiguousRun: a reference names no run, or several.
    """
    refs = [r for r in runs.split(",") if r.strip()]
    if not 2 <= len(refs) <= 8:
        raise UsageError(f"compare takes 2 to 8 runs, not {len(refs)}")
    views = []
    for ref in refs:
        view = queries.run_view(reader.conn, resolve(reader, ref.strip(), at), at)
        assert view is not None  # noqa: S101 - resolved just above
        views.append(view)
    fields = {f: [getattr(v, f) for v in views] for f in _COMPARED}
    mismatch = next((f for f in _COMPARED if len(set(fields[f])) > 1 or None in fields[f]), None)
    size = reader.size() if at is None else at
    return Comparison([summary(v) for v in views], mismatch is None, fields, size, mismatch)


@get("/v1/compare", tags=["runs"], responses=RUN_ERRORS)
async def compare(
    request: Request[Any, Any, Any],
    reader: ReaderDep,
    runs: Annotated[str, QueryParameter(description="2 to 8 run references, comma-separated")],
    as_of_text: AsOf = None,
) -> Response[Comparison]:
    """Compare runs field by field; name the first material mismatch (the first part of the
    comparison key that differs), or say they are comparable (one comparison group)."""
    at = as_of(reader, as_of_text)
    body = _ENC.encode(compare_runs(reader, runs, at))
    return respond(request, body, etag_of(body), pinned=settled(reader, as_of_text, at))  # type: ignore[return-value]


def checkpoint_note(reader: Reader, ledger: Ledger, at: int | None) -> bytes | None:
    """The signed checkpoint that answers ``asOf``: now, the latest (signed on the spot if the
    log has outgrown it); for a past size, the latest signed at or below it (None if none)."""
    if at is None:
        latest = ledger.store.latest_checkpoint()
        if latest is None or latest[0] != ledger.store.refresh():
            latest = ledger.store.publish_checkpoint(ledger.signers.sign_checkpoint, ledger.clock())
        return bytes(latest[1])
    found = reader.log.checkpoint_at_or_below(at)
    return None if found is None else found.note


@get(
    "/v1/log/checkpoint",
    tags=["log"],
    media_type="text/plain",
    responses={**BAD_REQUEST, 404: _problem("No checkpoint at or below asOf")},
)
async def log_checkpoint(
    request: Request[Any, Any, Any], reader: ReaderDep, ledger: LedgerDep, as_of_text: AsOf = None
) -> Response[bytes]:
    """The latest signed checkpoint note (C2SP tlog-checkpoint), covering every committed entry;
    with ``asOf``, the latest one signed for a tree size at or below it (404 if none)."""
    at = as_of(reader, as_of_text)
    note = checkpoint_note(reader, ledger, at)
    if note is None:
        raise NotFound(f"no checkpoint was signed for a tree size at or below {at}")
    return respond(
        request,
        note,
        etag_of(note),
        pinned=settled(reader, as_of_text, at),
        media_type="text/plain",
    )


@get("/v1/log/key", tags=["log"], media_type="text/plain")
async def log_key(request: Request[Any, Any, Any], ledger: LedgerDep) -> Response[bytes]:
    """The log's verifier key: C2SP vkey ``<origin>+<keyhash>+<base64>`` (fixed for the life of
    the log)."""
    body = ledger.signers.vkey.encode() + b"\n"
    return respond(request, body, etag_of(body), pinned=True, media_type="text/plain")


@get("/v1/log/entries", tags=["log"], responses=BAD_REQUEST)
async def log_entries(
    request: Request[Any, Any, Any],
    reader: ReaderDep,
    start: Annotated[int, QueryParameter(ge=0)] = 0,
    end: Annotated[int | None, QueryParameter(ge=0)] = None,
    as_of_text: AsOf = None,
) -> Response[Entries]:
    """Entries ``start <= index < end`` (at most 1000) of the log as of ``asOf`` (default: now):
    base64 of the exact leaf bytes. ``treeSize`` is the size they were read against."""
    at = as_of(reader, as_of_text)
    size = reader.size() if at is None else at
    stop = min(size if end is None else end, start + 1000, size)
    rows = reader.log.leaves(start, stop)
    page = Entries([LeafItem(s, b64encode(leaf).decode()) for s, leaf in rows], size)
    body = _ENC.encode(page)
    # Leaves never change: a page whose size is fixed is fixed.
    return respond(request, body, etag_of(body), pinned=settled(reader, as_of_text, at))  # type: ignore[return-value]


@get("/v1/log/proof/inclusion", tags=["log"], responses=BAD_REQUEST)
async def proof_inclusion(
    request: Request[Any, Any, Any],
    reader: ReaderDep,
    ledger: LedgerDep,
    index: Annotated[int, QueryParameter(ge=0)],
    size: Annotated[int | None, QueryParameter(ge=1)] = None,
    as_of_text: AsOf = None,
) -> Response[Proof]:
    """RFC 6962 inclusion proof of entry ``index`` in the tree of ``size`` (default: the size
    ``asOf`` names, or the whole log)."""
    at = as_of(reader, as_of_text)
    tree = size if size is not None else at if at is not None else ledger.store.refresh()
    try:
        hashes = ledger.store.inclusion_proof(index, tree)
    except ProofError as exc:
        raise UsageError(exc.detail) from None
    body = _ENC.encode(Proof(index, tree, [b64encode(h).decode() for h in hashes]))
    pinned = size is not None or settled(reader, as_of_text, at)
    return respond(request, body, etag_of(body), pinned=pinned)  # type: ignore[return-value]


@get("/v1/log/proof/consistency", tags=["log"], responses=BAD_REQUEST)
async def proof_consistency(
    request: Request[Any, Any, Any],
    reader: ReaderDep,
    ledger: LedgerDep,
    old: Annotated[int, QueryParameter(ge=1)],
    new: Annotated[int | None, QueryParameter(ge=1)] = None,
    as_of_text: AsOf = None,
) -> Response[ConsistencyProof]:
    """RFC 6962 consistency proof from ``old`` to ``new`` entries (default: the size ``asOf``
    names, or the whole log)."""
    at = as_of(reader, as_of_text)
    tree = new if new is not None else at if at is not None else ledger.store.refresh()
    try:
        hashes = ledger.store.consistency_proof(old, tree)
    except ProofError as exc:
        raise UsageError(exc.detail) from None
    body = _ENC.encode(ConsistencyProof(old, tree, [b64encode(h).decode() for h in hashes]))
    pinned = new is not None or settled(reader, as_of_text, at)
    return respond(request, body, etag_of(body), pinned=pinned)  # type: ignore[return-value]


_SUFFIX = {
    "json": ".json",
    "yaml": ".yaml",
    "x-yaml": ".yaml",
    "csv": ".csv",
    "zstd": ".jsonl.zst",
    "x-ndjson": ".jsonl",
    "jsonl": ".jsonl",
}


@post(
    "/v1/ingest/{source:str}",
    tags=["operator"],
    sync_to_thread=True,
    status_code=200,
    security=[{"operatorToken": []}],
    responses={
        400: _problem("Unknown source"),
        401: _problem("No valid operator token (Authorization: Bearer <token>)"),
        413: _problem(f"The body is over the size limit ({MAX_BODY_TEXT})"),
        422: _problem("Invalid input, refused whole: nothing was appended"),
    },
)
def ingest(
    request: Request[Any, Any, Any],
    ledger: LedgerDep,
    reader: ReaderDep,
    tokens: TokensDep,
    source: FromPath[str],
    body: RawBody,
    filename: Annotated[
        str | None, QueryParameter(description="the uploaded file's name (picks its format)")
    ] = None,
) -> IngestResult:
    """Import one file of ``source`` into the log (operator token required: ``Authorization:
    Bearer <token>``); the body is the file, at most 64 MiB unless the server sets another
    limit (413 above it). Invalid input is refused whole (422, nothing appended)."""
    auth = request.headers.get("authorization", "")
    token = auth[7:].strip() if auth.lower().startswith("bearer ") else None
    if tokens.check(token) is None:
        raise Unauthorized("a valid operator token is required (Authorization: Bearer <token>)")
    if source not in SOURCES:
        raise UsageError(f"unknown source {source!r}; choose one of {', '.join(SOURCES)}")
    media = request.headers.get("content-type", "application/json").split(";")[0].split("/")[-1]
    name = Path(filename).name if filename else "upload" + _SUFFIX.get(media, ".json")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / name
        path.write_bytes(body)
        try:
            result, _ = run_import(ledger, source, [path])
        except (ServiceError, EventError) as exc:
            # Messages name the file they read: name the upload, not the server's temp folder.
            hidden = str(Path(tmp)) + "/"
            exc.detail = exc.detail.replace(hidden, "")
            exc.args = tuple(a.replace(hidden, "") if isinstance(a, str) else a for a in exc.args)
            report = exc.details.get("report")
            if isinstance(report, list):
                exc.details["report"] = [str(r).replace(hidden, "") for r in report]
            raise
    reader.invalidate()
    return result


API_HANDLERS = [
    healthz,
    run_show,
    runs_list,
    group_show,
    group_history,
    compare,
    log_checkpoint,
    log_key,
    log_entries,
    proof_inclusion,
    proof_consistency,
    ingest,
]
