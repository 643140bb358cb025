"""Bulk work without the cyclic garbage collector.

An append, an import, a replay or a full verification allocates many small containers (decoded
manifests, views, rows, entries) that reference counting frees as soon as they are dropped; they
form no cycles. The cyclic collector still walks every live container each time allocations pile
up, holding the GIL the signing and verifying threads need: a quarter of a catalog import, a
tenth of a batched append. ``paused_gc`` switches it off for one bounded operation and back on
after (nested uses leave it to the outermost); any cycle made meanwhile waits for the next
collection.
"""

from __future__ import annotations

import contextlib
import gc
import os
from collections.abc import Iterator

__all__ = ["cores", "paused_gc"]


def cores() -> int:
    """The cores this process may run on: how many processes bulk work spreads over
    (``serve --workers``'s default, the ingest's checking processes, ``verify``'s)."""
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity is not None else os.cpu_count() or 1


@contextlib.contextmanager
def paused_gc() -> Iterator[None]:
    """The cyclic collector off for the ``with`` block (as it was, after)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
