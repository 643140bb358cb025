"""``/v1/groups``: a comparison group (or serving cohort) with its ranked runs, and its leader
history."""

from __future__ import annotations

import msgspec
from litestar import get
from litestar.params import FromPath

from projections.views import LeaderChange
from service.app import groups
from service.web.caching import Read
from service.web.deps import ReaderDep
from service.web.params import GROUP_ERRORS, AsOf, answer, asked

__all__ = ["HANDLERS"]

_ENC = msgspec.json.Encoder()


@get(
    "/v1/groups/{key:str}",
    tags=["groups"],
    responses={**answer(groups.GroupPage, "The group and its ranked runs"), **GROUP_ERRORS},
)
async def group_show(reader: ReaderDep, key: FromPath[str], as_of_text: AsOf = None) -> Read:
    """A comparison group (or serving cohort) and its ranked runs, best first."""
    asked_for = asked(reader, as_of_text)
    key = groups.named_group(reader.conn, key, asked_for.at)
    page = groups.group_page(reader.conn, key, asked_for.at, size=asked_for.size)
    return asked_for.read(_ENC.encode(page))


@get(
    "/v1/groups/{key:str}/history",
    tags=["groups"],
    responses={**answer(list[LeaderChange], "The leader changes, oldest first"), **GROUP_ERRORS},
)
async def group_history(reader: ReaderDep, key: FromPath[str], as_of_text: AsOf = None) -> Read:
    """The group's leader changes (ranking-v1), oldest first."""
    asked_for = asked(reader, as_of_text)
    key = groups.named_group(reader.conn, key, asked_for.at)
    return asked_for.read(_ENC.encode(groups.group_history(reader.conn, key, asked_for.at)))


HANDLERS = [group_show, group_history]
