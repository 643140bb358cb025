"""Replay determinism: for random event sequences appended in random batches,
- incremental projections equal a rebuild from position 0 (``benchproof replay``);
- replaying any prefix, then the rest, equals replaying everything;
- every read ``asOf`` position p equals the current state of a fresh replay of the first p."""

from __future__ import annotations

import sqlite3
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from events.port import stored_entries
from events.stores.sqlite_session import SqliteSession
from events.types import ManifestRecorded, Origin, ReportFiled, RunRetracted, RunSuperseded
from keys import SigningKey
from projections import queries, schema
from projections.compare import table_digest
from projections.materialize import Materializer
from service.app.replay import replay
from service.core.init import init_data_dir
from service.core.ledger import Ledger
from tests.builders import attestation, bundle, ingest_event, key_registration, rerun, signed_event

RERUNNERS = [SigningKey.from_seed(bytes([i]) * 32) for i in (1, 2)]
COMMUNITY = SigningKey.from_seed(b"\x07" * 32)

ops = st.lists(
    st.one_of(
        st.tuples(
            st.just("ingest"),
            st.integers(0, 2),
            st.integers(0, 4),
            st.integers(1, 9),
            st.integers(0, 30),
            st.booleans(),
        ),
        st.tuples(st.just("workload"), st.integers(0, 2)),
        st.tuples(st.just("retract"), st.integers(0, 50)),
        st.tuples(st.just("supersede"), st.integers(0, 50), st.integers(0, 50)),
        st.tuples(st.just("rerun"), st.integers(0, 50), st.booleans(), st.integers(0, 1)),
        st.tuples(st.just("attest"), st.integers(0, 50)),
        st.tuples(st.just("report"), st.integers(0, 50)),
    ),
    min_size=1,
    max_size=22,
)


def _apply(ledger: Ledger, plan: list[tuple[Any, ...]], cuts: list[int]) -> None:
    ledger.append_pending(
        [signed_event(key_registration(COMMUNITY, "community"), COMMUNITY.key_id, COMMUNITY)]
    )
    ledger.append([(key_registration(k, "rerunner"), k.key_id) for k in RERUNNERS])
    runs: list[str] = []
    batch: list[Any] = []

    def flush() -> None:
        if batch:
            ledger.append_pending(list(batch))
            batch.clear()

    from service.core.ledger import pending_of

    for i, op in enumerate(plan):
        kind = op[0]
        if kind == "ingest":
            _, group, author, value, day, drop = op
            parts = bundle(
                group=group,
                author=author,
                value=value * 100,
                observed=f"2026-01-{1 + day % 28:02d}T00:00:00Z",
            )
            event = ingest_event(parts, drop=("workload",) if drop else ())
            batch.append(pending_of(event, parts["run"].digest))
            runs.append(parts["run"].digest)
        elif kind == "workload":
            wl = bundle(group=op[1])["workload"]
            origin = Origin(source="synthetic", importer="tests", importerVersion="1")
            batch.append(
                pending_of(
                    ManifestRecorded(
                        digest=wl.digest, kind=wl.kind, manifest=wl.manifest, origin=origin
                    ),
                    wl.digest,
                )
            )
        elif runs:
            target = runs[op[1] % len(runs)]
            if kind == "retract":
                batch.append(pending_of(RunRetracted(runDigest=target, reason="test"), target))
            elif kind == "supersede":
                other = runs[op[2] % len(runs)]
                if other != target:
                    batch.append(
                        pending_of(
                            RunSuperseded(runDigest=target, supersededBy=other, reason="test"),
                            target,
                        )
                    )
            elif kind == "rerun":
                batch.append(rerun(target, RERUNNERS[op[3]], passed=op[2]))
            elif kind == "attest":
                batch.append(attestation(target, COMMUNITY, f"note {i}"))
            else:
                batch.append(
                    pending_of(
                        ReportFiled(runDigest=target, category="other", text=f"report {i}"), target
                    )
                )
        if i in cuts:
            flush()
    flush()


def _fresh(entries: list[Any], split: int | None = None) -> SqliteSession:
    conn = SqliteSession(sqlite3.connect(":memory:", isolation_level=None))
    m = Materializer(conn)
    if split is None:
        m.apply(entries)
    else:
        m.apply(entries[:split])
        m.apply(entries[split:])
    return conn


def _state(conn: SqliteSession, as_of: int | None) -> dict[str, Any]:
    views = list(queries.list_runs(conn, as_of))
    return {
        "runs": views,
        "ranks": queries.all_ranks(conn, as_of),
        "aliases": queries.all_aliases(conn, as_of),
        "leaders": list(queries.leader_history(conn, None, as_of)),
        "groups": [
            queries.group(conn, v.group_key, as_of) for v in views if v.eligible and v.group_key
        ],
        "attestations": [queries.attestations(conn, v.runDigest, as_of) for v in views],
        "reports": [queries.reports(conn, v.runDigest, as_of) for v in views],
    }


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops, st.lists(st.integers(0, 22), max_size=6), st.data())
def test_replay_is_deterministic_resumable_and_time_travels(
    plan: list[tuple[Any, ...]], cuts: list[int], data: st.DataObject
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        ledger, _ = init_data_dir(Path(tmp) / "d")
        try:
            _apply(ledger, plan, cuts)
            size = ledger.store.size
            entries = list(stored_entries(ledger.store, 0, size))
            # Incremental (batches as appended) equals a rebuild from position 0.
            report = replay(ledger)
            assert report.ok, report.differences
            # A prefix, then the rest, equals everything at once.
            split = data.draw(st.integers(0, size))
            whole, resumed = _fresh(entries), _fresh(entries, split)
            for table in schema.TABLES:
                assert table_digest(whole, table) == table_digest(resumed, table), table
            # asOf p on the full log equals the present state of a replay of the first p.
            p = data.draw(st.integers(0, size))
            assert _state(ledger.store.session, p) == _state(_fresh(entries[:p]), None)
        finally:
            ledger.close()


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops, st.lists(st.integers(0, 22), max_size=6), st.integers(1, 7))
def test_the_parallel_rebuild_equals_the_incremental_projections(
    plan: list[tuple[Any, ...]], cuts: list[int], batch: int
) -> None:
    """The rebuild on every core (``projections.shards``: runs split by digest, groups folded
    from the merged member changes) makes the same tables as the incremental projections, in
    batches of any size."""
    with tempfile.TemporaryDirectory() as tmp:
        ledger, _ = init_data_dir(Path(tmp) / "d")
        try:
            _apply(ledger, plan, cuts)
            report = replay(ledger, parallel=True, batch_size=batch)
            assert report.ok, report.differences
            assert report.entries == ledger.store.size
        finally:
            ledger.close()
