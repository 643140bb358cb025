"""``/groups/{key}``: a comparison group's leaderboard, with a bar chart and its leader
history."""

from __future__ import annotations

from typing import Any

from litestar import Request, Response, get
from litestar.params import FromPath

from projections import queries
from projections.views import RunView
from service.app import groups
from service.dossier import short_id
from service.web import present
from service.web.caching import settled
from service.web.charts import bar_chart
from service.web.deps import ReaderDep
from service.web.pages.render import html
from service.web.params import AsOf, as_of
from service.web.reads import Reader

__all__ = ["group_page"]


def _label(view: RunView) -> str:
    return view.implementation or view.title or view.name


@get("/groups/{key:str}", include_in_schema=False, sync_to_thread=True)
def group_page(
    request: Request[Any, Any, Any], reader: ReaderDep, key: FromPath[str], as_of_text: AsOf = None
) -> Response[bytes]:
    """A comparison group's leaderboard: ranked runs, a bar chart and the leader history."""
    at = as_of(reader, as_of_text)
    urls = present.Urls(at)
    group, ranked = groups.standing(reader.conn, key, at)
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
        view = by_digest.get(digest or "") or (
            queries.run_view(reader.conn, digest, at) if digest else None
        )
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
        for lc in groups.leader_history(reader.conn, key, at)
    ]
    heading, subtitle = _heading(reader, key, ranked[0][1] if ranked else None, at)
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
    return html(request, "group.html", context, pinned=settled(reader, as_of_text, at))


def _heading(
    reader: Reader, key: str, first: RunView | None, at: int | None
) -> tuple[str, str | None]:
    """The group named by what its leader runs (operation, hardware) and on what (workload)."""
    if first is None:
        return "Comparison group " + short_id(key), None

    def title(digest: str | None) -> Any:
        body = queries.manifest(reader.conn, digest, at) if digest else None
        return (body or {}).get("metadata", {}).get("title")

    name = title(first.operationDigest) or first.benchmark or first.name
    heading = f"{name} on {first.hardware}" if first.hardware else str(name)
    return heading, title(first.workloadDigest)
