"""The paths the generated OpenAPI document cannot see (``service.web.openapi.document``
adds them): each resource of the two path-catching run routes (``GET /v1/runs/{ref}/manifest``,
``…/history``, ``…/citation``; ``POST …/attestations``, ``…/reports``, ``…/reruns``) as its own
operation, and the request bodies litestar does not model because the routes read them raw
(``POST /v1/ingest/{source}``, the signed events' envelopes)."""

from __future__ import annotations

from dataclasses import replace

from litestar.openapi.spec import (
    OpenAPIFormat,
    OpenAPIMediaType,
    OpenAPIResponse,
    OpenAPIType,
    Operation,
    Parameter,
    PathItem,
    Reference,
    RequestBody,
    Schema,
)

from events.entries import EVENT_PAYLOAD_TYPE, INTOTO_PAYLOAD_TYPE
from service.app.report import REASONS
from service.ingest.api import SOURCES

__all__ = ["RUN", "ingest_body", "raw_bodies", "run_params", "run_posts", "run_reads"]

RUN = "/v1/runs/{ref}"
_PROBLEM = Reference(ref="#/components/schemas/Problem")


def _ref(name: str) -> Reference:
    return Reference(ref=f"#/components/schemas/{name}")


def _json(description: str, schema: Schema | Reference) -> OpenAPIResponse:
    return OpenAPIResponse(
        description=description, content={"application/json": OpenAPIMediaType(schema=schema)}
    )


def run_params(operation: Operation, *, citation: bool) -> list[Parameter | Reference]:
    """The route's parameters, ``format`` only for the citation."""
    return [
        p
        for p in operation.parameters or []
        if citation or not (isinstance(p, Parameter) and p.name == "format")
    ]


def _errors(operation: Operation, *drop: str) -> dict[str, OpenAPIResponse | Reference]:
    return {
        code: answer
        for code, answer in (operation.responses or {}).items()
        if code[0] != "2" and code not in drop
    }


_OBJECT = Schema(type=OpenAPIType.OBJECT)
_TEXT = Schema(type=OpenAPIType.STRING)


def run_reads(get: Operation) -> dict[str, Operation]:
    manifest = Schema(
        type=OpenAPIType.OBJECT,
        properties={"run": _OBJECT, "protocol": _OBJECT, "environment": _OBJECT},
        description="The canonical manifests the run was recorded with",
    )
    citation = {
        "text/plain": OpenAPIMediaType(schema=_TEXT),
        "application/x-bibtex": OpenAPIMediaType(schema=_TEXT),
        "application/vnd.citationstyles.csl+json": OpenAPIMediaType(schema=_OBJECT),
    }
    reads = {
        "manifest": (
            "The run's manifest bundle",
            "The canonical manifest bundle {run, protocol, environment} as recorded.",
            {"200": _json("The manifest bundle", manifest)},
        ),
        "history": (
            "The run's history",
            "Every entry that touched the run, in log order: ingest, supersession or retraction,"
            " attestations and their withdrawal or hiding, reports and resolutions, reruns,"
            " evidence changes, rank and leader changes of its group; each with its position,"
            " recording time, type, signer and a link to its inclusion proof at the size"
            " answered.",
            {"200": _json("The run's history", _ref("RunHistory"))},
        ),
        "citation": (
            "How to cite the run",
            "The citation in the asked `format`: `text`, `bibtex`, `biblatex`, `csl-json` or"
            " `receipt` (the default: a file the log's key signs, checked offline by"
            " `benchproof verify-citation`). Not cached: each names the instant it was asked.",
            {"200": OpenAPIResponse(description="The citation", content=citation)},
        ),
    }
    return {
        suffix: Operation(
            tags=get.tags,
            summary=summary,
            description=description,
            operation_id=f"V1RunsRef{suffix.title()}",
            parameters=run_params(get, citation=suffix == "citation"),
            responses={**answers, **_errors(get)},
        )
        for suffix, (summary, description, answers) in reads.items()
    }


def _body(schema: Schema) -> RequestBody:
    return RequestBody(required=True, content={"application/json": OpenAPIMediaType(schema=schema)})


def _envelope(payload_type: str, payload: str, description: str) -> Schema:
    """A DSSE envelope of ``payload_type`` whose payload is ``payload``."""
    return Schema(
        type=OpenAPIType.OBJECT,
        required=["payloadType", "payload", "signatures"],
        properties={
            "payloadType": Schema(type=OpenAPIType.STRING, const=payload_type),
            "payload": Schema(type=OpenAPIType.STRING, description=payload),
            "signatures": Schema(
                type=OpenAPIType.ARRAY,
                items=Schema(
                    type=OpenAPIType.OBJECT,
                    required=["keyid", "sig"],
                    properties={"keyid": _TEXT, "sig": _TEXT},
                ),
            ),
        },
        description=description,
    )


def _event(name: str, signer: str) -> Schema:
    return _envelope(
        EVENT_PAYLOAD_TYPE,
        f"base64 of the `{name}` event (canonical JSON)",
        f"A DSSE envelope signed by {signer}",
    )


def raw_bodies(paths: dict[str, PathItem]) -> None:
    """Document, in place, the bodies of the POST routes that read their body raw (so that
    litestar cannot see it): key challenges and registrations, revocations, withdrawals,
    rerun claims and results, citation checks."""
    bodies = {
        "/v1/keys/challenges": Schema(
            type=OpenAPIType.OBJECT,
            required=["keyId"],
            properties={"keyId": _TEXT},
            description="The key id (`ed25519:` and the SHA-256 of its public key) to register",
        ),
        "/v1/keys": _event("key.registered.v1", "the key it registers, naming its challenge"),
        "/v1/keys/{key_id}/revocation": Schema(
            one_of=[
                _event("key.revoked.v1", "the key it revokes"),
                Schema(
                    type=OpenAPIType.OBJECT,
                    properties={"reason": _TEXT},
                    description="An operator's revocation (with a bearer token)",
                ),
            ]
        ),
        "/v1/attestations/{attestation_id}/withdrawal": _event(
            "attestation.withdrawn.v1", "the key that signed the attestation"
        ),
        "/v1/reruns/{request_id}/claim": _event("rerun.claimed.v1", "a rerunner's key"),
        "/v1/reruns/{request_id}/result": _envelope(
            INTOTO_PAYLOAD_TYPE,
            "base64 of an in-toto Statement v1 with the rerun's measurement",
            "A DSSE envelope signed by the rerunner's key that holds the claim",
        ),
        "/v1/citations/verify": Schema(
            type=OpenAPIType.OBJECT, description="A citation receipt, as `benchproof cite` saves it"
        ),
    }
    for path, schema in bodies.items():
        item = paths.get(path)
        if item is not None and item.post is not None and item.post.request_body is None:
            item.post = replace(item.post, request_body=_body(schema))


def run_posts(post: Operation) -> dict[str, Operation]:
    envelope = _envelope(
        INTOTO_PAYLOAD_TYPE,
        "base64 of an in-toto Statement v1 about the run (predicate"
        " `https://benchproof.dev/attestation/v1`, schema at `GET /schemas/attestation/v1`)",
        "A DSSE envelope signed by the attester's registered key",
    )
    report = Schema(
        type=OpenAPIType.OBJECT,
        required=["reason", "text"],
        properties={"reason": Schema(type=OpenAPIType.STRING, enum=list(REASONS)), "text": _TEXT},
    )
    rerun = Schema(type=OpenAPIType.OBJECT, required=["reason"], properties={"reason": _TEXT})
    # suffix: summary, description, body, error answers that do not apply, security
    posts: dict[str, tuple[str, str, Schema, tuple[str, ...], list[dict[str, list[str]]] | None]]
    posts = {
        "attestations": (
            "Attest to the run",
            "Append the attester's signed statement about the run; the answer carries the"
            " entry, its checkpoint and inclusion proof (200: the log held it already).",
            envelope,
            (),
            None,
        ),
        "reports": (
            "Report the run",
            "File an anonymous report on the run (the index signs it); the run is under review"
            " until an operator resolves or dismisses it.",
            report,
            ("403", "422"),
            None,
        ),
        "reruns": (
            "Ask for a rerun",
            "An operator asks for an index-controlled rerun of the run (the index signs"
            " `rerun.requested.v1`).",
            rerun,
            ("403", "429"),
            [{"operatorToken": []}],
        ),
    }
    operations: dict[str, Operation] = {}
    for suffix, (summary, description, schema, drop, security) in posts.items():
        errors = _errors(post, *drop)
        if security is not None:
            errors["401"] = OpenAPIResponse(
                description="No valid operator token (Authorization: Bearer <token>)",
                content={"application/problem+json": OpenAPIMediaType(schema=_PROBLEM)},
            )
        operations[suffix] = Operation(
            tags=post.tags,
            summary=summary,
            description=description,
            operation_id=f"V1RunsRef{suffix.title()}",
            parameters=post.parameters,
            request_body=_body(schema),
            responses={
                **{code: a for code, a in (post.responses or {}).items() if code[0] == "2"},
                **errors,
            },
            security=security,
        )
    return operations


_INGEST_FORMATS = (
    "The file to import, as its source publishes it (at most 64 MiB unless the server sets"
    " another limit). `?filename=` picks its format by its suffix; without it the content type"
    " does: JSON (`application/json`, the default), YAML (`application/yaml`), JSON lines"
    " (`application/x-ndjson`), CSV (`text/csv`) or zstd-compressed JSON lines"
    " (`application/zstd`, the KernelIndex catalog export). Sources: `manifest` takes"
    " KernelIndex manifests (one, a JSON array, JSON lines or several YAML documents);"
    " `kernelindex-catalog` the catalog export; `sol-execbench`, `liger`, `mlperf-inference`"
    " and `kernelbench-timings` their published result files (mapping rules:"
    " service/ingest/README.md)."
)


def ingest_body(post: Operation) -> Operation:
    """The ingest route with its body and the sources it takes documented."""
    text = Schema(type=OpenAPIType.STRING)
    body = RequestBody(
        required=True,
        description=_INGEST_FORMATS,
        content={
            "application/json": OpenAPIMediaType(
                schema=Schema(
                    one_of=[_OBJECT, Schema(type=OpenAPIType.ARRAY, items=_OBJECT)],
                    description="A record or manifest, or an array of them",
                )
            ),
            "application/yaml": OpenAPIMediaType(schema=text),
            "application/x-ndjson": OpenAPIMediaType(schema=text),
            "text/csv": OpenAPIMediaType(schema=text),
            "application/zstd": OpenAPIMediaType(
                schema=Schema(type=OpenAPIType.STRING, format=OpenAPIFormat.BINARY)
            ),
        },
    )
    params = [
        replace(p, schema=Schema(type=OpenAPIType.STRING, enum=list(SOURCES)))
        if isinstance(p, Parameter) and p.name == "source"
        else p
        for p in post.parameters or []
    ]
    return replace(post, request_body=body, parameters=params)
