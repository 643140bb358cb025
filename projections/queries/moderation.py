"""Reads of what others said about a run: attestations (withdrawn or hidden ones marked as of
the size read) and reports (with their resolution once resolved)."""

from __future__ import annotations

import sqlite3
from typing import Any

import msgspec

from projections.queries._asof import JSON, at

__all__ = ["Attestation", "Report", "attestations", "find_attestations", "reports"]


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
    hidden: bool = False


def attestations(
    conn: sqlite3.Connection, digest: str, as_of: int | None = None, *, include_hidden: bool = False
) -> list[Attestation]:
    """The attestations on a run at ``as_of``, oldest first; hidden ones only if asked."""
    p = at(as_of)
    out = []
    for row in conn.execute(
        "SELECT id, run_digest, attester, predicate_type, predicate, valid_from, recorded_at, withdrawn_at, hidden_at"
        " FROM p_attestations WHERE run_digest = ? AND valid_from <= ? ORDER BY valid_from",
        (digest, p),
    ):
        withdrawn = row[7] is not None and row[7] <= p
        hidden = row[8] is not None and row[8] <= p
        if hidden and not include_hidden:
            continue
        out.append(
            Attestation(
                row[0],
                row[1],
                row[2],
                row[3],
                JSON.decode(row[4]),
                row[5] - 1,
                row[6],
                withdrawn,
                hidden,
            )
        )
    return out


def find_attestations(
    conn: sqlite3.Connection,
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
    where = ["valid_from <= ?", "(hidden_at IS NULL OR hidden_at > ?)", "valid_from > ?"]
    args: list[object] = [p, p, -1 if after is None else after + 1]
    for clause, value in (
        ("id = ?", attestation_id),
        ("run_digest = ?", subject),
        ("json_extract(CAST(predicate AS TEXT), '$.kind') = ?", kind),
        ("attester = ?", attester),
    ):
        if value is not None:
            where.append(clause)
            args.append(value)
    out = []
    for row in conn.execute(
        "SELECT id, run_digest, attester, predicate_type, predicate, valid_from, recorded_at, withdrawn_at"
        f" FROM p_attestations WHERE {' AND '.join(where)} ORDER BY valid_from LIMIT ?",
        (*args, limit),
    ):
        withdrawn = row[7] is not None and row[7] <= p
        out.append(
            Attestation(
                row[0], row[1], row[2], row[3], JSON.decode(row[4]), row[5] - 1, row[6], withdrawn
            )
        )
    return out


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


def reports(conn: sqlite3.Connection, digest: str, as_of: int | None = None) -> list[Report]:
    """The reports filed on a run at ``as_of``, oldest first."""
    p = at(as_of)
    out = []
    for row in conn.execute(
        "SELECT id, run_digest, category, text, valid_from, recorded_at, resolved_at, resolution, note"
        " FROM p_reports WHERE run_digest = ? AND valid_from <= ? ORDER BY valid_from",
        (digest, p),
    ):
        resolved = row[6] is not None and row[6] <= p
        out.append(
            Report(
                row[0],
                row[1],
                row[2],
                row[3],
                row[4] - 1,
                row[5],
                row[7] if resolved else None,
                row[8] if resolved else None,
            )
        )
    return out
