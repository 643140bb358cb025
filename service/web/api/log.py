"""``/v1/log``: the log in its public formats (README), for outside verifiers: the signed
checkpoint, the log's verifier key, entries as base64 of their exact leaf bytes, inclusion and
consistency proofs. Reads go through this thread's read-only handle on the log; only signing a
checkpoint for a log that has outgrown its latest takes the ledger's writer."""

from __future__ import annotations

from typing import Annotated

import msgspec
from litestar import get
from litestar.params import QueryParameter

from service.app import log
from service.errors import NotFound
from service.web.caching import Read, etag_of
from service.web.deps import LedgerDep, ReaderDep
from service.web.params import BAD_REQUEST, AsOf, answer, asked, document, problem

__all__ = ["HANDLERS"]

_ENC = msgspec.json.Encoder()
TEXT = "text/plain"


@get(
    "/v1/log/checkpoint",
    tags=["log"],
    media_type=TEXT,
    responses={
        200: document(TEXT, "The signed checkpoint note (C2SP tlog-checkpoint)"),
        **BAD_REQUEST,
        404: problem("No checkpoint at or below asOf"),
    },
)
async def log_checkpoint(reader: ReaderDep, ledger: LedgerDep, as_of_text: AsOf = None) -> Read:
    """The latest signed checkpoint note (C2SP tlog-checkpoint), covering every committed entry;
    with ``asOf``, the latest one signed for a tree size at or below it (404 if none)."""
    asked_for = asked(reader, as_of_text)
    found = log.checkpoint(ledger, asked_for.at, log=reader.log)
    if found is None:
        raise NotFound(f"no checkpoint was signed for a tree size at or below {asked_for.at}")
    return asked_for.read(found.note, media_type=TEXT)


@get(
    "/v1/log/key",
    tags=["log"],
    media_type=TEXT,
    responses={200: document(TEXT, "The log's verifier key (C2SP vkey)")},
)
async def log_key(ledger: LedgerDep) -> Read:
    """The log's verifier key: C2SP vkey ``<origin>+<keyhash>+<base64>`` (fixed for the life of
    the log)."""
    body = ledger.vkey.encode() + b"\n"
    return Read(body, etag_of(body), pinned=True, media_type=TEXT)


@get(
    "/v1/log/entries",
    tags=["log"],
    description=f"Entries `start <= index < end` (`end` defaults to the tree size and stops"
    f" there), base64 of their exact leaf bytes. A page holds at most {log.PAGE_LIMIT:,}"
    " entries: when it stops short of `end`, `next` links to the rest. `start` after `end`, or"
    " beyond the tree, is 400.",
    responses={
        **answer(
            log.Entries,
            f"The entries, base64 of their leaf bytes; at most {log.PAGE_LIMIT:,} a page"
            " (`next`: the link to the rest)",
        ),
        **BAD_REQUEST,
    },
)
async def log_entries(
    reader: ReaderDep,
    start: Annotated[int, QueryParameter(ge=0)] = 0,
    end: Annotated[int | None, QueryParameter(ge=0)] = None,
    as_of_text: AsOf = None,
) -> Read:
    """Entries ``start <= index < end`` of the log as of ``asOf`` (default: now): base64 of the
    exact leaf bytes. ``treeSize`` is the size they were read against; ``end`` defaults to it
    and stops there. A page holds at most 1,000 entries: when it stops short of ``end``,
    ``next`` is the link to the rest (absent otherwise). ``start`` after ``end``, or beyond the
    tree, is 400."""
    asked_for = asked(reader, as_of_text)
    body = _ENC.encode(log.entries_page(reader.log, start, end, size=asked_for.tree))
    # Leaves never change: a page whose size is fixed is fixed.
    return asked_for.read(body)


@get(
    "/v1/log/proof/inclusion",
    tags=["log"],
    responses={**answer(log.Proof, "The inclusion proof"), **BAD_REQUEST},
)
async def proof_inclusion(
    reader: ReaderDep,
    index: Annotated[int, QueryParameter(ge=0)],
    size: Annotated[int | None, QueryParameter(ge=1)] = None,
    as_of_text: AsOf = None,
) -> Read:
    """RFC 6962 inclusion proof of entry ``index`` in the tree of ``size`` (default: the size
    ``asOf`` names, or the whole log)."""
    asked_for = asked(reader, as_of_text)
    at = asked_for.at
    tree = size if size is not None else at if at is not None else reader.log.refresh()
    body = _ENC.encode(log.inclusion(reader.log, index, tree))
    return asked_for.read(body, pinned=size is not None)


@get(
    "/v1/log/proof/consistency",
    tags=["log"],
    responses={**answer(log.ConsistencyProof, "The consistency proof"), **BAD_REQUEST},
)
async def proof_consistency(
    reader: ReaderDep,
    old: Annotated[int, QueryParameter(ge=1)],
    new: Annotated[int | None, QueryParameter(ge=1)] = None,
    as_of_text: AsOf = None,
) -> Read:
    """RFC 6962 consistency proof from ``old`` to ``new`` entries (default: the size ``asOf``
    names, or the whole log)."""
    asked_for = asked(reader, as_of_text)
    at = asked_for.at
    tree = new if new is not None else at if at is not None else reader.log.refresh()
    body = _ENC.encode(log.consistency(reader.log, old, tree))
    return asked_for.read(body, pinned=new is not None)


HANDLERS = [log_checkpoint, log_key, log_entries, proof_inclusion, proof_consistency]
