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
