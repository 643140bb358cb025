"""``/groups/{key}``: a comparison group's leaderboard, with a bar chart and its leader
history."""

from __future__ import annotations

from typing import Any

from litestar import Request, get
from litestar.params import FromPath

from projections.views import RunView
from service.app import groups
from service.readmodel.dossier import short_id
from service.web import present
from service.web.caching import Read
from service.web.charts import bar_chart
from service.web.deps import ReaderDep
from service.web.pages.render import html
from service.web.params import AsOf, asked

__all__ = ["group_page"]


def _label(view: RunView) -> str:
    return view.implementation or view.title or view.name


@get("/groups/{key:str}", include_in_schema=False, sync_to_thread=True)
def group_page(
    request: Request[Any, Any, Any], reader: ReaderDep, key: FromPath[str], as_of_text: AsOf = None
) -> Read:
    """A comparison group's leaderboard: ranked runs, a bar chart and the leader history."""
    asked_for = asked(reader, as_of_text)
    at = asked_for.at
    urls = present.Urls(at)
    key = groups.named_group(reader.conn, key, at)
    board = groups.board(reader.conn, key, at)
    ranked = board.members
    unit = ranked[0][1].primaryUnit if ranked else None
    rows = [
        {
            "rank": rank,
            "value": present.quantity(v.primaryValue, v.primaryUnit),
            "name": _label(v),
            "href": urls.run(short_id(v.runDigest)),
            "evidence": v.evidenceLevel,
            "observed": v.observedAt,
        }
        for rank, v in ranked
    ]
    chart = bar_chart(
        [
            (rank, v.primaryValue or 0.0, _label(v), urls.run(short_id(v.runDigest)), v.runDigest)
            for rank, v in ranked
        ],
        unit,
    )
    by_digest = {v.runDigest: v for _, v in ranked}

    def name(digest: str | None) -> str:
        view = board.runs.get(digest or "")
        return _label(view) if view else short_id(digest or "")

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
        for lc in board.history
    ]
    heading, subtitle = _heading(board, key)
    metric = board.group.metricKey
    context = {
        "g": board.group,
        "rows": rows,
        "chart": chart,
        "leaders": leaders,
        "heading": heading,
        "subtitle": subtitle,
        "metric": " ".join(reversed(metric.split(":")[:2])) if metric != "none" else "value",
        "urls": urls,
        "as_of": at,
        "breakable": present.breakable,
    }
    return html(request, "group.html", context, pinned=asked_for.pinned)


def _heading(board: groups.Board, key: str) -> tuple[str, str | None]:
    """The group named by what its leader runs (operation, hardware) and on what (workload)."""
    if not board.members:
        return "Comparison group " + short_id(key), None
    first = board.members[0][1]
    name = board.operationTitle or first.benchmark or first.name
    heading = f"{name} on {first.hardware}" if first.hardware else name
    return heading, board.workloadTitle
