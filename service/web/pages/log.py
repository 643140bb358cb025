"""``/log``: the log and how to audit it: origin, size, the signed checkpoint that covers the
size shown, the verifier key and the entries, a page of ``RECENT`` at a time, newest first."""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import urlencode

from litestar import Request, get
from litestar.params import QueryParameter

from events.port import LogReader, SignedCheckpoint
from service.app import log
from service.core.logs import OpenedLog
from service.core.witnesses import witness_states
from service.errors import UsageError
from service.web.caching import Read
from service.web.deps import LedgerDep, ReaderDep
from service.web.pages.render import html
from service.web.params import AsOf, asked

__all__ = ["RECENT", "log_page"]

RECENT = 20

Before = Annotated[
    str | None,
    QueryParameter(
        name="before",
        description="show the entries just below this position (a page of 20, newest first)",
        required=False,
    ),
]


def _before(text: str | None, size: int) -> int:
    """The page's exclusive upper position: ``before`` as a whole number from 1 to ``size``
    (default ``size``: the newest entries).

    Raises:
        UsageError: ``before`` is not such a number.
    """
    if text is None:
        return size
    allowed = f"a whole number from 1 to {size} (the tree size shown)"
    if not text.isascii() or not text.isdigit() or not 1 <= int(text) <= max(size, 1):
        raise UsageError(
            f"before must be {allowed}, not {text!r}",
            parameter="before",
            value=text,
            allowed=allowed,
        )
    return int(text)


def covering(ledger: OpenedLog, reader: LogReader, size: int) -> SignedCheckpoint | None:
    """The first signed checkpoint of at least ``size`` entries: it commits to every entry a
    reader of ``size`` sees (its first ``size`` entries are checked against it with a consistency
    proof). If none is signed at or above ``size`` yet, the latest, signed on the spot when the
    log has outgrown it."""
    for signed in reader.checkpoints():
        if signed.size >= size:
            return signed
    return log.latest_checkpoint(ledger, log=reader)


@get("/log", include_in_schema=False, sync_to_thread=True)
def log_page(
    request: Request[Any, Any, Any],
    reader: ReaderDep,
    ledger: LedgerDep,
    as_of_text: AsOf = None,
    before_text: Before = None,
) -> Read:
    """The log as of ``asOf`` (default now): origin, size, the checkpoint that covers that size
    (exactly it when one was signed at it, else the first signed above it, said so), the key,
    and the ``RECENT`` entries below position ``before`` (default: the newest), with links to
    older and newer pages."""
    asked_for = asked(reader, as_of_text)
    at = asked_for.at
    size = asked_for.tree
    before = _before(before_text, size)
    o = log.overview(ledger, reader.log, at, size=asked_for.size, recent=0)
    signed = o.checkpoint if at is None else covering(ledger, reader.log, size)
    entries = list(reversed(list(reader.log.headers(max(0, before - RECENT), before))))
    keep = {"asOf": as_of_text} if as_of_text is not None else {}

    def page_href(position: int) -> str:
        params = {**keep, **({"before": str(position)} if position != size else {})}
        return "/log" + ("?" + urlencode(params) if params else "")

    context = {
        "origin": o.origin,
        "size": size,
        "checkpoint": signed.note.decode() if signed else "(no checkpoint signed yet)",
        "checkpoint_size": signed.size if signed else None,
        "below": o.checkpoint.size if at is not None and o.checkpoint else None,
        "vkey": o.vkey,
        "entries": entries,
        "first": max(0, before - RECENT),
        "last": before - 1,
        "newer_href": page_href(min(size, before + RECENT)) if before < size else None,
        "newest_href": page_href(size) if before + RECENT < size else None,
        "older_href": page_href(before - RECENT) if before - RECENT > 0 else None,
        "oldest_href": page_href(min(RECENT, size)) if before - RECENT > RECENT else None,
        "as_of": at,
        "witnesses": _witnesses(ledger),
    }
    return html(request, "log.html", context, pinned=asked_for.pinned)


def _witnesses(ledger: OpenedLog) -> list[dict[str, Any]]:
    """The witnesses this log asks, with what its cosigner last knew of each
    (``witness_states``). Empty when none is configured, and then the page is as it was
    before witnesses."""
    try:
        return witness_states(ledger.data.root)
    except UsageError:
        return []  # a hand-edited list: `benchproof witnesses list` says what is wrong with it
