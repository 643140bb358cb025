"""Reads of what others said about a run: attestations (withdrawn or hidden ones marked as of
the size read) and reports (with their resolution once resolved), and the current state of one
attestation or report, which moderation checks before it writes.
A withdrawal and a hiding each keep their own reason (a hidden attestation is never listed)."""

from __future__ import annotations

from typing import Any

import msgspec

from events.port import Session
from events.statements import Statement, sql
from projections.columns import column_text
from projections.queries._asof import JSON, at

__all__ = [
    "Attestation",
    "AttestationState",
    "Report",
    "attestation_state",
    "attestations",
    "find_attestations",
    "find_report",
    "reports",
]

_ATTESTATION_STATE = sql(
    "SELECT id, run_digest, attester, withdrawn_at, hidden_at FROM p_attestations WHERE id = ?"
)


class Attestation(msgspec.Struct, frozen=True, omit_defaults=True):
    """An attestation posted on a run, at the position of its entry."""

    id: str
    runDigest: str
    attester: str
    predicateType: str
    predicate: dict[str, Any]
    position: int
    recordedAt: str
    withdrawn: bool = False
    withdrawalReason: str | None = None
    hidden: bool = False


_COLUMNS = (
    "id, run_digest, attester, predicate_type, predicate, valid_from, recorded_at,"
    " withdrawn_at, hidden_at, withdrawn_reason"
)


_ATTESTATIONS = sql(
    f"SELECT {_COLUMNS} FROM p_attestations WHERE run_digest = ? AND valid_from <= ?"
    " ORDER BY valid_from"
)
# Each filter a query of ``find_attestations`` may add, by its argument.
_FILTERS = {
    "attestation_id": " AND id = ?",
    "subject": " AND run_digest = ?",
    "kind": " AND predicate_kind = ?",
    "attester": " AND attester = ?",
}
_FIND = sql(
    f"SELECT {_COLUMNS} FROM p_attestations"
    " WHERE valid_from <= ? AND (hidden_at IS NULL OR hidden_at > ?) AND valid_from > ?{filters}"
    " ORDER BY valid_from LIMIT ?"
)
_FOUND: dict[tuple[str, ...], Statement] = {}


def _find(filters: tuple[str, ...]) -> Statement:
    """``_FIND`` with ``filters`` (names of ``_FILTERS``), kept by them."""
    made = _FOUND.get(filters)
    if made is None:
        made = _FOUND[filters] = _FIND.format(filters="".join(_FILTERS[f] for f in filters))
    return made


def _attestation(row: tuple[Any, ...], p: int) -> Attestation:
    """The attestation of a ``_COLUMNS`` row as of size ``p``."""
    withdrawn_at, hidden_at, reason = row[7], row[8], row[9]
    withdrawn = withdrawn_at is not None and withdrawn_at <= p
    hidden = hidden_at is not None and hidden_at <= p
    return Attestation(
        row[0],
        row[1],
        row[2],
        row[3],
        JSON.decode(row[4]),
        row[5] - 1,
        row[6],
        withdrawn,
        reason if withdrawn else None,
        hidden,
    )


def attestations(
    conn: Session, digest: str, as_of: int | None = None, *, include_hidden: bool = False
) -> list[Attestation]:
    """The attestations on a run at ``as_of``, oldest first; hidden ones only if asked."""
    p = at(as_of)
    rows = conn.execute(_ATTESTATIONS, (digest, p))
    found = [_attestation(row, p) for row in rows]
    return [a for a in found if include_hidden or not a.hidden]


def find_attestations(
    conn: Session,
    as_of: int | None = None,
    *,
    attestation_id: str | None = None,
    subject: str | None = None,
    kind: str | None = None,
    attester: str | None = None,
    after: int | None = None,
    limit: int = 100,
) -> list[Attestation]:
    """Attestations on any run at ``as_of``, by position (oldest first), hidden ones left out:
    the one with payload digest ``attestation_id``, those on run ``subject``, of predicate ``kind``, by key
    ``attester``; at most ``limit``, after the position ``after`` (a keyset cursor)."""
    p = at(as_of)
    filters: list[str] = []
    args: list[object] = [p, p, -1 if after is None else after + 1]
    for name, value in (
        ("attestation_id", attestation_id),
        ("subject", subject),
        ("kind", kind),
        ("attester", attester),
    ):
        if value is not None:
            filters.append(name)
            args.append(column_text(value))
    rows = conn.execute(_find(tuple(filters)), (*args, limit))
    return [_attestation(row, p) for row in rows]


class AttestationState(msgspec.Struct, frozen=True):
    """An attestation as it stands now, whatever it says: who posted it, about which run, and
    whether it was withdrawn or hidden."""

    id: str
    runDigest: str
    attester: str
    withdrawn: bool
    hidden: bool


def attestation_state(conn: Session, attestation_id: str) -> AttestationState | None:
    """The attestation with payload digest ``attestation_id`` now (hidden ones too), if any."""
    row = conn.execute(
        _ATTESTATION_STATE,
        (attestation_id,),
    ).fetchone()
    if row is None:
        return None
    return AttestationState(row[0], row[1], row[2], row[3] is not None, row[4] is not None)


class Report(msgspec.Struct, frozen=True, omit_defaults=True):
    """A report filed on a run, with its resolution once resolved."""

    id: str
    runDigest: str
    category: str
    text: str
    position: int
    recordedAt: str
    resolution: str | None = None
    note: str | None = None


_REPORT_COLUMNS = (
    "id, run_digest, category, text, valid_from, recorded_at, resolved_at, resolution, note"
)


_REPORTS = sql(
    f"SELECT {_REPORT_COLUMNS} FROM p_reports WHERE run_digest = ? AND valid_from <= ?"
    " ORDER BY valid_from"
)
_REPORT = sql(f"SELECT {_REPORT_COLUMNS} FROM p_reports WHERE id = ?")


def _report(row: tuple[Any, ...], p: int) -> Report:
    """The report of a ``_REPORT_COLUMNS`` row as of size ``p``."""
    resolved = row[6] is not None and row[6] <= p
    return Report(
        row[0],
        row[1],
        row[2],
        row[3],
        row[4] - 1,
        row[5],
        row[7] if resolved else None,
        row[8] if resolved else None,
    )


def reports(conn: Session, digest: str, as_of: int | None = None) -> list[Report]:
    """The reports filed on a run at ``as_of``, oldest first."""
    p = at(as_of)
    rows = conn.execute(_REPORTS, (digest, p))
    return [_report(row, p) for row in rows]


def find_report(conn: Session, report_id: str) -> Report | None:
    """The report with payload digest ``report_id`` now (with its resolution), if any."""
    row = conn.execute(_REPORT, (report_id,)).fetchone()
    return None if row is None else _report(row, at(None))
