"""Rate limits on the public write endpoints, per signing key and per client address, by the
hour and by the day, counted in a database of the data directory (``limits.db``, table
``rate_limits``; apart from the log's, so that counting never waits for the log's writer) so
that every API process on it shares them.

Windows are fixed (the clock's hour and UTC day); a request over any limit is refused before
anything is appended, with the seconds until its window ends (HTTP 429 ``Retry-After``); a
refused request is not counted. Each check and count is one ``BEGIN IMMEDIATE`` transaction on
its own connection, in WAL mode with ``synchronous=NORMAL``: counts are not records anyone was
promised, and an fsync per request would undo the log's group commit (a power cut may forget
the last counts, never an entry).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import msgspec

from events.port import Session
from events.statements import Statement, sql
from events.stores import BEGIN_IMMEDIATE, service_session, sqlite_counts, store_kind
from service.errors import ServiceError

__all__ = ["Limits", "RateLimited", "RateLimiter"]

HOUR, DAY = 3600, 86400
_SCHEMA = sql("""CREATE TABLE IF NOT EXISTS rate_limits (
    scope {text} NOT NULL, subject {text} NOT NULL, span {integer} NOT NULL,
    start {integer} NOT NULL, count {integer} NOT NULL, PRIMARY KEY (scope, subject, span, start))""")
# Checks and counts one at a time, as SQLite's BEGIN IMMEDIATE has them: under READ COMMITTED
# two requests would both read a count under the limit, and both be counted.
_ONE_AT_A_TIME = sql(postgresql="LOCK TABLE rate_limits IN SHARE ROW EXCLUSIVE MODE")
_COUNT = sql(
    "SELECT count FROM rate_limits WHERE scope = ? AND subject = ? AND span = ? AND start = ?"
)
_HIT = sql(
    "INSERT INTO rate_limits VALUES (?, ?, ?, ?, 1) ON CONFLICT"
    " (scope, subject, span, start) DO UPDATE SET count = rate_limits.count + 1"
)
_FORGET = sql("DELETE FROM rate_limits WHERE start + span < ?")
_COMMIT = sql("COMMIT")
_ROLLBACK = sql("ROLLBACK")


class Limits(msgspec.Struct, frozen=True, kw_only=True):
    """How many writes each signing key and each client address may make per hour and per day
    (0: no limit)."""

    key_hour: int = 120
    key_day: int = 1000
    address_hour: int = 60
    address_day: int = 500

    def any(self) -> bool:
        """Whether any limit is set (all 0: nothing is counted)."""
        return any((self.key_hour, self.key_day, self.address_hour, self.address_day))

    def of(self, scope: str) -> tuple[tuple[int, int], ...]:
        """``(window in seconds, allowed)`` of ``scope`` (``key`` or ``address``)."""
        hour, day = (
            (self.key_hour, self.key_day)
            if scope == "key"
            else (self.address_hour, self.address_day)
        )
        return ((HOUR, hour), (DAY, day))


class RateLimited(ServiceError):
    """Over a rate limit: ``details["retry_after"]`` seconds until the window ends."""


class RateLimiter:
    """Counts writes per (scope, subject) in fixed windows: in the SQLite database at ``db``,
    or, when ``store`` (the log's store URL) is PostgreSQL, in the store itself, so that the
    API processes of every machine share them."""

    def __init__(
        self,
        db: Path,
        limits: Limits,
        *,
        clock: Callable[[], float] = time.time,
        store: str | None = None,
    ) -> None:
        self.limits = limits
        self._clock = clock
        self._store = store if store and store_kind(store) == "postgresql" else None
        self._db = db
        self._conn: Session | None = None
        if self._store is None:
            self._conn = sqlite_counts(db, _SCHEMA)
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def _session(self) -> Iterator[tuple[Session, Statement]]:
        if self._store is not None:
            with service_session(self._store, self._db, _SCHEMA) as opened:
                yield opened
            return
        assert self._conn is not None  # noqa: S101 - SQLite's, made above
        with self._lock:
            yield self._conn, BEGIN_IMMEDIATE

    def hit(self, subjects: Sequence[tuple[str, str]]) -> None:
        """Count one write for each ``(scope, subject)`` (scope ``key`` or ``address``), or
        none if any is over its limit.

        Raises:
            RateLimited: a limit is reached; nothing was counted.
        """
        now = int(self._clock())
        wanted = [
            (scope, subject, span, now - now % span, allowed)
            for scope, subject in subjects
            for span, allowed in self.limits.of(scope)
            if allowed > 0
        ]
        if not wanted:
            return
        with self._session() as (conn, begin):
            conn.execute(begin)
            try:
                if conn.dialect == "postgresql":
                    conn.execute(_ONE_AT_A_TIME)
                for scope, subject, span, start, allowed in wanted:
                    row = conn.execute(_COUNT, (scope, subject, span, start)).fetchone()
                    if row is not None and row[0] >= allowed:
                        window = "hour" if span == HOUR else "day"
                        raise RateLimited(
                            f"rate limit reached: {allowed} writes per {window} for this "
                            f"{'key' if scope == 'key' else 'client address'}",
                            retry_after=start + span - now,
                        )
                conn.executemany(
                    _HIT,
                    [(scope, subject, span, start) for scope, subject, span, start, _ in wanted],
                )
                conn.execute(_FORGET, (now - DAY,))
                conn.execute(_COMMIT)
            except BaseException:
                conn.execute(_ROLLBACK)
                raise

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
