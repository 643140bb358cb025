"""``/v1/groups``: a comparison group (or serving cohort) with its ranked runs, and its leader
history."""

from __future__ import annotations

from typing import Any

import msgspec
from litestar import Request, Response, get
from litestar.params import FromPath

from projections.views import LeaderChange
from service.app import groups
from service.web.caching import etag_of, respond, settled
from service.web.deps import ReaderDep
from service.web.params import GROUP_ERRORS, AsOf, answer, as_of

__all__ = ["HANDLERS"]

_ENC = msgspec.json.Encoder()


@get(
    "/v1/groups/{key:str}",
    tags=["groups"],
    responses={**answer(groups.GroupPage, "The group and its ranked runs"), **GROUP_ERRORS},
)
async def group_show(
    request: Request[Any, Any, Any], reader: ReaderDep, key: FromPath[str], as_of_text: AsOf = None
) -> Response[bytes]:
    """A comparison group (or serving cohort) and its ranked runs, best first."""
    at = as_of(reader, as_of_text)
    body = _ENC.encode(groups.group_page(reader.conn, key, at, size=reader.size()))
    return respond(request, body, etag_of(body), pinned=settled(reader, as_of_text, at))


@get(
    "/v1/groups/{key:str}/history",
    tags=["groups"],
    responses={**answer(list[LeaderChange], "The leader changes, oldest first"), **GROUP_ERRORS},
)
async def group_history(
    request: Request[Any, Any, Any], reader: ReaderDep, key: FromPath[str], as_of_text: AsOf = None
) -> Response[bytes]:
    """The group's leader changes (ranking-v1), oldest first."""
    at = as_of(reader, as_of_text)
    body = _ENC.encode(groups.group_history(reader.conn, key, at))
    return respond(request, body, etag_of(body), pinned=settled(reader, as_of_text, at))


HANDLERS = [group_show, group_history]
