"""Keyset paging: a list asks for one row more than a page holds; the page is the first
``limit`` rows and, if there were more, the cursor of its last row is where the next starts
(``after``). Cursors on log positions are checked by ``position_after``; cursors over runs in
the search's order are opaque (``run_cursor`` makes one, ``run_after`` reads it back).

A run cursor is the base64url (unpadded) of the JSON array ``["r1", workload, unvalued, value,
digest]``: the version of the order, then the ``RunKey`` of the last run of a page. Clients
pass it back unchanged; anything else is refused, never read as "the first page".
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections.abc import Callable, Sequence
from typing import TypeVar

import msgspec

from projections.queries.search import RunKey
from service.errors import UsageError

__all__ = ["one_page", "position_after", "run_after", "run_cursor"]

T = TypeVar("T")


def one_page(
    rows: Sequence[T], limit: int, cursor: Callable[[T], str]
) -> tuple[list[T], str | None]:
    """The page of ``rows`` (fetched with ``limit + 1``) and the cursor of the next one, if any."""
    page = list(rows[:limit])
    return page, cursor(page[-1]) if len(rows) > limit else None


def position_after(after: str | None) -> int | None:
    """The position a cursor names (None: the first page).

    Raises:
        UsageError: ``after`` is not a position in ASCII digits (at most 18 of them).
    """
    if after is None:
        return None
    if not (after.isascii() and after.isdigit() and len(after) <= 18):
        raise UsageError("after must be the position a previous page's `next` gave")
    return int(after)


_RUN_ORDER = "r1"
_CURSOR_CHARS = re.compile(r"[A-Za-z0-9_-]{1,4096}\Z")
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}\Z")
_RUN_KEY = msgspec.json.Decoder(tuple[str, str, int, float, str])
_ENC = msgspec.json.Encoder()
_NOT_A_RUN_CURSOR = "after must be a cursor a previous page's `next` gave (unchanged)"


def run_cursor(key: RunKey) -> str:
    """The opaque cursor of a run's place in the search's order."""
    raw = _ENC.encode([_RUN_ORDER, key.workload, key.unvalued, key.value, key.digest])
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def run_after(after: str | None) -> RunKey | None:
    """The place a run cursor names (None: the first page).

    Raises:
        UsageError: ``after`` is not a cursor ``run_cursor`` made (``details["parameter"]`` is
            ``after``).
    """
    if after is None:
        return None
    if not _CURSOR_CHARS.match(after) or len(after) % 4 == 1:
        raise UsageError(_NOT_A_RUN_CURSOR, parameter="after")
    try:
        raw = base64.urlsafe_b64decode(after + "=" * (-len(after) % 4))
        order, workload, unvalued, value, digest = _RUN_KEY.decode(raw)
    except (binascii.Error, ValueError, msgspec.DecodeError) as exc:
        raise UsageError(_NOT_A_RUN_CURSOR, parameter="after") from exc
    key = RunKey(workload, unvalued, value, digest)
    well_formed = (
        order == _RUN_ORDER
        and unvalued in (0, 1)
        and math.isfinite(value)
        and _DIGEST.match(digest) is not None
        and run_cursor(key) == after  # one spelling per place: no padding, no variants
    )
    if not well_formed:
        raise UsageError(_NOT_A_RUN_CURSOR, parameter="after")
    return key
