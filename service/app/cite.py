"""Citing a run: its permalink (the digest form, ``/runs/sha256:<hex>``, which always serves that
exact version), its digest, the access instant and the evidence level at access, in the formats
people paste (``service.app.citeformats``) or as a receipt the log's key signs
(``service.receipts``), which anyone checks offline with the log's public key alone."""

from __future__ import annotations

import sqlite3
from datetime import UTC, date, datetime
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

__all__ = [
    "FORMATS",
    "MEDIA",
    "Format",
    "citable",
    "citation",
    "citation_receipt",
    "permalink",
    "rendered",
]

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
    item = citable(
        title=view.title or view.name,
        digest=digest,
        source=names.get(view.source, view.source),
        issued=view.publishedAt or view.observedAt,
        evidence_level=view.evidenceLevel,
        accessed=ledger.clock(),
        base=base,
    )
    return rendered(item, fmt), MEDIA[fmt]


MEDIA = {
    "text": "text/plain; charset=utf-8",
    "bibtex": "application/x-bibtex; charset=utf-8",
    "biblatex": "application/x-bibtex; charset=utf-8",
    "csl-json": "application/vnd.citationstyles.csl+json",
    "receipt": "text/plain; charset=utf-8",
}


def citable(
    *,
    title: str,
    digest: str,
    source: str,
    issued: str | None,
    evidence_level: str,
    accessed: datetime,
    base: str,
) -> citeformats.Citable:
    """What a citation of the run ``digest`` says (``issued``: an RFC 3339 instant or date)."""
    day = (issued or "")[:10]
    return citeformats.Citable(
        title=title,
        permalink=permalink(base, digest),
        short_link=f"{base.rstrip('/')}/runs/{digest[7:19]}",
        run_digest=digest,
        accessed=accessed.astimezone(UTC),
        evidence_level=evidence_level,
        issued=date.fromisoformat(day) if len(day) == 10 else None,
        source=source,
    )


def rendered(item: citeformats.Citable, fmt: str) -> bytes:
    """``item`` in the format ``fmt`` (any of ``FORMATS`` but the receipt), ending in a newline."""
    if fmt == "csl-json":
        return _JSON.encode([citeformats.csl_json(item)]) + b"\n"
    render = {
        "text": citeformats.text,
        "bibtex": citeformats.bibtex,
        "biblatex": citeformats.biblatex,
    }[fmt]
    return (render(item).rstrip("\n") + "\n").encode()
