"""The keys the log registered, as it knows them now: role and name (and whether the key chose
its name itself), where it was registered and revoked or rotated away, how many entries it
signed and how many attestations it posted; and the entries a key signed, a page at a time. The
projections give the key and who signed what; the log gives the recording times and the
registration's signer."""

from __future__ import annotations

import msgspec

from events.entries import decode_leaf
from events.keyring import KeyView
from events.port import LogReader, Session
from projections import queries
from service.app.cursors import one_page, position_after
from service.app.keyadmin import UnknownKeyId
from service.errors import UsageError

__all__ = [
    "At",
    "KeyPage",
    "KeyRecord",
    "SignedEntry",
    "SignedPage",
    "key_page",
    "resolve_key",
    "show_key",
    "signed_page",
]


class At(msgspec.Struct, frozen=True, omit_defaults=True):
    """Where in the log something happened to a key, and when the log recorded it."""

    index: int
    recordedAt: str
    reason: str | None = None
    to: str | None = None


class KeyRecord(msgspec.Struct, frozen=True, omit_defaults=True):
    """A key as the log knows it now: its role and name (``nameSelfChosen``: the key registered
    itself, so nobody vetted the name), where it was registered and revoked or rotated away,
    how many entries it signed and how many attestations it posted, and where to list each."""

    keyId: str
    role: str
    name: str
    nameSelfChosen: bool
    publicKey: str
    registered: At
    entries: int
    attestations: int
    links: dict[str, str]
    revoked: At | None = None
    rotated: At | None = None


def _record(
    log: LogReader, key: KeyView, counts: dict[str, int], signed: dict[str, int]
) -> KeyRecord:
    position = key.since - 1  # a key is valid from the entry after its registration
    leaf = log.leaf(position)
    entry = decode_leaf(leaf or b"", position=position)
    ended = None
    if key.until is not None:
        header = log.headers_at([key.until - 1])[key.until - 1]
        ended = At(header.seq, header.recorded_at, key.revokedReason, key.rotatedTo)
    return KeyRecord(
        keyId=key.keyId,
        role=key.role,
        name=key.name,
        nameSelfChosen=entry.envelope.signatures[0].keyid == key.keyId and position > 0,
        publicKey=key.publicKey,
        registered=At(position, entry.recordedAt),
        entries=signed.get(key.keyId, 0),
        attestations=counts.get(key.keyId, 0),
        links={
            "entries": f"/v1/keys/{key.keyId}/entries",
            "attestations": f"/v1/attestations?attester={key.keyId}",
        },
        revoked=ended if ended is not None and key.rotatedTo is None else None,
        rotated=ended if key.rotatedTo is not None else None,
    )


SHORT_KEY = 12
"""The fewest hex digits of a key id that name the key (as a run's short id names it)."""


def resolve_key(conn: Session, ref: str) -> str:
    """The id of the key ``ref`` names: its full id, or a unique prefix of 12 or more of its hex
    digits (the short id pages show). Any other ``ref`` is returned as it is: no key has it,
    which the reader of the key then says.

    Raises:
        UsageError: the prefix names several keys (the message lists them).
    """
    ref = ref.strip().lower()
    if len(ref) < SHORT_KEY or len(ref) >= 64:
        return ref
    found = queries.matching_keys(conn, ref, limit=21)
    if len(found) > 1:
        listed = ", ".join(found[:20]) + (", …" if len(found) > 20 else "")
        raise UsageError(
            f"{ref!r} names several keys; choose one by a longer id: {listed}",
            keyId=ref,
            candidates=found[:20],
        )
    return found[0] if found else ref


def show_key(conn: Session, log: LogReader, key_id: str) -> KeyRecord:
    """The key ``key_id`` as the log knows it now.

    Raises:
        UnknownKeyId: the log registered no such key.
    """
    key = queries.keyring(conn).get(key_id)
    if key is None:
        raise UnknownKeyId(f"no key {key_id}", keyId=key_id)
    return _record(
        log, key, queries.attestation_counts(conn), queries.signed_counts(conn, [key_id])
    )


class KeyPage(msgspec.Struct, frozen=True):
    """A page of keys by registration position; ``next`` is the cursor for ``after``, if any."""

    items: list[KeyRecord]
    next: str | None = None


def key_page(
    conn: Session, log: LogReader, *, after: str | None = None, limit: int = 100
) -> KeyPage:
    """At most ``limit`` keys registered after the position ``after``, oldest first.

    Raises:
        UsageError: ``after`` is not a position.
    """
    start = position_after(after)
    keys = sorted(
        (k for k in queries.keyring(conn).values() if start is None or k.since - 1 > start),
        key=lambda k: k.since,
    )
    page, after_last = one_page(keys, limit, lambda k: str(k.since - 1))
    counts, signed = queries.attestation_counts(conn), queries.signed_counts(conn)
    return KeyPage([_record(log, key, counts, signed) for key in page], after_last)


class SignedEntry(msgspec.Struct, frozen=True):
    """An entry a key signed: its position, type, subject and recording time (its leaf and
    inclusion proof are at ``/v1/log/entries`` and ``/v1/log/proof/inclusion``)."""

    index: int
    type: str
    subject: str
    recordedAt: str


class SignedPage(msgspec.Struct, frozen=True):
    """A page of the entries a key signed, by position; ``next`` is the cursor for ``after``."""

    keyId: str
    items: list[SignedEntry]
    next: str | None = None


def signed_page(
    conn: Session,
    log: LogReader,
    key_id: str,
    *,
    after: str | None = None,
    limit: int = 100,
) -> SignedPage:
    """At most ``limit`` entries that ``key_id`` signed after the position ``after``, oldest
    first.

    Raises:
        UnknownKeyId: the log registered no such key.
        UsageError: ``after`` is not a position.
    """
    start = position_after(after)
    if key_id not in queries.keyring(conn):
        raise UnknownKeyId(f"no key {key_id}", keyId=key_id)
    found = queries.signed_by(conn, key_id, after=start, limit=limit + 1)
    positions, after_last = one_page(found, limit, str)
    headers = log.headers_at(positions)
    items = [
        SignedEntry(p, headers[p].type, headers[p].subject, headers[p].recorded_at)
        for p in positions
    ]
    return SignedPage(key_id, items, after_last)
