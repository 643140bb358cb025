"""Citing a run: its permalink (the digest form, ``/runs/sha256:<hex>``, which always serves that
exact version), its digest, the access instant and the evidence level at access, in the formats
people paste (``service.app.citeformats``) or as a receipt the log's key signs
(``verifier.receipts``), which anyone checks offline with the log's public key alone."""

from __future__ import annotations

import base64
import re
from datetime import UTC, date, datetime
from typing import Literal, get_args
from urllib.parse import urlsplit

import msgspec

from events.entries import format_instant
from events.port import Session
from events.stores.sqlbase import SqlLog
from keys.notekeys import parse_vkey
from projections import queries
from projections.errors import AmbiguousRun, UnknownRun
from service.app import citeformats
from service.core.logs import OpenedLog
from service.errors import UsageError
from verifier.receipts import ReceiptInvalid, make_receipt, verify_receipt

__all__ = [
    "FORMATS",
    "MEDIA",
    "CheckedCitation",
    "Format",
    "OnlineCheck",
    "SinceAccess",
    "check_citation",
    "citable",
    "citation",
    "citation_receipt",
    "permalink",
    "rendered",
    "verify_online",
]

Format = Literal["text", "bibtex", "biblatex", "csl-json", "receipt"]
FORMATS: tuple[str, ...] = get_args(Format)
_DAY = re.compile(r"\d{4}-\d\d-\d\d\Z")
_JSON = msgspec.json.Encoder()


def _permalink_base(base: str) -> bool:
    """Whether ``base`` (a request's address, or the configured public URL) makes permalinks."""
    try:
        parts = urlsplit(base)
        return parts.scheme in ("http", "https") and bool(parts.hostname) and base.isprintable()
    except ValueError:
        return False


def permalink(base: str, digest: str) -> str:
    """The permalink of the exact version ``digest``: built from the digest, never from a
    request's path."""
    return f"{base.rstrip('/')}/runs/{digest}"


def citation_receipt(
    ledger: OpenedLog, conn: Session, log: SqlLog, ref: str, *, base: str
) -> bytes:
    """A receipt for the run ``ref`` names, as the log stands now (its latest checkpoint): the
    statement signed by the log's key, the checkpoint, the run's ``run.ingested`` entry and its
    inclusion proof.

    Raises:
        UnknownRun, AmbiguousRun: ``ref``.
        UsageError: no checkpoint covers the run's entry yet.
        MirrorReadOnly: the ledger is a mirror, which holds no log key to sign with.
    """
    signers = ledger.writer(
        "it holds no log key, so it signs no citation receipts; ask the origin log for one "
        "(the other citation formats need no signature)"
    ).signers
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
        signers.log,
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
    ledger: OpenedLog, conn: Session, log: SqlLog, ref: str, fmt: str, *, base: str
) -> tuple[bytes, str]:
    """The citation of the run ``ref`` names in the format ``fmt``, and its media type.

    Raises:
        UsageError: ``fmt`` is not one of ``FORMATS``.
        UnknownRun, AmbiguousRun: ``ref``.
    """
    if fmt not in FORMATS:
        raise UsageError(f"format must be one of {', '.join(FORMATS)}", format=fmt)
    if not _permalink_base(base):
        raise UsageError(f"{base!r} makes no permalink: the server needs its public URL", base=base)
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


class CheckedCitation(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """Whether a plain citation (a record, a digest, an access date) holds: the digest was a
    version of the record the reference names, in the log by the end of the access day; with
    the digest's ``run.ingested`` entry and its inclusion proof in the latest checkpoint."""

    valid: bool
    run: str
    digest: str
    accessed: str
    reason: str
    entryIndex: int | None = None
    entry: str | None = None  # the leaf bytes, base64: the proof's leaf hash is checkable
    recordedAt: str | None = None
    treeSize: int | None = None
    checkpoint: str | None = None
    inclusionProof: list[str] | None = None


def check_citation(
    conn: Session, log: SqlLog, ref: str, digest: str, accessed: str
) -> CheckedCitation:
    """Check a citation as pasted from a paper: ``ref`` (any run reference), ``digest``
    (``sha256:<hex>``) and ``accessed`` (a date ``YYYY-MM-DD`` or an RFC 3339 instant).

    Raises:
        UsageError: ``digest`` or ``accessed`` is malformed.
    """
    if not (digest.startswith("sha256:") and len(digest) == 71):
        raise UsageError("digest must be sha256:<64 hex>", digest=digest)
    day = accessed
    try:
        if not _DAY.match(day):
            raise ValueError(day)
        date.fromisoformat(day)
    except ValueError:
        raise UsageError("accessed must be a date YYYY-MM-DD", accessed=accessed) from None
    size = log.size_at_instant(f"{day}T23:59:59.999Z")  # what the log held by that day's end
    index = queries.ingest_position(conn, digest)
    if index is None or index >= size:
        return CheckedCitation(
            valid=False,
            run=ref,
            digest=digest,
            accessed=day,
            reason="the log held no such version by that day",
        )
    named = _names(conn, ref, digest, size)
    headers = log.headers_at([index])
    checkpoint = log.latest_checkpoint()
    assert checkpoint is not None  # noqa: S101 - an entry is held, so a checkpoint covers it
    proof = log.inclusion_proof(index, checkpoint.size)
    return CheckedCitation(
        valid=named,
        run=ref,
        digest=digest,
        accessed=day,
        reason="the digest was a version of this record on that day"
        if named
        else "the log held this version, but the reference named another record that day",
        entryIndex=index,
        entry=base64.b64encode(log.leaf(index) or b"").decode(),
        recordedAt=headers[index].recorded_at,
        treeSize=checkpoint.size,
        checkpoint=checkpoint.note.decode(),
        inclusionProof=[base64.b64encode(h).decode() for h in proof],
    )


def _names(conn: Session, ref: str, digest: str, size: int) -> bool:
    """Whether ``ref`` named the record ``digest`` is a version of, at tree size ``size``: it
    resolves to it, or to a version that supersedes it, or it is one of its aliases."""
    if ref in (digest, digest[7:]) or (len(ref) >= 12 and digest[7:].startswith(ref)):
        return True
    if ref in queries.aliases_of(conn, digest, size):
        return True
    try:
        named = queries.resolve_run(conn, ref, size)
    except (UnknownRun, AmbiguousRun):
        return False
    seen, current = set(), digest
    while current not in seen:  # follow the corrections of ``digest`` up to that day
        if current == named:
            return True
        seen.add(current)
        view = queries.run_view(conn, current, size)
        if view is None or view.supersededBy is None:
            return False
        current = view.supersededBy
    return False


class SinceAccess(msgspec.Struct, frozen=True, omit_defaults=True):
    """What changed for the cited run between the receipt's checkpoint and now."""

    evidenceLevelThen: str
    evidenceLevelNow: str
    attestationsAdded: int
    reportsAdded: int
    supersededBy: str | None = None  # the successor's permalink
    retracted: str | None = None  # the reason


class OnlineCheck(msgspec.Struct, frozen=True):
    """A receipt checked by the log that issued it: the offline checks passed here too, the
    log's current signed checkpoint, the consistency proof from the receipt's checkpoint to it
    (base64 hashes; empty when the log has not grown), and what changed since access."""

    summary: str
    oldSize: int
    newSize: int
    checkpoint: str
    consistencyProof: list[str]
    since: SinceAccess


def verify_online(
    ledger: OpenedLog, conn: Session, log: SqlLog, body: bytes, *, base: str
) -> OnlineCheck:
    """Check a receipt against this log: offline checks with its own key, then consistency from
    the receipt's checkpoint to the latest, and what changed for the run since.

    Raises:
        ReceiptInvalid: the receipt does not verify against this log (its ``check`` says why).
    """
    verified = verify_receipt(body, parse_vkey(ledger.vkey))
    statement = verified.statement
    latest = log.latest_checkpoint()
    assert latest is not None  # noqa: S101 - the receipt's checkpoint is this log's
    old, new = statement.treeSize, latest.size
    if old > new or base64.b64encode(log.root(old)).decode() != statement.root:
        raise ReceiptInvalid("consistency", "the receipt's checkpoint is not in this log's past")
    proof = log.consistency_proof(old, new) if 0 < old < new else []
    digest = statement.runDigest
    now = queries.run_view(conn, digest)
    assert now is not None  # noqa: S101 - the receipt proved the run is in this log
    then_attestations = len(queries.attestations(conn, digest, old))
    then_reports = len(queries.reports(conn, digest, old))
    since = SinceAccess(
        evidenceLevelThen=statement.evidenceLevel,
        evidenceLevelNow=now.evidenceLevel,
        attestationsAdded=len(queries.attestations(conn, digest)) - then_attestations,
        reportsAdded=len(queries.reports(conn, digest)) - then_reports,
        supersededBy=permalink(base, now.supersededBy) if now.supersededBy else None,
        retracted=now.retractedReason,
    )
    return OnlineCheck(
        summary=verified.summary(),
        oldSize=old,
        newSize=new,
        checkpoint=latest.note.decode(),
        consistencyProof=[base64.b64encode(h).decode() for h in proof],
        since=since,
    )
