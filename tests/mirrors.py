"""An origin log for the mirror tests, and what two logs must share to be mirrors of each other:
the leaves, the checkpoint notes, every tile and entry bundle of a tree."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from events.stores.sqlite import SqliteLog
from events.tiles import bundle_of, tile_of, tiles_for
from events.types import Event
from keys import SigningKey
from service.app.ingest import ingest
from service.core.init import init_data_dir
from service.core.ledger import Ledger
from tests.builders import attestation, bundle, ingest_event, key_registration, signed_event
from tests.corpora import shared_file

ORIGIN = "mirror.test/log"


class Origin(NamedTuple):
    root: Path
    vkey: str
    runs: list[str]
    attester: SigningKey


def _runs(first: int, count: int) -> list[tuple[Event, str]]:
    events: list[tuple[Event, str]] = []
    for i in range(first, first + count):
        parts = bundle(
            group=i % 5,
            author=i,
            value=100 + i % 97,
            observed=f"2026-02-01T00:{i // 60 % 60:02d}:{i % 60:02d}Z",
        )
        events.append((ingest_event(parts), parts["run"].digest))
    return events


def build_origin(root: Path, runs: int = 300) -> Origin:
    """A log of a few hundred entries (so a full and a partial level-0 tile, and a partial
    level-1 one): the seed run, ``runs`` synthetic runs in batches of 100 (one checkpoint each),
    a self-registered community key and its attestation."""
    ledger, _ = init_data_dir(root, origin=ORIGIN)
    with ledger:
        ingest(ledger, "manifest", [shared_file("seed-manifest.json")])
        attester = SigningKey.generate()
        registration = key_registration(attester, "community")
        ledger.append_pending([signed_event(registration, attester.key_id, attester)])
        events = _runs(0, runs)
        for k in range(0, len(events), 100):
            ledger.append(events[k : k + 100])
        digests = [subject for _, subject in events]
        ledger.append_pending([attestation(digests[0], attester, "reproduced on a B200")])
        return Origin(root, ledger.signers.vkey, digests, attester)


def grow(root: Path, first: int, count: int) -> int:
    """Append ``count`` more synthetic runs to the log at ``root``; return its size."""
    with Ledger.open(root) as ledger:
        ledger.append(_runs(first, count))
        return ledger.store.size


class LogBytes(NamedTuple):
    size: int
    leaves: list[bytes]
    latest_note: bytes
    tiles: dict[str, bytes]


def log_bytes(root: Path, size: int | None = None) -> LogBytes:
    """The leaves of the log in the data directory ``root``, its latest checkpoint note, and
    every tile and entry bundle of its tree of ``size`` entries (default: the latest
    checkpoint's)."""
    store = SqliteLog.open_readonly(root / "benchproof.db")
    try:
        latest = store.latest_checkpoint()
        assert latest is not None
        size = latest.size if size is None else size
        tiles = {t.path(): tile_of(store, t, size) for t in tiles_for(size)}
        tiles |= {t.entries_path(): bundle_of(store, t, size) for t in tiles_for(size, 0)}
        leaves = [leaf for _, leaf in store.leaves(0, size)]
        return LogBytes(size, leaves, latest.note, tiles)
    finally:
        store.close()
