"""The rebuild on every core (``projections.shards``), as ``benchproof replay`` and a rebuild in
place use it: the same tables as the incremental projections, the same errors as the plain
rebuild."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from events.errors import LogCorrupted, LogError
from events.types import ManifestRecorded, Origin, RunRetracted, RunSuperseded
from keys import SigningKey
from projections import batch as batch_module
from projections import schema
from projections.compare import table_digest
from projections.materialize import Materializer
from projections.queries import run_view
from projections.shards import Unshardable, rebuild_sharded, shard_of
from service.app.replay import replay
from service.core.ledger import Ledger
from tests.builders import attestation, bundle, ingest_event, key_registration, rerun


def _mixed_log(ledger: Ledger) -> tuple[str, str]:
    """Runs of several groups, one waiting on a workload that a later run and a later
    manifest.recorded bring, a superseded run, a rerun and an attestation."""
    waiting = bundle(group=3, author=1, value=500)
    ledger.append([(ingest_event(waiting, drop=("workload",)), waiting["run"].digest)])
    runs = []
    for i in range(12):
        parts = bundle(group=i % 4, author=i % 3, value=1000 + 37 * i)
        runs.append(parts["run"].digest)
        ledger.append([(ingest_event(parts), parts["run"].digest)])  # group 3 carries the workload
    wl = bundle(group=5)["workload"]
    origin = Origin(source="synthetic", importer="tests", importerVersion="1")
    recorded = ManifestRecorded(digest=wl.digest, kind=wl.kind, manifest=wl.manifest, origin=origin)
    ledger.append([(recorded, wl.digest)])
    ledger.append(
        [(RunSuperseded(runDigest=runs[0], supersededBy=runs[4], reason="fixed"), runs[0])]
    )
    rerunner = SigningKey.from_seed(b"\x05" * 32)
    community = SigningKey.from_seed(b"\x06" * 32)
    ledger.append([(key_registration(rerunner, "rerunner"), rerunner.key_id)])
    ledger.append([(key_registration(community, "community"), community.key_id)])
    ledger.append_pending([rerun(runs[1], rerunner, passed=True)])
    ledger.append_pending([attestation(runs[2], community)])
    return waiting["run"].digest, runs[1]


def _tables(conn: sqlite3.Connection) -> dict[str, str]:
    return {table: table_digest(conn, table) for table in schema.TABLES}


def test_it_equals_the_incremental_projections(ledger: Ledger) -> None:
    waiting, verified = _mixed_log(ledger)
    conn = ledger.store.session
    waiting_before = run_view(conn, waiting)
    assert waiting_before is not None and not waiting_before.unresolved
    before = _tables(conn)
    for batch in (1, 4, 4000):
        report = replay(ledger, parallel=True, batch_size=batch)
        assert report.ok, report.differences
        assert report.entries == ledger.store.size
        assert report.digests == before
    # The live tables were only read, and the scratch databases are gone.
    assert _tables(conn) == before
    assert not list(ledger.data.root.glob(".scratch-*"))
    view = run_view(conn, verified)
    assert view is not None and view.evidenceLevel == "verified"


def test_the_in_place_rebuild_on_every_core_equals_the_plain_one(ledger: Ledger) -> None:
    _mixed_log(ledger)
    conn = ledger.store.session
    before = _tables(conn)
    for parallel in (True, False):
        conn.execute("BEGIN IMMEDIATE")
        assert ledger.rebuild_projections(parallel=parallel, batch_size=3) == ledger.store.size
        conn.execute("COMMIT")
        assert _tables(conn) == before
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert {"p_runs_group", "p_aliases_run", "p_runs_current_level"} <= names


def test_a_rebuild_that_carries_only_the_groups_it_changed_equals_the_incremental_one(
    ledger: Ledger, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past ``CARRIED_GROUPS``, a batch of a rebuild hands on only the groups it changed and
    the next reads the others back: the tables are the same (here every carry is bounded)."""
    _mixed_log(ledger)
    conn = ledger.store.session
    before = _tables(conn)
    monkeypatch.setattr(batch_module, "CARRIED_GROUPS", 0)
    for size in (1, 2, 5):
        report = replay(ledger, parallel=True, batch_size=size)
        assert report.ok, report.differences
        conn.execute("BEGIN IMMEDIATE")
        assert ledger.rebuild_projections(parallel=False, batch_size=size) == ledger.store.size
        conn.execute("COMMIT")
        assert _tables(conn) == before


def test_a_log_whose_subjects_do_not_name_their_runs_is_rebuilt_in_one_process(
    ledger: Ledger, tmp_path: Path
) -> None:
    """A run event filed under another subject cannot be routed by its subject: the shards say
    so, and the rebuild falls back to one process (same tables)."""
    parts = [bundle(group=1, author=a, value=100 + a) for a in range(6)]
    digests = [p["run"].digest for p in parts]
    subject = next(d for d in digests[1:] if shard_of(d, 2) != shard_of(digests[0], 2))
    ledger.append([(ingest_event(p), p["run"].digest) for p in parts])
    ledger.append([(RunRetracted(runDigest=digests[0], reason="withdrawn"), subject)])
    with pytest.raises(Unshardable):
        rebuild_sharded(ledger.data.db, ledger.store.size, tmp_path, workers=2)
    report = replay(ledger, parallel=True)
    assert report.ok, report.differences
    view = run_view(ledger.store.session, digests[0])
    assert view is not None and view.evidenceLevel == "retracted"


def _break_leaf(ledger: Ledger, seq: int) -> None:
    db = sqlite3.connect(ledger.data.db, isolation_level=None)
    for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'").fetchall():
        db.execute(f'DROP TRIGGER "{name}"')
    db.execute("UPDATE entries SET leaf = ? WHERE seq = ?", (b'{"seq":', seq))
    db.close()


def test_a_malformed_leaf_is_named_as_the_plain_rebuild_names_it(ledger: Ledger) -> None:
    _mixed_log(ledger)
    _break_leaf(ledger, 5)
    for parallel in (False, True):
        with pytest.raises(LogCorrupted, match=r"entry 5: malformed leaf") as raised:
            replay(ledger, parallel=parallel)
        assert raised.value.details == {"position": 5}
    # Nothing of the failed rebuilds stayed: the projections are the incremental ones.
    assert Materializer(ledger.store.session).position() == ledger.store.size
    assert not list(ledger.data.root.glob(".scratch-*"))


def test_a_worker_that_cannot_read_the_log_is_an_error(tmp_path: Path) -> None:
    unreadable = tmp_path / "folder.db"  # there, but SQLite cannot open it
    unreadable.mkdir()
    with pytest.raises(LogError, match=r"cannot use .*folder\.db: disk I/O error"):
        rebuild_sharded(unreadable, 3, tmp_path, workers=2)


def test_a_worker_given_no_log_says_so(tmp_path: Path) -> None:
    with pytest.raises(LogError, match=r"no log at .*absent\.db"):
        rebuild_sharded(tmp_path / "absent.db", 3, tmp_path, workers=2)


def test_a_log_shorter_than_asked_is_an_error(ledger: Ledger, tmp_path: Path) -> None:
    size = ledger.store.size
    with pytest.raises(LogError, match=f"the log holds {size} entries, not {size + 5}"):
        rebuild_sharded(ledger.data.db, size + 5, tmp_path, workers=2)


def test_a_worker_that_dies_is_an_error_with_its_last_words(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    # "sh -m projections.shards …" fails at once and says why on stderr.
    monkeypatch.setattr(sys, "executable", "/bin/sh")
    with pytest.raises(LogError, match=r"a rebuild worker ended early: \S"):
        rebuild_sharded(tmp_path / "absent.db", 3, tmp_path, workers=2)


def test_a_replay_reads_a_snapshot_and_lets_others_append_meanwhile(
    ledger: Ledger, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rebuild runs without the write lock: another writer appends while it runs, and the
    comparison is made as of the snapshot the replay began with."""
    _mixed_log(ledger)
    size = ledger.store.size
    other = Ledger.open(ledger.data.root, clock=ledger.clock)
    late = bundle(group=1, author=2, value=7)
    original = Ledger.rebuild_scratch

    def append_meanwhile(self: Ledger, *args: Any, **kwargs: Any) -> Any:
        other.append([(ingest_event(late), late["run"].digest)])  # not blocked
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Ledger, "rebuild_scratch", append_meanwhile)
    try:
        report = replay(ledger, parallel=True)
    finally:
        other.close()
    assert report.ok, report.differences
    assert report.entries == size
    assert ledger.store.refresh() == size + 1
    monkeypatch.undo()
    after = replay(ledger)
    assert after.ok and after.entries == size + 1


def _in_shard(shard: int, group: int, author: int) -> dict[str, Any]:
    """A bundle of ``group`` whose run falls in ``shard`` of two."""
    return next(
        parts
        for value in range(1, 100)
        if shard_of((parts := bundle(group=group, author=author, value=value))["run"].digest, 2)
        == shard
    )


@pytest.mark.parametrize("brought_by", ["a run of the other shard", "manifest.recorded"])
def test_a_run_waiting_in_one_shard_is_resolved_by_what_the_other_brings(
    ledger: Ledger, brought_by: str
) -> None:
    waiting = _in_shard(1, group=2, author=1)
    ledger.append([(ingest_event(waiting, drop=("workload",)), waiting["run"].digest)])
    if brought_by == "manifest.recorded":
        wl = waiting["workload"]
        origin = Origin(source="synthetic", importer="tests", importerVersion="1")
        event = ManifestRecorded(
            digest=wl.digest, kind=wl.kind, manifest=wl.manifest, origin=origin
        )
        ledger.append([(event, wl.digest)])
    else:
        carrier = _in_shard(0, group=2, author=2)
        assert carrier["workload"].digest == waiting["workload"].digest
        ledger.append([(ingest_event(carrier), carrier["run"].digest)])
    view = run_view(ledger.store.session, waiting["run"].digest)
    assert view is not None and not view.unresolved and view.comparisonKey is not None
    for batch in (1, 4000):
        report = replay(ledger, parallel=True, batch_size=batch)
        assert report.ok, report.differences


def test_scratch_folders_of_processes_that_are_gone_are_removed(ledger: Ledger) -> None:
    """A replay killed in the middle leaves its scratch copy (as large as the projections); the
    next one removes it, but not the folder of a process still running."""
    gone = ledger.data.root / ".scratch-replay-999999999-x1"  # beyond any pid
    running = ledger.data.root / f".scratch-replay-{os.getppid()}-x2"
    for folder in (gone, running):
        folder.mkdir()
        (folder / "shard-0.db").write_bytes(b"left behind")
    assert replay(ledger).ok
    assert not gone.exists()
    assert (running / "shard-0.db").read_bytes() == b"left behind"


def test_a_difference_is_repaired_from_the_rebuild_and_what_was_appended_meanwhile_kept(
    ledger: Ledger, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A replay that finds a difference puts its own rebuild in place of the live projections
    (no second rebuild), then folds what others appended while it ran."""
    _mixed_log(ledger)
    conn = ledger.store.session
    target = conn.execute("SELECT run_digest FROM p_runs LIMIT 1").fetchone()[0]
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("UPDATE p_runs SET status = 'tampered' WHERE run_digest = ?", (target,))
    conn.execute("COMMIT")
    other = Ledger.open(ledger.data.root, clock=ledger.clock)
    late = bundle(group=1, author=2, value=7)
    original = Ledger.rebuild_scratch
    rebuilds: list[int] = []

    def append_meanwhile(self: Ledger, size: int, *args: Any, **kwargs: Any) -> Any:
        rebuilds.append(size)
        if len(rebuilds) == 1:
            other.append([(ingest_event(late), late["run"].digest)])
        return original(self, size, *args, **kwargs)

    monkeypatch.setattr(Ledger, "rebuild_scratch", append_meanwhile)
    try:
        report = replay(ledger, parallel=True)
    finally:
        other.close()
    assert [d.table for d in report.differences] == ["p_runs"]
    assert rebuilds == [report.entries]  # the repair did not rebuild again
    monkeypatch.undo()
    after = replay(ledger)
    assert after.ok, after.differences
    assert after.entries == report.entries + 1
    assert run_view(conn, late["run"].digest) is not None


def test_a_worker_ahead_of_its_reader_waits_and_stops_when_told(tmp_path: Path) -> None:
    import sys
    import tempfile
    import time

    from projections.shardpipe import AHEAD, Worker

    # A worker that writes far more frames than its reader takes: the reader's thread holds
    # AHEAD of them (the worker then blocks on its pipe), and stop() ends it all the same.
    script = (
        "import pickle, sys\n"
        "from projections.shardpipe import HEADER\n"
        "body = pickle.dumps([0] * 1000)\n"
        "for _ in range(100000):\n"
        "    sys.stdout.buffer.write(HEADER.pack(b'C', len(body)) + body)\n"
    )
    with tempfile.TemporaryFile() as errors:
        worker = Worker([sys.executable, "-c", script], errors)
        time.sleep(1.0)
        assert worker.frames.qsize() == AHEAD
        assert worker.proc.poll() is None  # blocked, not done: nobody read its frames
        changes = worker.changes()
        assert [next(changes) for _ in range(3)] == [0, 0, 0]
        worker.stop()
        assert not worker.thread.is_alive()
