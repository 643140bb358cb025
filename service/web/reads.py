"""Reads for the HTTP layer: one read-only handle on the log per thread (its session reads the
projections), and a small cache of encoded responses keyed by the log size (any append changes
the key)."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable

from events.port import Session
from events.stores import open_reader
from events.stores.sqlbase import SqlLog
from projections import queries
from service.web.caching import etag_of

__all__ = ["FRESH", "Reader"]

FRESH = 0.02


class Reader:
    """Read access to the projections and the log for request handlers (the ledger's writer is
    for writes: appends and signing a checkpoint)."""

    def __init__(self, store: str, *, cache_size: int = 8192) -> None:
        self.store = store
        self._local = threading.local()
        self._opened: list[SqlLog] = []  # every thread's handle, closed with the app
        self._generation = 0
        self._cache: OrderedDict[tuple[object, ...], tuple[bytes, str]] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()
        self.standings: queries.StandingsCache = {}
        self._size = 0
        self._size_at = -1.0

    @property
    def log(self) -> SqlLog:
        """This thread's read-only handle on the log (its session reads the projections)."""
        held: tuple[int, SqlLog] | None = getattr(self._local, "log", None)
        if held is not None and held[0] == self._generation:
            return held[1]
        log = open_reader(self.store)
        with self._lock:
            self._opened.append(log)
            self._local.log = (self._generation, log)
        return log

    def close(self) -> None:
        """Close every thread's handle (when the app shuts down: on a database server, each
        holds a pooled connection)."""
        with self._lock:
            opened, self._opened = self._opened, []
            self._generation += 1  # a thread's closed handle is never used again
        for log in opened:
            log.close()

    @property
    def conn(self) -> Session:
        """This thread's read-only session, for the projections' queries (on PostgreSQL, one
        that speaks as a ``Session`` does: ``events.stores.pgsql``)."""
        session: Session = self.log.session
        return session

    def size(self) -> int:
        """The committed log size, as the projections have applied it. Read at most every
        ``FRESH`` seconds: a read "now" may answer from a size a few milliseconds old (the
        answer says which size it is), and a busy server skips a query per request."""
        now = time.monotonic()
        if now - self._size_at > FRESH:
            self._size = queries.current_size(self.conn)
            self._size_at = now
        return self._size

    def unchanged(self, size: int) -> bool:
        """Whether the log still holds exactly ``size`` entries (read now, not the size cached
        for ``FRESH`` seconds). Sizes only grow, so an answer made after reading ``size`` and
        before this says True reflects exactly that size. When it says False, the next read
        reads the size afresh."""
        if queries.current_size(self.conn) == size:
            return True
        self.invalidate()
        return False

    def invalidate(self) -> None:
        """Forget the size read last (after this process wrote: read your own writes)."""
        self._size_at = -1.0

    def peek(self, key: tuple[object, ...]) -> tuple[bytes, str] | None:
        """The encoded body (and its ETag) kept for ``key``, if one is (nothing is made): an
        async handler answers a hit on the event loop and makes a miss on a thread."""
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None:
                self._cache.move_to_end(key)
            return hit

    def cached(self, key: tuple[object, ...], make: Callable[[], bytes]) -> tuple[bytes, str]:
        """The encoded body (and its ETag) for ``key``, made once per key."""
        hit = self.peek(key)
        if hit is not None:
            return hit
        body = make()
        entry = (body, etag_of(body))
        with self._lock:
            self._cache[key] = entry
            if len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return entry
