"""Citing a run: its permalink (the digest form, ``/runs/sha256:<hex>``, which always serves that
exact version), its digest, the access instant and the evidence level at access, in the formats
people paste (``service.app.citeformats``) or as a receipt the log's key signs
(``service.receipts``), which anyone checks offline with the log's public key alone."""

from __future__ import annotations

import sqlite3
from datetime import UTC, date
from typing import Literal, get_args

import msgspec

from events.entries import format_instant
from events.stores.sqlite import SqliteLog
from projections import queries
from projections.errors import UnknownRun
from service.app import citeformats
from service.errors import UsageError
from service.ledger import Ledger
from service.receipts import make_receipt

__all__ = ["FORMATS", "Format", "citation", "citation_receipt", "permalink"]

Format = Literal["text", "bibtex", "biblatex", "csl-json", "receipt"]
FORMATS: tuple[str, ...] = get_args(Format)
_JSON = msgspec.json.Encoder()


def permalink(base: str, digest: str) -> str:
    """The permalink of the exact version ``digest``: built from the digest, never from a
    request's path."""
    return f"{base.rstrip('/')}/runs/{digest}"


def citation_receipt(
    ledger: Ledger, conn: sqlite3.Connection, log: SqliteLog, ref: str, *, base: str
) -> bytes:
    """A receipt for the run ``ref`` names, as the log stands now (its latest checkpoint): the
    statement signed by the log's key, the checkpoint, the run's ``run.ingested`` entry and its
    inclusion proof.

    Raises:
        UnknownRun, AmbiguousRun: ``ref``.
        UsageError: no checkpoint covers the run's entry yet.
    """
    digest = queries.resolve_run(conn, ref)
    index = queries.ingest_position(conn, digest)
    checkpoint = log.latest_checkpoint()
    if index is None:
        raise UnknownRun(f"no run matches {ref!r}", reference=ref)
    if checkpoint is None or checkpoint.size <= index:
        raise UsageError("no signed checkpoint covers the run's entry yet; try again")
    view = queries.run_view(conn, digest, checkpoint.size)
    leaf = log.leaf(index)
    if view is None or leaf is None:
        raise UnknownRun(f"no run matches {ref!r}", reference=ref)
    return make_receipt(
        ledger.signers.log,
        origin=log.origin,
        permalink=permalink(base, digest),
        run_digest=digest,
        accessed=format_instant(ledger.clock()),
        evidence_level=view.evidenceLevel,
        checkpoint=checkpoint.note,
        tree_size=checkpoint.size,
        root=checkpoint.root,
        entry_index=index,
        entry=leaf,
        proof=log.inclusion_proof(index, checkpoint.size),
    )


def citation(
    ledger: Ledger, conn: sqlite3.Connection, log: SqliteLog, ref: str, fmt: str, *, base: str
) -> tuple[bytes, str]:
    """The citation of the run ``ref`` names in the format ``fmt``, and its media type.

    Raises:
        UsageError: ``fmt`` is not one of ``FORMATS``.
        UnknownRun, AmbiguousRun: ``ref``.
    """
    if fmt not in FORMATS:
        raise UsageError(f"format must be one of {', '.join(FORMATS)}", format=fmt)
    if fmt == "receipt":
        return citation_receipt(ledger, conn, log, ref, base=base), "text/plain; charset=utf-8"
    digest = queries.resolve_run(conn, ref)
    view = queries.run_view(conn, digest)
    if view is None:
        raise UnknownRun(f"no run matches {ref!r}", reference=ref)
    names = {s.source: s.name for s in queries.sources(conn, None)}
    observed = (view.publishedAt or view.observedAt)[:10]
    item = citeformats.Citable(
        title=view.title or view.name,
        permalink=permalink(base, digest),
        short_link=f"{base.rstrip('/')}/runs/{digest[7:19]}",
        run_digest=digest,
        accessed=ledger.clock().astimezone(UTC),
        evidence_level=view.evidenceLevel,
        issued=date.fromisoformat(observed) if len(observed) == 10 else None,
        source=names.get(view.source, view.source),
    )
    if fmt == "csl-json":
        return _JSON.encode([citeformats.csl_json(item)]), "application/vnd.citationstyles.csl+json"
    render = {
        "text": citeformats.text,
        "bibtex": citeformats.bibtex,
        "biblatex": citeformats.biblatex,
    }[fmt]
    media = "text/plain; charset=utf-8" if fmt == "text" else "application/x-bibtex; charset=utf-8"
    return (render(item).rstrip("\n") + "\n").encode(), media
