"""Reads of a run's neighbours outside its comparison group: ranked runs of the same workload,
on the same hardware, measured by the same metric, that another comparison key (another
protocol, environment or correctness policy) keeps out of the run's ranking."""

from __future__ import annotations

from events.port import Session
from events.statements import Statement, sql
from projections.columns import column_text
from projections.queries._asof import LIVE, RUN, at
from projections.views import RunView

__all__ = ["BETTER_ELSEWHERE_CAP", "better_elsewhere"]

BETTER_ELSEWHERE_CAP = 20


def _better(live: str, better: str, order: str) -> Statement:
    return sql(
        f"SELECT view FROM p_runs WHERE workload_digest = ? AND hardware = ? AND {live}"
        " AND eligible = 1 AND group_key IS NOT NULL AND group_key != ?"
        f" AND primary_value {better} ? ORDER BY primary_value {order}, run_digest"
    )


_BETTER_NOW = {
    "lower": _better("valid_to IS NULL", "<", "ASC"),
    "higher": _better("valid_to IS NULL", ">", "DESC"),
}
_BETTER_THEN = {"lower": _better(LIVE, "<", "ASC"), "higher": _better(LIVE, ">", "DESC")}


def better_elsewhere(
    conn: Session,
    view: RunView,
    as_of: int | None = None,
    *,
    limit: int = BETTER_ELSEWHERE_CAP,
) -> list[RunView]:
    """Eligible runs of ``view``'s workload on its hardware, with its metric, in other
    comparison groups, whose primary value beats ``view``'s (lower or higher as the metric
    says); best first, at most ``limit`` (``BETTER_ELSEWHERE_CAP``). Empty when ``view`` has no workload, hardware,
    group or primary value."""
    if (
        view.workloadDigest is None
        or view.hardware is None
        or view.group_key is None
        or view.primaryValue is None
    ):
        return []
    p = at(as_of)
    # Now: the current rows, through the partial index on (workload, hardware) of current
    # runs; as of a size: the rows live then.
    args: tuple[int, ...] = ()
    if as_of is None:
        statement = _BETTER_NOW[view.direction]
    else:
        statement, args = _BETTER_THEN[view.direction], (p, p)
    rows = conn.execute(
        statement,
        (
            column_text(view.workloadDigest),
            column_text(view.hardware),
            *args,
            column_text(view.group_key),
            view.primaryValue,
        ),
    )
    out = []
    for (blob,) in rows:
        other = RUN.decode(blob)
        if other.metricKey == view.metricKey and other.kind == view.kind:
            out.append(other)
            if len(out) == limit:
                break
    return out
