"""Keyset paging: a list asks for one row more than a page holds; the page is the first
``limit`` rows and, if there were more, the cursor of its last row is where the next starts
(``after``). Cursors on log positions are checked by ``position_after``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from service.errors import UsageError

__all__ = ["one_page", "position_after"]

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
