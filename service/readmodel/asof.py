"""``asOf``: a tree size, or an RFC 3339 instant of the log's own recording time."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime

from events.entries import format_instant
from events.port import LogReader
from service.errors import UsageError

__all__ = ["ALLOWED", "parse_as_of", "resolve_as_of"]

_SIZE = re.compile(r"[0-9]+\Z")
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}\Z")
# RFC 3339 date-time (section 5.6): full date, T, full time with seconds, and an offset.
_INSTANT = re.compile(
    r"\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})\Z", re.ASCII
)
ALLOWED = (
    "a tree size (a whole number of entries) or an RFC 3339 instant such as 2026-12-01T00:00:00Z"
)
"""What ``asOf`` takes, in words (the errors that refuse one say it)."""


def resolve_as_of(store: LogReader, text: str | None, *, name: str = "--as-of") -> int | None:
    """``parse_as_of`` against a log store (the CLI's ``--as-of``, by default)."""
    return parse_as_of(text, size=store.refresh, at_instant=store.size_at_instant, name=name)


def parse_as_of(
    text: str | None,
    *,
    size: Callable[[], int],
    at_instant: Callable[[str], int],
    name: str = "asOf",
) -> int | None:
    """The tree size ``text`` names (None for "now").

    A non-negative integer is a tree size (at most the log's size); an RFC 3339 date-time
    (with seconds and an offset; a bare date is not one) names the size of the log as
    recorded then. ``name`` is how the errors name the parameter.

    Raises:
        UsageError: neither, or a size beyond the log (``details``: ``parameter``, ``allowed``).
    """
    if text is None or text == "":
        return None
    text = text.strip()
    if _SIZE.match(text):
        current = size()
        # A size of more digits than any log's is beyond it (and never made an int).
        if len(text.lstrip("0")) > 19 or int(text) > current:
            raise _refused(name, text, f"{text} is beyond the log ({current} entries)")
        return int(text)
    if not _INSTANT.match(text):
        if _DATE.match(text):
            raise _refused(
                name, text, f"{text!r} is a date, not an instant (add a time and offset)"
            )
        if " " in text and _INSTANT.match(text.replace(" ", "+")):
            # An offset's "+" in a URL's query arrives as a space.
            why = f"{text!r} is neither (in a URL, write the offset's + as %2B)"
            raise _refused(name, text, why)
        raise _refused(name, text, f"{text!r} is neither")
    try:
        when = datetime.fromisoformat(text.upper().replace("Z", "+00:00"))
    except ValueError:
        raise _refused(name, text, f"{text!r} is not a valid instant") from None
    return at_instant(format_instant(when))


def _refused(name: str, text: str, why: str) -> UsageError:
    return UsageError(
        f"{name} must be {ALLOWED}: {why}", parameter=name, value=text, allowed=ALLOWED
    )
