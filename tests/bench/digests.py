"""Issue 2: digests per second for a run bundle; our canonical encoder against msgspec's."""

from __future__ import annotations

from typing import Any

import msgspec
import rfc8785

from events import canonical_bytes, identify, parse_bundle
from tests.bench.common import line, rate
from tests.corpora import catalog_tables, shared_file


def _bundle() -> dict[str, Any]:
    seed: dict[str, Any] = msgspec.json.decode(shared_file("seed-manifest.json").read_bytes())
    tables = catalog_tables()
    wanted = seed["run"]["spec"]["workloadDigest"]
    workload = next(w for w in tables["workloads"] if w["workloadDigest"] == wanted)
    operation = next(o for o in tables["operations"] if o["id"] == workload["operationId"])
    return {**seed, "workload": workload["manifest"], "operation": operation["manifest"]}


def main() -> None:
    print("digests (issue 2)")
    bundle = _bundle()
    per_bundle = rate(lambda: identify(parse_bundle(bundle, source="b"), source="b"), n=2000)
    line("run bundle identity (validate+normalise+6 digests)", per_bundle, "bundles/s")
    # What a digest canonicalises: the identity body {apiVersion, kind, spec} of each run.
    runs = [
        {k: r["manifest"]["run"][k] for k in ("apiVersion", "kind", "spec")}
        for r in catalog_tables()["benchmark_runs"][:2000]
    ]
    plain = msgspec.json.Encoder()

    def ours() -> None:
        for r in runs:
            canonical_bytes(r)

    def theirs() -> None:
        for r in runs:
            plain.encode(r)

    def reference() -> None:
        for r in runs:
            rfc8785.dumps(r)

    ours_rate = rate(ours, n=1) * len(runs)
    plain_rate = rate(theirs, n=1) * len(runs)
    ref_rate = rate(reference, n=1) * len(runs)
    line("canonical_bytes (RFC 8785), catalog run bodies", ours_rate, "manifests/s")
    line("msgspec.json.encode (plain, not canonical)", plain_rate, "manifests/s")
    line("rfc8785.dumps (reference implementation)", ref_rate, "manifests/s")
    line("ratio ours / msgspec plain", ours_rate / plain_rate, "x")
    line("ratio ours / rfc8785 reference", ours_rate / ref_rate, "x")
