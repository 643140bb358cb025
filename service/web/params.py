"""What the API's handlers share: the ``asOf`` parameter, and the problem answers they document.

Every read takes ``asOf``: a tree size, or an RFC 3339 instant of the log's own recording time
(``service.readmodel.asof``). Errors are RFC 9457 problem details (``service.web.problems`` maps them);
``Problem`` is their shape in the OpenAPI schema.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import Annotated, Any, NamedTuple

import msgspec
from litestar.openapi.datastructures import ResponseSpec
from litestar.params import PathParameter, QueryParameter

from service.errors import UsageError
from service.readmodel.asof import parse_as_of
from service.web.caching import JSON, Read, etag_of
from service.web.reads import Reader

__all__ = [
    "BAD_REQUEST",
    "GROUP_ERRORS",
    "MAX_BODY_TEXT",
    "OPERATOR_TOKEN",
    "RUN_ERRORS",
    "After",
    "AsOf",
    "Asked",
    "Limit",
    "Problem",
    "RunRef",
    "answer",
    "as_of",
    "asked",
    "checked",
    "document",
    "one_of",
    "problem",
]

AsOf = Annotated[
    str | None,
    QueryParameter(
        name="asOf",
        description="a tree size (whole number of entries), or an RFC 3339 instant with seconds"
        " and offset (2026-12-01T00:00:00Z; a bare date is refused)",
        required=False,
    ),
]
RunRef = Annotated[
    str,
    PathParameter(
        description="a run reference: a short id (12 or more hex digits), sha256:<64 hex>,"
        " kernelindex:<uuid> or <source>:<externalId>, with a `/` in it sent as `%2F`"
        " (gpumode-kernelbot:submission%2F7)"
    ),
]
After = Annotated[str | None, QueryParameter(description="keyset cursor: a previous page's `next`")]
Limit = Annotated[int, QueryParameter(ge=1, le=1000)]


def as_of(reader: Reader, text: str | None) -> int | None:
    """The tree size ``asOf`` names (None: now).

    Raises:
        UsageError: neither a tree size within the log nor an instant.
    """
    return parse_as_of(text, size=reader.size, at_instant=lambda i: reader.log.size_at_instant(i))


class Asked(NamedTuple):
    """What a read's ``asOf`` names: ``at``, the tree size (None: now); ``size``, the log's size
    as the read began (what a read of "now" reflects and is labelled with); ``pinned``, whether
    that view can never change (``pinned_by``)."""

    at: int | None
    size: int
    pinned: bool

    @property
    def tree(self) -> int:
        """The tree size the read answers as of."""
        return self.size if self.at is None else self.at

    def read(
        self,
        body: bytes,
        etag: str | None = None,
        *,
        pinned: bool = False,
        media_type: str = JSON,
    ) -> Read:
        """The read's answer: ``body`` (its ETag: ``etag``, else made here) as of this size,
        pinned when ``asOf`` pins it or when ``pinned`` says so (a view fixed otherwise)."""
        return Read(
            body,
            etag_of(body) if etag is None else etag,
            pinned=self.pinned or pinned,
            size=self.tree,
            exact=self.at is not None,
            media_type=media_type,
        )


def pinned_by(text: str | None, at: int | None, size: int) -> bool:
    """Whether the view ``asOf`` (``text``, naming the tree size ``at``) names can never change,
    so that its answer may be cached for good, the log holding ``size`` entries. A tree size is
    fixed once the log has reached it. An instant is fixed once the log holds an entry recorded
    after it (recording times never decrease); an instant at or beyond the latest entry (the
    future included) names the current size, which grows."""
    if at is None or text is None:
        return False
    return text.strip().isdigit() or at < size


def asked(reader: Reader, text: str | None) -> Asked:
    """What the ``asOf`` parameter ``text`` names, and the log's size now.

    Raises:
        UsageError: neither a tree size within the log nor an instant.
    """
    at = as_of(reader, text)
    size = reader.size()
    return Asked(at, size, pinned_by(text, at, size))


def one_of(name: str, value: str | None, allowed: Collection[str]) -> str | None:
    """``value`` of the query parameter ``name``, if it is one of ``allowed`` (None: not given).

    Raises:
        UsageError: another value; the detail names the parameter and the allowed values.
    """
    if value is None or value in allowed:
        return value
    words = ", ".join(sorted(allowed))
    raise UsageError(
        f"{name} must be one of {words}, not {value!r}",
        parameter=name,
        value=value,
        allowed=sorted(allowed),
    )


def checked(name: str, value: str | None, shape: re.Pattern[str], words: str) -> str | None:
    """``value`` of the query parameter ``name``, if it matches ``shape`` (None: not given).

    Raises:
        UsageError: it does not; the detail names the parameter and what it takes (``words``).
    """
    if value is None or shape.fullmatch(value):
        return value
    raise UsageError(
        f"{name} must be {words}, not {value!r}", parameter=name, value=value, allowed=words
    )


class Problem(msgspec.Struct, frozen=True, omit_defaults=True):
    """An error, RFC 9457 problem details (``application/problem+json``)."""

    type: str
    title: str
    status: int
    detail: str = ""
    candidates: list[str] | None = None  # 300: the runs an ambiguous alias names


def problem(description: str) -> ResponseSpec:
    """A documented error answer."""
    return ResponseSpec(
        Problem,
        description=description,
        media_type="application/problem+json",
        generate_examples=False,
    )


def answer(shape: Any, description: str) -> dict[int, ResponseSpec]:
    """The documented 200 answer of a read whose handler returns its encoded body (a cached
    ``Response[bytes]``): ``shape`` is what the body holds."""
    return {200: ResponseSpec(shape, description=description, generate_examples=False)}


def document(media_type: str, description: str) -> ResponseSpec:
    """The documented 200 answer of a read whose body is a document of ``media_type`` (text, a
    JSON Schema) rather than a JSON view."""
    return ResponseSpec(
        str, description=description, media_type=media_type, generate_examples=False
    )


BAD_REQUEST = {
    400: problem(
        "Malformed parameters (asOf, sizes, limits, cursors, filters...): the detail names the"
        " parameter and what it takes"
    )
}
RUN_ERRORS = {
    400: problem(
        "Malformed parameters, or a malformed reference (a reference is a short id of 12 or"
        " more hex digits, sha256:<64 hex>, kernelindex:<uuid> or <source>:<externalId>)"
    ),
    300: problem("The alias names several runs: `candidates` lists their digests"),
    404: problem("No run matches the well-formed reference (asOf: at that tree size)"),
}
GROUP_ERRORS = {**BAD_REQUEST, 404: problem("No comparison group has this key")}
OPERATOR_TOKEN = {401: problem("No valid operator token (Authorization: Bearer <token>)")}
MAX_BODY_TEXT = "64 MiB unless the server sets another limit"
