"""Text as the projections' text columns hold it, on every store alike.

PostgreSQL's text cannot hold U+0000. New input never brings one: importers refuse a manifest
whose text holds it (``events.documents.check_manifest``: a named invalid record, so the whole
import is refused unless ``--skip-invalid``), as the JSON API refuses it in a request body
(``events.strictjson``). A log written by an older version, or another log mirrored here, may
still hold one: its entries are kept byte for byte (the log, its digests and the views stored
as JSON keep the exact text), and the folds write a text column with each U+0000 as U+0001,
the character that sorts next to it, so that both stores hold the same row. A query asks for
client text in the same terms (``column_text``): a filter holding U+0000 matches what a column
holding it was written as, on both stores.
"""

from __future__ import annotations

from typing import overload

__all__ = ["column_text", "column_values"]

_NUL = "\0"
_STAND_IN = "\x01"


@overload
def column_text(text: str) -> str: ...
@overload
def column_text(text: None) -> None: ...
def column_text(text: str | None) -> str | None:
    """``text`` as a text column holds it (U+0000 as U+0001)."""
    if text is None or _NUL not in text:
        return text
    return text.replace(_NUL, _STAND_IN)


def column_values(row: tuple[object, ...]) -> tuple[object, ...]:
    """``row`` with each text value as a text column holds it."""
    if not any(type(value) is str and _NUL in value for value in row):
        return row
    return tuple(column_text(v) if type(v) is str else v for v in row)
