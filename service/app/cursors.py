"""Keyset cursors: the ``after`` of a paged list is the last log position a page showed."""

from __future__ import annotations

from service.errors import UsageError

__all__ = ["position_after"]


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
