"""Reads that do not grow with the index (issue 28): the queries behind ``runs show`` are
answered through indexes that reach only the rows they answer with."""

from __future__ import annotations

from pathlib import Path

from projections.queries import neighbours
from service.core.init import init_data_dir
from tests.builders import bundle, ingest_event


def _plan(conn, statement: str, params: tuple[object, ...]) -> str:  # type: ignore[no-untyped-def]
    rows = conn.execute(f"EXPLAIN QUERY PLAN {statement}", params).fetchall()
    return " / ".join(str(r[-1]) for r in rows)


def test_better_elsewhere_reads_one_workload_on_one_hardware(tmp_path: Path) -> None:
    ledger, _ = init_data_dir(tmp_path / "d")
    with ledger:
        events = []
        for group in range(40):
            for author in range(3):
                parts = bundle(group=group, author=author, value=100 + author)
                events.append((ingest_event(parts), parts["run"].digest))
        ledger.append(events)
        conn = ledger.store.session
        conn.execute("ANALYZE")
        for direction in ("lower", "higher"):
            text = neighbours._BETTER_NOW[direction].sqlite
            assert text is not None
            plan = _plan(conn, text, ("w", "NVIDIA B200", "g", 1.0))
            # Not every current run on the hardware: the runs of one workload on it.
            assert "p_runs_current_workload" in plan, plan


def _orders(conn, size: int) -> tuple[list[object], list[object]]:  # type: ignore[no-untyped-def]
    """What the search reads now (kept by the fold) and as of the current size (computed from
    the versions): its runs in order with their keys, the sources with their counts and the
    accelerators. They must be equal."""
    from projections.queries.search import hardware_names, run_sources, search_runs

    now = [(f.key, f.view.runDigest) for f in search_runs(conn, limit=None)]
    then = [(f.key, f.view.runDigest) for f in search_runs(conn, size, limit=None)]
    now += [run_sources(conn), hardware_names(conn)]
    then += [run_sources(conn, size), hardware_names(conn, size)]
    return now, then


def test_the_kept_search_key_is_the_key_computed_as_of_now(tmp_path: Path) -> None:
    """The fold keeps each current run's search key; an ``asOf`` search computes it from the
    rows. At the current size both give the same runs in the same order, with the same keys:
    for runs without a benchmark (the key names the workload manifest), one of them waiting on
    a workload that a manifest.recorded brings later, and a superseded run."""
    from events.types import ManifestRecorded, Origin, RunSuperseded

    ledger, _ = init_data_dir(tmp_path / "d")
    with ledger:
        waiting = bundle(group=3, author=1, value=500)
        ledger.append([(ingest_event(waiting, drop=("workload",)), waiting["run"].digest)])
        runs = []
        for i in range(12):
            parts = bundle(group=i % 3, author=i % 4, value=1000 + 37 * i)
            runs.append(parts["run"].digest)
            ledger.append([(ingest_event(parts), parts["run"].digest)])
        now, then = _orders(ledger.store.session, ledger.store.size)
        assert now == then
        # The waiting run sorts by its own name until its workload arrives, then by the
        # workload's name.
        before = dict((d, k) for k, d in now[:-2])[waiting["run"].digest]
        wl = waiting["workload"]
        origin = Origin(source="synthetic", importer="tests", importerVersion="1")
        ledger.append(
            [
                (
                    ManifestRecorded(
                        digest=wl.digest, kind=wl.kind, manifest=wl.manifest, origin=origin
                    ),
                    wl.digest,
                )
            ]
        )
        ledger.append(
            [(RunSuperseded(runDigest=runs[0], supersededBy=runs[4], reason="fixed"), runs[0])]
        )
        now, then = _orders(ledger.store.session, ledger.store.size)
        assert now == then
        after = dict((d, k) for k, d in now[:-2])[waiting["run"].digest]
        assert (before.workload, after.workload) == (waiting["run"].name, wl.name)


def test_the_catalog_searched_now_and_as_of_now_agree(tmp_path: Path) -> None:
    from service.app.ingest import ingest
    from tests.corpora import CATALOG, corpus

    ledger, _ = init_data_dir(tmp_path / "d")
    with ledger:
        ingest(ledger, "kernelindex-catalog", [corpus(*CATALOG)])
        now, then = _orders(ledger.store.session, ledger.store.size)
    assert len(now) == 8579 + 2
    assert now == then
    sources = now[-2]
    assert sum(s.runs for s in sources) == 8579  # type: ignore[attr-defined]


def test_a_run_ingested_again_with_its_workload_gets_the_workloads_key(tmp_path: Path) -> None:
    """A run first ingested without its workload waits on it; the same run ingested again,
    carrying it, writes no new version of the run, and the key still follows the manifest."""
    from service.app.replay import replay

    ledger, _ = init_data_dir(tmp_path / "d")
    with ledger:
        parts = bundle(group=1, author=1, value=1000)
        ledger.append([(ingest_event(parts, drop=("workload",)), parts["run"].digest)])
        ledger.append([(ingest_event(parts, aliases=("again",)), parts["run"].digest)])
        now, then = _orders(ledger.store.session, ledger.store.size)
        assert now == then
        key = dict((d, k) for k, d in now[:-2])[parts["run"].digest]
        assert key.workload == parts["workload"].name
        for parallel in (False, True):
            report = replay(ledger, parallel=parallel)
            assert report.ok, report.differences


def test_a_sharded_rebuild_keys_a_workload_by_its_first_name(tmp_path: Path) -> None:
    """Two runs in two shards carry one workload spec under two names: the name first
    recorded is the key's, in the incremental projections and in the rebuild alike."""
    import copy

    from events import check_manifest
    from projections.shards import shard_of
    from service.app.replay import replay

    ledger, _ = init_data_dir(tmp_path / "d")
    with ledger:
        # The first run in the second shard: a rebuild that took the name of the shard it reads
        # first would take the second run's.
        first = next(
            b
            for b in (bundle(group=2, author=a, value=1000) for a in range(40))
            if shard_of(b["run"].digest, 2) == 1
        )
        second = next(
            b
            for b in (bundle(group=2, author=a, value=900) for a in range(40, 80))
            if shard_of(b["run"].digest, 2) == 0
        )
        renamed = copy.deepcopy(first["workload"].manifest)
        renamed["metadata"]["name"] = "zzz-renamed"
        second["workload"] = check_manifest(renamed, source="test")
        assert second["workload"].digest == first["workload"].digest
        ledger.append([(ingest_event(first), first["run"].digest)])
        ledger.append([(ingest_event(second), second["run"].digest)])
        now, then = _orders(ledger.store.session, ledger.store.size)
        assert now == then
        keys = {d: k.workload for k, d in now[:-2]}
        assert keys[second["run"].digest] == first["workload"].name
        report = replay(ledger, parallel=True)
        assert report.ok, report.differences


def test_projections_of_the_format_before_are_rebuilt_when_the_log_opens(tmp_path: Path) -> None:
    """A data directory whose projections were folded by the code before (format 10: no search
    key, no source counts) opens, and its projections are rebuilt in this format."""
    import sqlite3

    from projections.materialize import FORMAT
    from projections.queries.search import search_runs
    from service.core.ledger import Ledger

    data = tmp_path / "d"
    ledger, _ = init_data_dir(data)
    with ledger:
        parts = bundle(group=1, author=1, value=1000)
        ledger.append([(ingest_event(parts), parts["run"].digest)])
    db = sqlite3.connect(data / "benchproof.db", isolation_level=None)
    for index in ("p_runs_current_order", "p_runs_current_workload", "p_manifests_operations"):
        db.execute(f"DROP INDEX {index}")
    for column in ("k_workload", "k_unvalued", "k_value"):
        db.execute(f"ALTER TABLE p_runs DROP COLUMN {column}")
    db.execute("DROP TABLE p_run_sources")
    db.execute("UPDATE p_state SET position = 10 WHERE projection = 'format'")
    db.close()
    with Ledger.open(data) as reopened:
        conn = reopened.store.session
        found = search_runs(conn, limit=None)
        assert [f.view.runDigest for f in found] == [parts["run"].digest]
        (stored,) = conn.execute(
            "SELECT position FROM p_state WHERE projection = 'format'"
        ).fetchone()
        assert stored == FORMAT


def test_a_rank_now_reads_its_group_from_the_index_alone(tmp_path: Path) -> None:
    """A run's rank in its group, now, reads its group's current eligible values from
    ``p_runs_current_group`` without reading the members' rows; as of a size it reads the
    versions live then. Both give the same rank."""
    from projections.queries import groups, run_view

    ledger, _ = init_data_dir(tmp_path / "d")
    with ledger:
        events = []
        for author in range(6):
            parts = bundle(group=1, author=author, value=100 + author)
            events.append((ingest_event(parts), parts["run"].digest))
        ledger.append(events)
        conn = ledger.store.session
        conn.execute("ANALYZE")
        text = groups._VALUES_NOW.sqlite
        assert text is not None
        plan = _plan(conn, text, ("g",))
        assert "COVERING INDEX p_runs_current_group" in plan, plan
        size = ledger.store.size
        views = [run_view(conn, digest) for _, digest in events]
        now = [groups.rank_of(conn, view) for view in views if view is not None]
        then = [groups.rank_of(conn, view, size) for view in views if view is not None]
        assert now == then
        assert sorted(r.rank for r in now if r is not None) == [1, 2, 3, 4, 5, 6]


def test_a_rank_read_as_the_log_grows_is_the_rank_at_the_size_it_read(tmp_path: Path) -> None:
    """A reader reads the size, then the current rows; a writer that commits between them would
    make the rows a later size's. Standings asked "now" at a size that is no longer the current
    one are those as of that size (and kept so), not the current rows."""
    from projections.queries import groups, run_view

    ledger, _ = init_data_dir(tmp_path / "d")
    with ledger:
        first = [bundle(group=1, author=a, value=100 + a) for a in range(3)]
        ledger.append([(ingest_event(p), p["run"].digest) for p in first])
        conn = ledger.store.session
        before = ledger.store.size
        later = [bundle(group=1, author=a, value=50 + a) for a in range(3, 6)]
        ledger.append([(ingest_event(p), p["run"].digest) for p in later])
        view = run_view(conn, first[0]["run"].digest)
        assert view is not None and view.group_key is not None
        cache: groups.StandingsCache = {}
        raced = groups._standings(conn, view.group_key, before, 1.0, cache, now=True)
        then = groups._standings(conn, view.group_key, before, 1.0, None, now=False)
        now = groups._standings(conn, view.group_key, ledger.store.size, 1.0, None, now=True)
        assert raced == then == cache[(view.group_key, before)]
        assert (raced.members, now.members) == (3, 6)


def _one_run_a_group(tmp_path: Path, groups: int):  # type: ignore[no-untyped-def]
    """A new log holding one run in each of ``groups`` groups."""
    ledger, _ = init_data_dir(tmp_path / "d")
    events = []
    for group in range(groups):
        parts = bundle(group=group, author=0, value=100)
        events.append((ingest_event(parts), parts["run"].digest))
    ledger.append(events)
    return ledger


def test_better_elsewhere_as_of_a_size_reads_one_workload_on_one_hardware(
    tmp_path: Path,
) -> None:
    # As of a size (an audit compares every dossier as of its checkpoint) the query reads the
    # versions of one workload on one hardware, not every version in the index (256 ms a run
    # at 100k runs before p_runs_workload).
    ledger = _one_run_a_group(tmp_path, 40)
    with ledger:
        conn = ledger.store.session
        conn.execute("ANALYZE")
        for direction in ("lower", "higher"):
            text = neighbours._BETTER_THEN[direction].sqlite
            assert text is not None
            plan = _plan(conn, text, ("w", "NVIDIA B200", 5, 5, "g", 1.0))
            assert "p_runs_workload" in plan, plan
            assert "SCAN p_runs" not in plan.replace("SCAN p_runs USING", ""), plan


def test_run_digests_read_a_page_at_a_time_are_every_run_in_order(tmp_path: Path) -> None:
    from projections.queries import count_runs, iter_run_digests, run_digests

    ledger = _one_run_a_group(tmp_path, 23)
    with ledger:
        conn = ledger.store.session
        size = ledger.store.size
        for as_of in (None, size, size - 10):
            whole = run_digests(conn, as_of)
            assert list(iter_run_digests(conn, as_of, page=5)) == whole
            assert list(iter_run_digests(conn, as_of, page=len(whole))) == whole
            assert count_runs(conn, as_of) == len(whole)
        assert len(run_digests(conn)) == 23
