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
