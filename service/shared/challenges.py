"""Server state that is not part of the log: the single-use challenges a community key signs to
register itself (proof of possession, ``POST /v1/keys/challenges``).

A challenge is 32 random bytes (base64url, 43 characters), bound to one key id, valid for
``CHALLENGE_TTL`` and usable once. Challenges live in the log's store, in the table
``challenges`` (neither a log nor a projection table), so that every API process serving the
log shares them (on PostgreSQL, on every machine); each call takes its own short session with
durable commits, and using a challenge is one conditional UPDATE, so two requests racing with
the same challenge cannot both use it.
"""

from __future__ import annotations

import base64
import contextlib
import secrets
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import msgspec

from events.port import Session
from events.statements import sql
from events.stores import service_session
from service.errors import ServiceError, UsageError

__all__ = [
    "CHALLENGE_TTL",
    "Challenge",
    "ChallengeExpired",
    "ChallengeForeign",
    "ChallengeUnknown",
    "ChallengeUsed",
    "Challenges",
]

CHALLENGE_TTL = timedelta(minutes=5)
# Used and expired challenges are kept this long (so a late retry hears "used" or "expired",
# not "unknown"), then removed when a new one is issued.
_KEEP = timedelta(days=1)

_SCHEMA = sql("""CREATE TABLE IF NOT EXISTS challenges (
    challenge {text} PRIMARY KEY, key_id {text} NOT NULL, expires_us {integer} NOT NULL,
    used_us {integer})""")
_FORGET = sql("DELETE FROM challenges WHERE expires_us < ?")
_ISSUE = sql("INSERT INTO challenges (challenge, key_id, expires_us) VALUES (?, ?, ?)")
_COMMIT = sql("COMMIT")
_READ = sql("SELECT key_id, expires_us, used_us FROM challenges WHERE challenge = ?")
_USE = sql(
    "UPDATE challenges SET used_us = ? WHERE challenge = ? AND key_id = ?"
    " AND used_us IS NULL AND expires_us > ?"
)


class ChallengeUnknown(UsageError):
    """The challenge was never issued by this server (or is long gone)."""


class ChallengeForeign(UsageError):
    """The challenge was issued for another key id."""


class ChallengeUsed(ServiceError):
    """The challenge was already used by a registration."""


class ChallengeExpired(ServiceError):
    """The challenge's time ran out before it was used."""


class Challenge(msgspec.Struct, frozen=True):
    """A challenge as issued: the value to sign, the key id it is bound to and when it expires
    (RFC 3339, UTC)."""

    challenge: str
    keyId: str
    expiresAt: str


def _micros(instant: datetime) -> int:
    return int(instant.timestamp() * 1_000_000)


def _rfc3339(micros: int) -> str:
    return datetime.fromtimestamp(micros // 1_000_000, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Challenges:
    """The challenges of the log in the store ``store`` (a URL; on SQLite, the table is in the
    log's own file ``db``)."""

    def __init__(self, store: str, db: Path) -> None:
        self.store = store
        self.db = db

    @contextlib.contextmanager
    def _connect(self) -> Iterator[Session]:
        with service_session(self.store, self.db, _SCHEMA) as (conn, begin):
            self._begin = begin
            yield conn

    def issue(self, key_id: str, now: datetime) -> Challenge:
        """A new challenge for ``key_id`` (64 lowercase hex, checked by the caller), expiring
        ``CHALLENGE_TTL`` after ``now``; challenges gone stale for a day are removed."""
        value = base64.urlsafe_b64encode(secrets.token_bytes(32)).rstrip(b"=").decode()
        expires = _micros(now + CHALLENGE_TTL)
        with self._connect() as conn:
            conn.execute(self._begin)
            conn.execute(_FORGET, (_micros(now - _KEEP),))
            conn.execute(_ISSUE, (value, key_id, expires))
            conn.execute(_COMMIT)
        return Challenge(value, key_id, _rfc3339(expires))

    def check(self, challenge: str, key_id: str, now: datetime) -> None:
        """Return if ``challenge`` could be used by ``key_id`` at ``now`` (it stays unused).

        Raises:
            ChallengeUnknown: never issued here.
            ChallengeForeign: issued for another key id.
            ChallengeUsed: already used.
            ChallengeExpired: expired.
        """
        with self._connect() as conn:
            row = conn.execute(_READ, (challenge,)).fetchone()
        if row is None:
            raise ChallengeUnknown("this server did not issue that challenge")
        owner, expires, used = row
        if owner != key_id:
            raise ChallengeForeign("the challenge was issued for another key id")
        if used is not None:
            raise ChallengeUsed("the challenge was already used: ask for a new one")
        if expires <= _micros(now):
            raise ChallengeExpired(
                f"the challenge expired at {_rfc3339(expires)}: ask for a new one"
            )

    def use(self, challenge: str, key_id: str, now: datetime) -> None:
        """Mark ``challenge`` used by ``key_id`` at ``now``, atomically: of two requests with the
        same challenge, one only succeeds.

        Raises:
            ChallengeUnknown, ChallengeForeign, ChallengeUsed, ChallengeExpired: as ``check``.
        """
        at = _micros(now)
        with self._connect() as conn:
            done = conn.execute(_USE, (at, challenge, key_id, at)).rowcount
        if done != 1:
            self.check(challenge, key_id, now)
