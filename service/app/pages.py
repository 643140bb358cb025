"""Reads for the pages about keys: a key as the log knows it now (``keylist.show_key``) with the
attestations it signed, and the keys that attested a run.

Keys are read as the log holds them now (names never change: a rotated key's successor
inherits its name); attestations answer as of a tree size like every read."""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

from events.port import LogReader, Session
from projections import queries
from service.app.attest import AttestationPage, attestation_page
from service.app.keylist import KeyRecord, show_key

__all__ = ["KeySheet", "attesters", "key_sheet"]


class KeySheet(msgspec.Struct, frozen=True):
    """A key as its page shows it: the key, the key it succeeds (when a rotation made it), the
    attestations it signed (a page of them, hidden ones left out) and the titles of the runs
    they are about, by digest."""

    key: KeyRecord
    attestations: AttestationPage
    runTitles: dict[str, str]
    rotatedFrom: str | None = None


def key_sheet(
    conn: Session,
    log: LogReader,
    key_id: str,
    *,
    size: int,
    after: str | None = None,
    limit: int = 100,
) -> KeySheet:
    """The key ``key_id`` with at most ``limit`` of the attestations it signed after the cursor
    ``after``, oldest first.

    Raises:
        UnknownKeyId: the log registered no such key (malformed ids included).
        UsageError: ``after`` is not a position.
    """
    key = show_key(conn, log, key_id)
    page = attestation_page(conn, None, size=size, attester=key_id, after=after, limit=limit)
    titles = {}
    for digest in {a.runDigest for a in page.items}:
        view = queries.run_view(conn, digest, None)
        if view is not None:
            titles[digest] = view.title or view.name
    keyring = queries.keyring(conn)
    predecessor = next((k.keyId for k in keyring.values() if k.rotatedTo == key_id), None)
    return KeySheet(key, page, titles, predecessor)


def attesters(conn: Session, log: LogReader, key_ids: Iterable[str]) -> dict[str, KeyRecord]:
    """The keys ``key_ids`` the log registered (each as ``keylist.show_key`` gives it: its name
    and whether it chose that name itself), by key id."""
    known = queries.keyring(conn)
    return {k: show_key(conn, log, k) for k in set(key_ids) if k in known}
