"""The golden corpus: every digest and key of KernelIndex's catalog export, recomputed.

The export (``kernelindex-catalog-2026-08-16``) stores the digests and keys KernelIndex computed;
each is recomputed here from the manifests alone, through the same code the CLI uses.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from events import check_manifest, identify, parse_bundle
from events.documents import KernelIdentity, ServingIdentity

pytestmark = pytest.mark.corpus

Tables = dict[str, list[dict[str, Any]]]


def _by_id(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {r["id"]: r for r in rows}


def test_every_benchmark_run(catalog: Tables) -> None:
    workloads = _by_id(catalog["workloads"])
    operations = _by_id(catalog["operations"])
    implementations = _by_id(catalog["implementations"])
    ok: Counter[str] = Counter()
    runs = catalog["benchmark_runs"]
    for row in runs:
        workload = workloads[row["workloadId"]]
        bundle = {
            **row["manifest"],
            "workload": workload["manifest"],
            "operation": operations[workload["operationId"]]["manifest"],
            "implementation": implementations[row["implementationId"]]["manifest"],
        }
        ident = identify(parse_bundle(bundle, source=row["id"]), source=row["id"])
        assert isinstance(ident, KernelIdentity)
        ok["runDigest"] += ident.runDigest == row["runDigest"]
        ok["protocolKey"] += ident.protocolKey == row["protocolKey"]
        ok["environmentKey"] += ident.environmentKey == row["environmentKey"]
        ok["correctnessKey"] += ident.correctnessKey == row["correctnessKey"]
        ok["comparisonKey"] += ident.comparisonKey == row["comparisonKey"]
    assert len(runs) == 7857
    assert ok == dict.fromkeys(
        ("runDigest", "protocolKey", "environmentKey", "correctnessKey", "comparisonKey"), 7857
    )


@pytest.mark.parametrize(
    ("table", "column", "count"),
    [
        ("workloads", "workloadDigest", 5627),
        ("implementations", "implementationDigest", 4250),
        ("operations", "semanticDigest", 449),
        ("model_revisions", "modelDigest", 6),
        ("serving_stack_revisions", "stackDigest", 71),
        ("serving_configurations", "configurationDigest", 130),
        ("serving_workloads", "workloadDigest", 17),
    ],
)
def test_every_shared_manifest(catalog: Tables, table: str, column: str, count: int) -> None:
    rows = catalog[table]
    same = sum(check_manifest(r["manifest"], source=r["id"]).digest == r[column] for r in rows)
    assert (same, len(rows)) == (count, count)


def test_every_serving_run(catalog: Tables) -> None:
    models = _by_id(catalog["model_revisions"])
    configurations = _by_id(catalog["serving_configurations"])
    workloads = _by_id(catalog["serving_workloads"])
    ok: Counter[str] = Counter()
    runs = catalog["serving_runs"]
    for row in runs:
        bundle = {
            "run": row["manifest"],
            "model": models[row["modelRevisionId"]]["manifest"],
            "configuration": configurations[row["configurationId"]]["manifest"],
            "workload": workloads[row["workloadId"]]["manifest"],
        }
        ident = identify(parse_bundle(bundle, source=row["id"]), source=row["id"])
        assert isinstance(ident, ServingIdentity)
        ok["runDigest"] += ident.runDigest == row["runDigest"]
        ok["cohortKey"] += ident.cohortKey == row["cohortKey"]
        ok["protocolKey"] += ident.protocolKey == row["protocolKey"]
        ok["metricSetKey"] += ident.metricSetKey == row["metricSetKey"]
    assert len(runs) == 722
    assert ok == dict.fromkeys(("runDigest", "cohortKey", "protocolKey", "metricSetKey"), 722)


def test_checking_from_json_text_gives_the_same_digests(catalog: Tables) -> None:
    import msgspec

    from events.documents import check_manifest_json

    encoder = msgspec.json.Encoder()
    manifests = [r["manifest"]["run"] for r in catalog["benchmark_runs"]]
    manifests += [
        r["manifest"]
        for table in ("workloads", "implementations", "operations", "serving_runs")
        for r in catalog[table]
    ]
    for manifest in manifests:
        from_value = check_manifest(manifest, source="v")
        from_text = check_manifest_json(encoder.encode(manifest), source="t")
        assert (from_text.digest, from_text.kind, from_text.name) == (
            from_value.digest,
            from_value.kind,
            from_value.name,
        )
        assert from_text.manifest == from_value.manifest
