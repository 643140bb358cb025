"""Reads of the log in its public formats (README: the outputs outside verifiers rely on): the
signed checkpoint answering ``asOf``, entries as base64 of their exact leaf bytes, and RFC 6962
inclusion and consistency proofs. Reads go through a ``LogReader``; only signing a checkpoint
for a log that has outgrown its latest needs the ledger (its store and the log key)."""

from __future__ import annotations

from base64 import b64encode
from collections.abc import Iterator
from typing import NamedTuple

import msgspec

from events.errors import ProofError
from events.port import EntryHeader, LogReader, SignedCheckpoint
from service.core.logs import OpenedLog
from service.errors import NotFound, UsageError

__all__ = [
    "PAGE_LIMIT",
    "ConsistencyProof",
    "Entries",
    "LeafItem",
    "Overview",
    "Proof",
    "checkpoint",
    "consistency",
    "entries",
    "entries_page",
    "inclusion",
    "latest_checkpoint",
    "overview",
    "recent_entries",
]

PAGE_LIMIT = 1000
"""The most entries one page of ``entries_page`` holds."""


class Proof(msgspec.Struct, frozen=True):
    """RFC 6962 inclusion proof of entry ``index`` in the tree of ``treeSize`` (base64 hashes)."""

    index: int
    treeSize: int
    hashes: list[str]


class ConsistencyProof(msgspec.Struct, frozen=True):
    """RFC 6962 consistency proof from ``oldSize`` to ``newSize`` entries (base64 hashes)."""

    oldSize: int
    newSize: int
    hashes: list[str]


class LeafItem(msgspec.Struct, frozen=True):
    """One entry: its index and base64 of its exact leaf bytes."""

    index: int
    leaf: str


class Entries(msgspec.Struct, frozen=True, omit_defaults=True):
    """A page of entries, read against the tree of ``treeSize`` entries; ``next``, present only
    when the page stopped at ``PAGE_LIMIT`` short of what was asked, is the link to the rest."""

    entries: list[LeafItem]
    treeSize: int
    next: str | None = None


class Overview(NamedTuple):
    """The log as an auditor starts from: its origin, its size, the signed checkpoint answering
    that size (None if none is signed at or below it), the verifier key of checkpoints, and the
    headers of the latest entries, newest first."""

    origin: str
    size: int
    checkpoint: SignedCheckpoint | None
    vkey: str
    entries: list[EntryHeader]


def latest_checkpoint(ledger: OpenedLog, *, log: LogReader | None = None) -> SignedCheckpoint:
    """The latest signed checkpoint, covering every committed entry: signed on the spot if the
    log has outgrown the latest one (another process appended, or none was signed yet). A
    mirror signs nothing: it answers the origin's note it took last, byte for byte (an import
    commits the entries and that note together, so it covers them).

    With ``log`` (a read-only handle: a server's reads), the usual answer is read there, and
    never waits for the writer: every commit signs its checkpoint in its own transaction, so
    the latest one read in one snapshot covers that snapshot. Only a log that another writer
    grew without signing goes to the store, to sign.

    Raises:
        NotFound: a mirror that holds no checkpoint (it cannot happen after an import).
    """
    store = ledger.store
    if ledger.mirror is not None:
        store.refresh()
        taken = store.latest_checkpoint()
        if taken is None:
            raise NotFound(f"the mirror of {ledger.mirror.origin} holds no checkpoint yet")
        return taken
    if log is not None:
        size = log.refresh()
        latest = log.latest_checkpoint()
        if latest is not None and latest.size == size:
            return latest
        # A commit between the two reads, or a log grown unsigned: decided under the lock.
        return store.publish_checkpoint(ledger.writer().signers.sign_checkpoint, ledger.clock())
    with store.snapshot():  # under the store's lock: never another thread's open transaction
        size = store.refresh()
        latest = store.latest_checkpoint()
    if latest is None or latest.size != size:
        latest = store.publish_checkpoint(ledger.writer().signers.sign_checkpoint, ledger.clock())
    return latest


def checkpoint(
    ledger: OpenedLog, as_of: int | None, *, log: LogReader | None = None
) -> SignedCheckpoint | None:
    """The signed checkpoint that answers ``as_of``: now, the latest (``latest_checkpoint``); for
    a past size, the latest signed at or below it, read from ``log`` (default: the ledger's
    store), or None if there is none."""
    if as_of is None:
        return latest_checkpoint(ledger, log=log)
    return (ledger.store if log is None else log).checkpoint_at_or_below(as_of)


def overview(
    ledger: OpenedLog, log: LogReader, as_of: int | None, *, size: int, recent: int = 20
) -> Overview:
    """The log as of ``as_of`` (now: ``size`` entries, and the latest checkpoint, signed on the
    spot if the log has outgrown it), with its last ``recent`` entries."""
    found = checkpoint(ledger, as_of, log=log)
    at = size if as_of is None else as_of
    return Overview(log.origin, at, found, ledger.vkey, recent_entries(log, at, recent))


def entries(
    log: LogReader, start: int = 0, end: int | None = None, *, limit: int | None = None
) -> Iterator[LeafItem]:
    """Entries ``start <= index < end`` (default: to the end), at most ``limit``."""
    if limit is not None:
        end = start + limit if end is None else min(end, start + limit)
    for seq, leaf in log.leaves(start, end):
        yield LeafItem(seq, b64encode(leaf).decode())


def entries_page(log: LogReader, start: int, end: int | None, *, size: int) -> Entries:
    """Entries ``start <= index < end`` of the tree of ``size`` entries (``end`` defaults to
    ``size``, and stops there), at most ``PAGE_LIMIT``; if more were asked, ``next`` links to
    the rest (``start`` after the last one, ``end`` as asked, at most ``size``: the same tree).

    Raises:
        UsageError: ``start`` is after ``end``, or beyond the tree (``details``: ``parameter``).
    """
    if end is not None and start > end:
        raise UsageError(
            f"start ({start}) must be at most end ({end}): entries start <= index < end",
            parameter="start",
        )
    if start > size:
        raise UsageError(
            f"start ({start}) is beyond the tree of {size} entries: start is at most treeSize",
            parameter="start",
        )
    stop = size if end is None else min(end, size)
    items = list(entries(log, start, stop, limit=PAGE_LIMIT))
    after = start + len(items)
    more = f"/v1/log/entries?start={after}&end={stop}" if after < stop else None
    return Entries(items, size, more)


def recent_entries(log: LogReader, size: int, count: int = 20) -> list[EntryHeader]:
    """The headers of the last ``count`` entries of the tree of ``size`` entries, newest first."""
    return list(reversed(list(log.headers(max(0, size - count), size))))


def _base64(hashes: list[bytes]) -> list[str]:
    return [b64encode(h).decode() for h in hashes]


def inclusion(log: LogReader, index: int, size: int) -> Proof:
    """The inclusion proof of entry ``index`` in the tree of ``size`` entries.

    Raises:
        UsageError: no such proof (``index`` not below ``size``...).
        LogError: the log has fewer than ``size`` entries.
    """
    try:
        hashes = log.inclusion_proof(index, size)
    except ProofError as exc:
        raise UsageError(exc.detail) from None
    return Proof(index, size, _base64(hashes))


def consistency(log: LogReader, old: int, new: int) -> ConsistencyProof:
    """The consistency proof from ``old`` to ``new`` entries.

    Raises:
        UsageError: no such proof (``old`` zero or beyond ``new``...).
        LogError: the log has fewer than ``new`` entries.
    """
    try:
        hashes = log.consistency_proof(old, new)
    except ProofError as exc:
        raise UsageError(exc.detail) from None
    return ConsistencyProof(old, new, _base64(hashes))
