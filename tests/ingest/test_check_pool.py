"""Checking an import's manifests on every core (``service.ingest.pool``): the plan read with
forked workers equals the plan read in one process, refusals name the same place, and a worker
that dies costs time, never an answer."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest
import zstandard

import service.ingest.kernelindex as kernelindex
from events.documents import check_manifest_json
from events.errors import InvalidManifest
from service.ingest import pool
from service.ingest.pool import CheckPool
from tests.corpora import CATALOG, corpus

pytestmark = pytest.mark.corpus


def _plan(path: Path, processes: int, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    monkeypatch.setattr(kernelindex, "cores", lambda: processes)
    return kernelindex.plan([path])


def _signature(plan) -> list[tuple[object, ...]]:  # type: ignore[no-untyped-def]
    return [
        (
            item.run.digest,
            item.run.manifest,
            sorted((role, c.digest, c.name) for role, c in item.given.items()),
            item.rowKey,
            item.aliases,
        )
        for item in plan.runs
    ] + [(c.digest, c.manifest, o.externalId) for c, o in plan.manifests]


@pytest.fixture
def forks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The process ids of the workers forked while the test runs."""
    pids: list[int] = []
    real_fork = os.fork

    def counted() -> int:
        pid = real_fork()
        if pid:
            pids.append(pid)
        return pid

    monkeypatch.setattr(os, "fork", counted)
    return pids


def _projects(n: int) -> list[bytes]:
    """``n`` valid SoftwareProject manifests as JSON texts."""
    return [
        json.dumps(
            {
                "apiVersion": "kernelindex.dev/v1alpha1",
                "kind": "SoftwareProject",
                "metadata": {"name": f"p{i}"},
                "spec": {"name": f"P {i}", "repository": f"https://example.org/p{i}"},
            }
        ).encode()
        for i in range(n)
    ]


def test_the_catalog_planned_on_two_cores_equals_the_plan_of_one(
    monkeypatch: pytest.MonkeyPatch, forks: list[int]
) -> None:
    catalog = corpus(*CATALOG)
    one = _plan(catalog, 1, monkeypatch)
    assert forks == []  # one core: everything checked in this process
    two = _plan(catalog, 2, monkeypatch)
    assert len(forks) == 1  # one worker beside this process
    assert len(two.runs) == 8579
    assert _signature(two) == _signature(one)
    assert two.rejected == one.rejected == []


def _export(tmp_path: Path, lines: list[dict[str, object]]) -> Path:
    body = "\n".join(json.dumps(line) for line in lines).encode()
    path = tmp_path / "catalog.jsonl.zst"
    path.write_bytes(zstandard.ZstdCompressor().compress(body))
    return path


def _broken_catalog(tmp_path: Path) -> Path:
    """The catalog with one benchmark run's protocol made invalid, twice (two rows share it)."""
    catalog = corpus(*CATALOG)
    data = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(catalog.read_bytes())).read()
    lines = [json.loads(line) for line in data.splitlines() if line.strip()]
    runs = [line for line in lines if line["table"] == "benchmark_runs"]
    protocol = runs[0]["row"]["manifest"]["protocol"]
    protocol["spec"]["warmup"] = "many"  # not a number
    runs[-1]["row"]["manifest"]["protocol"] = protocol
    return _export(tmp_path, lines)


def test_a_refusal_names_each_place_the_same_on_two_cores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _broken_catalog(tmp_path)
    one = _plan(path, 1, monkeypatch)
    two = _plan(path, 2, monkeypatch)
    assert len(one.rejected) == 2
    assert two.rejected == one.rejected
    assert {r.row.split()[0] for r in two.rejected} == {"benchmark_runs"}
    assert all("warmup" in r.reason for r in two.rejected)


def test_a_worker_that_dies_costs_time_not_an_answer(
    monkeypatch: pytest.MonkeyPatch, forks: list[int]
) -> None:
    parent = os.getpid()
    real = pool._check_here

    def dies_in_a_worker(text: bytes, source: str, path: str):  # type: ignore[no-untyped-def]
        if os.getpid() != parent:
            os._exit(9)
        return real(text, source, path)

    monkeypatch.setattr(pool, "_check_here", dies_in_a_worker)
    texts = _projects(2 * pool.MIN_SHARE)
    checks = CheckPool("s", processes=2)
    for i, text in enumerate(texts):
        checks.submit(text, f"$[{i}]")
    got = [checks.result(texts[0], "$[0]")]
    # The worker was forked and died; its whole share was answered here, at once.
    assert len(forks) == 1
    assert set(checks._answers) == set(texts)
    got += [checks.result(text, f"$[{i}]") for i, text in enumerate(texts) if i]
    assert got == [check_manifest_json(t, source="s", path=f"$[{i}]") for i, t in enumerate(texts)]


def test_an_invalid_text_is_refused_with_the_place_of_each_occurrence() -> None:
    text = b'{"apiVersion": "kernelindex.dev/v1alpha1", "kind": "SoftwareProject"}'
    checks = CheckPool("s", processes=2)
    checks.submit(text, "$[0]")
    with pytest.raises(InvalidManifest) as first:
        checks.result(text, "$[0]")
    with pytest.raises(InvalidManifest) as second:
        checks.result(text, "$[7]")
    assert "$[0]" in first.value.detail
    assert "$[7]" in second.value.detail


def test_a_refusal_found_by_a_worker_names_its_place() -> None:
    valid = _projects(2 * pool.MIN_SHARE)
    bad = b'{"apiVersion": "kernelindex.dev/v1alpha1", "kind": "SoftwareProject"}'
    texts = [*valid, bad]  # the last text: in the worker's share
    checks = CheckPool("s", processes=2)
    for i, text in enumerate(texts):
        checks.submit(text, f"$[{i}]")
    assert checks.result(valid[0], "$[0]").digest
    with pytest.raises(InvalidManifest) as refused:
        checks.result(bad, "$[99]")
    assert refused.value.detail.startswith("s: $[99]")
