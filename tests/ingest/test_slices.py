"""An import is appended a slice at a time inside its one transaction: the entries are those of
one batch (each once, in order, at one recording instant), and a re-import appends nothing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

import service.app.ingest as ingest_app
from events.entries import read_entry
from service.app.ingest import ingest
from service.core.init import init_data_dir
from tests.corpora import corpus


def test_an_import_in_slices_is_one_batch_at_one_instant(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ticks = iter(range(10_000))
    start = datetime(2026, 12, 7, tzinfo=UTC)

    def clock() -> datetime:  # every reading a second later than the one before
        return start + timedelta(seconds=next(ticks))

    monkeypatch.setattr(ingest_app, "APPEND_SLICE", 2)
    examples = sorted(corpus("kernelindex-manifests", "examples").glob("*.yaml"))
    ledger, _ = init_data_dir(tmp_path / "d", clock=clock)
    with ledger:
        before = ledger.store.size
        first = ingest(ledger, "manifest", examples).result
        assert first.entries > 2  # more than one slice
        entries = [read_entry(leaf, position=seq) for seq, leaf in ledger.store.leaves(before)]
        assert len(entries) == first.entries == ledger.store.size - before
        assert len({e.recordedAt for e in entries}) == 1
        assert len({e.payload_digest or e.payload for e in entries}) == len(entries)
        again = ingest(ledger, "manifest", examples).result
        assert again.entries == 0 and ledger.store.size == before + first.entries
