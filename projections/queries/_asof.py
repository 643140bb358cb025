"""What every read of the version rows shares: the tree size a read answers as of, the clause
that picks the version live at it, and the decoder of stored run views.

A version made by the entry at position ``s`` is visible from size ``s + 1``: the row live at
size ``p`` has ``valid_from <= p`` and ``valid_to`` NULL or ``> p``.
"""

from __future__ import annotations

import msgspec

from projections.views import RunView

__all__ = ["FAR", "JSON", "LIVE", "RUN", "at"]

FAR = 2**62
"""A size beyond any log: as of it, every current row is live."""

LIVE = "valid_from <= ? AND (valid_to IS NULL OR valid_to > ?)"
"""The version live at a size; bind the size twice."""

RUN = msgspec.json.Decoder(RunView)
JSON = msgspec.json.Decoder()


def at(as_of: int | None) -> int:
    """The size a read answers as of: ``as_of``, or (``None``) beyond every version."""
    return FAR if as_of is None else as_of
