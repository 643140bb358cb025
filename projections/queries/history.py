"""Reads of what touched a run besides its own view's versions (``runs.run_versions``): the
entries the small projections keep by run (attestations and their withdrawal or hiding, reports
and their resolution, rerun requests, claims and results, notarized citations), the supersession
of an earlier run by it, and its standing in its group (its rank and the group's leader) as each
entry changed it.

Every read answers as of a tree size from positions the projections keep (``valid_from``,
``withdrawn_at``, ...): index lookups by run, by group or by row key, never a replay. A
``Touch`` names the entry by its position; the log gives its type, time and signer.
"""

from __future__ import annotations

from collections import Counter

import msgspec

from events.port import Session
from events.statements import sql
from projections.queries._asof import JSON, RUN, at

__all__ = ["Touch", "run_touches", "standing_changes", "successor_touches"]

_ATTESTATION_TOUCHES = sql(
    "SELECT id, attester, predicate, valid_from, withdrawn_at, withdrawn_reason, hidden_at,"
    " hidden_reason FROM p_attestations WHERE run_digest = ? AND valid_from <= ?"
)
_REPORT_TOUCHES = sql(
    "SELECT id, category, valid_from, resolved_at, resolution, note FROM p_reports"
    " WHERE run_digest = ? AND valid_from <= ?"
)
_RERUN_TOUCHES = sql(
    "SELECT id, kind, actor, valid_from, request_id, body FROM p_reruns"
    " WHERE run_digest = ? AND valid_from <= ?"
)
_RANK_CHANGES = sql(
    "SELECT run_digest, valid_from, valid_to, primary_value FROM p_runs"
    " WHERE group_key = ? AND eligible = 1 AND valid_from <= ?"
)
_LEADER_CHANGES = sql(
    "SELECT valid_from, leader FROM p_groups WHERE group_key = ? AND valid_from <= ?"
    " ORDER BY valid_from"
)
_SUCCESSOR_TOUCHES = sql(
    "SELECT valid_from, view FROM p_runs WHERE run_digest = ? AND valid_from <= ?"
    " ORDER BY valid_from"
)
_CITATION_TOUCHES = sql(
    "SELECT id, accessed_at, valid_from FROM p_citations WHERE run_digest = ? AND valid_from <= ?"
)
_SUCCESSOR_TOUCHES_2 = sql(
    "SELECT run_digest FROM p_rowkeys WHERE row_key = ? AND valid_from <= ? AND run_digest != ?"
)
_STANDING_CHANGES = sql(
    "SELECT valid_from, valid_to, group_key, direction FROM p_runs"
    " WHERE run_digest = ? AND eligible = 1 AND valid_from <= ? ORDER BY valid_from"
)


class Touch(msgspec.Struct, frozen=True, omit_defaults=True):
    """What the entry at ``position`` did to a run, as the projections keep it.

    ``kind`` is one of ``attestation``, ``withdrawal``, ``hiding``, ``report``, ``resolution``,
    ``rerun-request``, ``rerun-claim``, ``rerun-result``, ``citation``, ``supersedes``,
    ``rank`` and ``leader``. ``ref`` is the id of the attestation, report or rerun request it
    concerns; ``detail`` says what (a predicate's kind, a report's category, a resolution, a
    reason) and ``note`` adds to it; ``actor`` is the key the projections name (attester, worker,
    rerunner); ``other`` another run (the one it supersedes). A ``rank`` touch holds the run's
    dense rank ``before`` and ``after`` the entry (None: not ranked); a ``leader`` touch the
    group's ``leader`` after it and ``previousLeader`` before it."""

    position: int
    kind: str
    ref: str | None = None
    detail: str | None = None
    note: str | None = None
    actor: str | None = None
    other: str | None = None
    before: int | None = None
    after: int | None = None
    leader: str | None = None
    previousLeader: str | None = None


def _attestation_touches(conn: Session, digest: str, p: int) -> list[Touch]:
    out: list[Touch] = []
    for row in conn.execute(
        _ATTESTATION_TOUCHES,
        (digest, p),
    ):
        ident, attester, predicate, since, withdrawn, why_withdrawn, hidden, why_hidden = row
        kind = JSON.decode(predicate).get("kind")
        detail = kind if isinstance(kind, str) else None
        out.append(Touch(since - 1, "attestation", ref=ident, detail=detail, actor=attester))
        if withdrawn is not None and withdrawn <= p:
            out.append(Touch(withdrawn - 1, "withdrawal", ref=ident, detail=why_withdrawn))
        if hidden is not None and hidden <= p:
            out.append(Touch(hidden - 1, "hiding", ref=ident, detail=why_hidden))
    return out


def _report_touches(conn: Session, digest: str, p: int) -> list[Touch]:
    out: list[Touch] = []
    for ident, category, since, resolved, resolution, note in conn.execute(
        _REPORT_TOUCHES,
        (digest, p),
    ):
        out.append(Touch(since - 1, "report", ref=ident, detail=category))
        if resolved is not None and resolved <= p:
            out.append(Touch(resolved - 1, "resolution", ref=ident, detail=resolution, note=note))
    return out


_RERUN_KINDS = {
    "requested": "rerun-request",
    "claimed": "rerun-claim",
    "completed": "rerun-result",
}


def _rerun_touches(conn: Session, digest: str, p: int) -> list[Touch]:
    out: list[Touch] = []
    for ident, kind, actor, since, request, body in conn.execute(
        _RERUN_TOUCHES,
        (digest, p),
    ):
        if kind == "requested":
            reason = JSON.decode(body).get("reason")
            detail = reason if isinstance(reason, str) else None
            out.append(Touch(since - 1, "rerun-request", ref=ident, detail=detail))
        else:
            out.append(Touch(since - 1, _RERUN_KINDS[kind], ref=request, actor=actor))
    return out


def _citation_touches(conn: Session, digest: str, p: int) -> list[Touch]:
    return [
        Touch(since - 1, "citation", ref=ident, detail=accessed)
        for ident, accessed, since in conn.execute(
            _CITATION_TOUCHES,
            (digest, p),
        )
    ]


def run_touches(conn: Session, digest: str, as_of: int | None = None) -> list[Touch]:
    """The entries up to ``as_of`` that the attestation, report, rerun and citation projections
    keep about run ``digest`` (a withdrawal, hiding or resolution only once it applied), by
    position. A rerun claim of the first version, which names no run, is not among them."""
    p = at(as_of)
    found = [
        *_attestation_touches(conn, digest, p),
        *_report_touches(conn, digest, p),
        *_rerun_touches(conn, digest, p),
        *_citation_touches(conn, digest, p),
    ]
    return sorted(found, key=lambda t: t.position)


def successor_touches(
    conn: Session, digest: str, row_key: str | None, as_of: int | None = None
) -> list[Touch]:
    """The supersessions, up to ``as_of``, of earlier runs by run ``digest``: those of the runs
    of its source row ``row_key`` (the way an import supersedes a corrected row) that name it as
    their successor, each at the position of the entry that superseded it."""
    if row_key is None:
        return []
    p = at(as_of)
    rows = conn.execute(
        _SUCCESSOR_TOUCHES_2,
        (row_key, p, digest),
    ).fetchall()
    out: list[Touch] = []
    for (earlier,) in rows:
        for since, body in conn.execute(
            _SUCCESSOR_TOUCHES,
            (earlier, p),
        ):
            view = RUN.decode(body)
            if view.supersededBy == digest:
                out.append(
                    Touch(since - 1, "supersedes", other=earlier, detail=view.supersededReason)
                )
                break
    return sorted(out, key=lambda t: t.position)


def _live(since: int, until: int | None, size: int) -> bool:
    """Whether a version row valid from ``since`` to ``until`` is live at tree size ``size``."""
    return since <= size and (until is None or until > size)


def _rank_changes(conn: Session, digest: str, key: str, sign: float, p: int) -> list[Touch]:
    """The run's dense rank in group ``key`` after each entry that changed it, up to ``p``."""
    changes: dict[int, list[tuple[int, float, bool]]] = {}
    for run, since, until, value in conn.execute(
        _RANK_CHANGES,
        (key, p),
    ):
        mine = run == digest
        changes.setdefault(since, []).append((1, sign * value, mine))
        if until is not None and until <= p:
            changes.setdefault(until, []).append((-1, sign * value, mine))
    values: Counter[float] = Counter()
    out: list[Touch] = []
    own: float | None = None  # the run's value while it is ranked
    better = 0  # distinct values strictly better than ``own``
    rank: int | None = None
    for size in sorted(changes):
        moved = False
        # A version that replaces another at the same size: the old one leaves first.
        for delta, value, mine in sorted(changes[size], key=lambda c: c[0]):
            if mine:
                own, moved = (value if delta > 0 else None), True
            appeared = delta > 0 and values[value] == 0
            values[value] += delta
            vanished = delta < 0 and values[value] == 0
            if vanished:
                del values[value]
            if own is not None and value < own and (appeared or vanished):
                better += delta
        if moved and own is not None:
            better = sum(1 for value in values if value < own)
        now = better + 1 if own is not None else None
        if now != rank:
            out.append(Touch(size - 1, "rank", before=rank, after=now))
            rank = now
    return out


def _leader_changes(
    conn: Session, digest: str, key: str, ranked: list[tuple[int, int | None]], p: int
) -> list[Touch]:
    """The changes of group ``key``'s leader, up to ``p``, that the run lived through: those
    that made it or unmade it the leader, and any while it was ranked in the group (``ranked``:
    the ``(valid_from, valid_to)`` of its eligible versions in the group)."""
    out: list[Touch] = []
    previous: str | None = None
    for since, leader in conn.execute(
        _LEADER_CHANGES,
        (key, p),
    ):
        if leader == previous:
            continue
        member = any(_live(s, u, since) for s, u in ranked)
        if member or digest in (leader, previous):
            out.append(Touch(since - 1, "leader", leader=leader, previousLeader=previous))
        previous = leader
    return out


def standing_changes(conn: Session, digest: str, as_of: int | None = None) -> list[Touch]:
    """How the entries up to ``as_of`` moved run ``digest`` in each group it was ranked in:
    a ``rank`` touch wherever its dense rank changed (entering and leaving the ranking too),
    and a ``leader`` touch wherever the group's leader changed while it was ranked there, or
    to or from it; by position."""
    p = at(as_of)
    own = conn.execute(
        _STANDING_CHANGES,
        (digest, p),
    ).fetchall()
    out: list[Touch] = []
    for key in sorted({row[2] for row in own if row[2] is not None}):
        rows = [row for row in own if row[2] == key]
        sign = -1.0 if rows[-1][3] == "higher" else 1.0
        out.extend(_rank_changes(conn, digest, key, sign, p))
        ranked = [(row[0], row[1]) for row in rows]
        out.extend(_leader_changes(conn, digest, key, ranked, p))
    return sorted(out, key=lambda t: (t.position, t.kind))
