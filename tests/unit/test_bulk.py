"""``paused_gc``: the cyclic collector is off inside, and back as it was after (nested uses,
errors)."""

from __future__ import annotations

import gc

import pytest

from events.bulk import paused_gc


def test_off_inside_and_restored_after_nesting_and_errors() -> None:
    assert gc.isenabled()
    with paused_gc():
        assert not gc.isenabled()
        with paused_gc():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the inner use leaves it to the outer one
    assert gc.isenabled()
    with pytest.raises(RuntimeError), paused_gc():
        raise RuntimeError("boom")
    assert gc.isenabled()


def test_leaves_a_disabled_collector_disabled() -> None:
    gc.disable()
    try:
        with paused_gc():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_replay_and_import_run_with_it_and_give_it_back(tmp_path: object) -> None:
    from pathlib import Path

    from service.app.ingest import ingest
    from service.core.init import init_data_dir
    from tests.corpora import shared_file

    ledger, _ = init_data_dir(Path(str(tmp_path)) / "d")
    with ledger:
        ingest(ledger, "manifest", [shared_file("seed-manifest.json")])
        assert gc.isenabled()
        conn = ledger.store.session
        conn.execute("BEGIN IMMEDIATE")
        from events.port import stored_entries

        assert ledger.projections.rebuild(stored_entries(ledger.store)) == ledger.store.size
        conn.execute("COMMIT")
        assert gc.isenabled()
