"""``asOf``: a tree size, or an RFC 3339 instant of the log's own recording time."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime

from events.entries import format_instant
from events.port import LogReader
from service.errors import UsageError

__all__ = ["parse_as_of", "resolve_as_of"]

_INSTANT = re.compile(r"^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2}))?\Z")


def resolve_as_of(store: LogReader, text: str | None) -> int | None:
    """``parse_as_of`` against a log store."""
    return parse_as_of(text, size=store.refresh, at_instant=store.size_at_instant)


def parse_as_of(
    text: str | None, *, size: Callable[[], int], at_instant: Callable[[str], int]
) -> int | None:
    """The tree size ``text`` names (None for "now").

    A non-negative integer is a tree size (at most the log's size); an RFC 3339 instant (or a
    bare date, meaning its end of day in UTC) names the size of the log as recorded then.

    Raises:
        UsageError: neither, or a size beyond the log.
    """
    if text is None or text == "":
        return None
    text = text.strip()
    if text.isdigit():
        wanted = int(text)
        current = size()
        if wanted > current:
            raise UsageError(f"asOf {wanted} is beyond the log ({current} entries)")
        return wanted
    if not _INSTANT.match(text):
        raise UsageError(f"asOf must be a tree size or an RFC 3339 instant, not {text!r}")
    try:
        if "T" not in text:
            when = datetime.fromisoformat(text + "T23:59:59.999+00:00")
        else:
            when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(f"asOf {text!r} is not a valid instant") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return at_instant(format_instant(when))
