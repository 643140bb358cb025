"""What a route says of itself in the OpenAPI document beyond what litestar sees in its
signature: the body of a route that reads it raw (``RawBody``: signed envelopes, files), and an
answer in several media types. A route names them in its decorator,
``operation_class=documented(...)``; the document is generated from the routes alone.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from litestar.openapi.spec import (
    OpenAPIMediaType,
    OpenAPIResponse,
    OpenAPIType,
    Operation,
    Parameter,
    Reference,
    RequestBody,
    Schema,
)

from events.entries import EVENT_PAYLOAD_TYPE

__all__ = ["OBJECT", "TEXT", "documented", "envelope", "event", "json_body", "object_of"]

OBJECT = Schema(type=OpenAPIType.OBJECT)
TEXT = Schema(type=OpenAPIType.STRING)


def documented(
    *,
    body: RequestBody | None = None,
    answers: dict[str, OpenAPIResponse] | None = None,
    values: dict[str, Schema] | None = None,
) -> type[Operation]:
    """The operation class of a route whose request body is ``body``, whose answers include
    ``answers`` (by status; each replaces the one litestar made for that status, if any) and
    whose parameters named in ``values`` take the values their schema there says (the route
    checks them itself, with its own problem answer)."""

    @dataclass
    class Documented(Operation):
        def __post_init__(self) -> None:
            if body is not None:
                self.request_body = body
            if answers:
                responses = dict(self.responses or {})
                responses.update(answers)
                self.responses = responses
            if values and self.parameters:
                self.parameters = [
                    replace(p, schema=values[p.name])
                    if isinstance(p, Parameter) and p.name in values
                    else p
                    for p in self.parameters
                ]

    return Documented


def json_body(schema: Schema) -> RequestBody:
    """A required JSON request body of ``schema``."""
    return RequestBody(required=True, content={"application/json": OpenAPIMediaType(schema=schema)})


def object_of(*required: str, **properties: Schema) -> Schema:
    """A JSON object with ``properties``, of which ``required`` must be present."""
    fields: dict[str, Schema | Reference] = dict(properties)
    return Schema(type=OpenAPIType.OBJECT, required=list(required) or None, properties=fields)


def envelope(payload_type: str, payload: str, description: str) -> Schema:
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
                    properties={"keyid": TEXT, "sig": TEXT},
                ),
            ),
        },
        description=description,
    )


def event(name: str, signer: str) -> Schema:
    """A DSSE envelope over the event ``name``, signed by ``signer``."""
    return envelope(
        EVENT_PAYLOAD_TYPE,
        f"base64 of the `{name}` event (canonical JSON)",
        f"A DSSE envelope signed by {signer}",
    )
