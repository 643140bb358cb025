"""``benchproof digest FILE`` through the installed console script."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.cli.conftest import Runner
from tests.corpora import shared_file


def test_seed_digests(bp: Runner) -> None:
    out = bp("digest", shared_file("seed-manifest.json"))
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert got["runDigest"].startswith("sha256:5195388fd7c6a80d3089edc")
    assert got["protocolKey"].startswith("sha256:2964c5c4")
    assert got["environmentKey"].startswith("sha256:5296c820")
    assert got["comparisonKey"] is None
    assert got["primary"] == {
        "metric": "latency",
        "statistic": "mean",
        "unit": "ns",
        "value": 1093964,
    }


def test_bundle_with_workload_gives_comparison_key(
    bp: Runner,
    tmp_path: Path,
    seed_manifest: dict[str, Any],
    catalog: dict[str, list[dict[str, Any]]],
) -> None:
    wanted = seed_manifest["run"]["spec"]["workloadDigest"]
    (workload,) = [w for w in catalog["workloads"] if w["workloadDigest"] == wanted]
    (operation,) = [o for o in catalog["operations"] if o["id"] == workload["operationId"]]
    path = tmp_path / "bundle.json"
    path.write_text(
        json.dumps(
            {**seed_manifest, "workload": workload["manifest"], "operation": operation["manifest"]}
        )
    )
    out = bp("digest", path)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["comparisonKey"] == (
        "sha256:b5a07d877d4aa9400dad13a88f1b4654bb2e32f324516242ada766a54ca56e34"
    )


def test_yaml_manifest(bp: Runner, examples_dir: Path) -> None:
    out = bp("digest", examples_dir / "workload-case.yaml")
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert got["kind"] == "WorkloadCase"
    assert got["correctnessKey"].startswith("sha256:")


def test_invalid_input_exits_2_with_one_line(bp: Runner, tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(
        '{"apiVersion":"kernelindex.dev/v1alpha1","kind":"BenchmarkRun","spec":{"status":42}}'
    )
    out = bp("digest", bad)
    assert out.returncode == 2
    assert out.stdout == ""
    assert out.stderr.count("\n") == 1
    assert "$.spec.status" in out.stderr


def test_garbage_and_usage_errors_exit_2(bp: Runner, tmp_path: Path) -> None:
    junk = tmp_path / "junk.json"
    junk.write_text("{nope")
    for args in (("digest", junk), ("digest",), ("no-such-command",)):
        out = bp(*args)
        assert out.returncode == 2, args
        assert out.stderr.count("\n") == 1, out.stderr


def test_missing_file_exits_3(bp: Runner, tmp_path: Path) -> None:
    out = bp("digest", tmp_path / "absent.json")
    assert out.returncode == 3
    assert "no such file" in out.stderr


def test_invalid_examples_exit_2(bp: Runner, examples_dir: Path) -> None:
    for path in sorted((examples_dir / "invalid").glob("*.yaml")):
        out = bp("digest", path)
        assert out.returncode == 2, path.name
        assert path.name in out.stderr
