"""The KernelIndex example manifests: every valid one is accepted, each invalid one refused with
a message naming the field; the seed run reproduces its published digests and keys."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from events import InvalidManifest, check_manifest, identify, parse_bundle, read_documents
from events.documents import KernelIdentity, check_manifest_json
from events.manifests import KINDS

VALID = [
    "benchmark-protocol",
    "benchmark-run",
    "execution-environment",
    "implementation-revision",
    "model-revision",
    "operation-spec",
    "serving-configuration",
    "serving-run",
    "serving-stack-revision",
    "serving-workload",
    "software-project",
    "workload-case",
    "workload-suite",
]


def test_thirteen_kinds() -> None:
    assert len(KINDS) == 13


@pytest.mark.parametrize("name", VALID)
def test_valid_example_is_accepted(examples_dir: Path, name: str) -> None:
    path = examples_dir / f"{name}.yaml"
    (doc,) = read_documents(path.read_bytes(), source=path.name)
    checked = check_manifest(doc, source=path.name)
    assert checked.digest.startswith("sha256:")
    assert checked.kind.lower() == name.replace("-", "")


@pytest.mark.parametrize(
    ("name", "field", "reason"),
    [
        ("ambiguous-duration", "$.spec.timing.latencyNs.median", "ambiguous"),
        ("bad-digest", "$.spec.operationSpecDigest", "sha256"),
        ("duplicate-key", None, "duplicate key 'name'"),
        ("unknown-field", "$.spec", "popularity"),
    ],
)
def test_invalid_example_is_refused(
    examples_dir: Path, name: str, field: str | None, reason: str
) -> None:
    path = examples_dir / "invalid" / f"{name}.yaml"

    def read_and_check() -> None:
        for doc in read_documents(path.read_bytes(), source=path.name):
            check_manifest(doc, source=path.name)

    with pytest.raises(InvalidManifest) as info:
        read_and_check()
    message = str(info.value)
    assert reason in message
    if field is not None:
        assert f": {field}:" in message
        assert info.value.details["path"] == field


def test_examples_reference_each_other(examples_dir: Path) -> None:
    """The examples form one graph: the run names the protocol, environment, workload and
    implementation by their digests."""
    digests = {}
    for name in VALID:
        path = examples_dir / f"{name}.yaml"
        (doc,) = read_documents(path.read_bytes(), source=path.name)
        digests[name] = check_manifest(doc, source=path.name)
    run = digests["benchmark-run"].manifest["spec"]
    assert run["protocolDigest"] == digests["benchmark-protocol"].digest
    assert run["environmentDigest"] == digests["execution-environment"].digest


def test_seed_run_digests(seed_manifest: dict[str, Any]) -> None:
    ident = identify(parse_bundle(seed_manifest, source="seed"), source="seed")
    assert isinstance(ident, KernelIdentity)
    assert (
        ident.runDigest == "sha256:5195388fd7c6a80d3089edc96ddebce288cc1703b1bfb949d3c9ca2c2c6fd74b"
    )
    assert (
        ident.protocolKey
        == "sha256:2964c5c4ed9cb0dcdc0f74674035bc71bf5e66620939e38441060f76434ed3e5"
    )
    assert (
        ident.environmentKey
        == "sha256:5296c820e166474e590abb1beaf7728cdfe0a4bde9bf55f8966a40f4f5401621"
    )
    assert ident.metricKey == "latency:mean:ns"
    assert ident.comparisonKey is None
    assert ident.unresolved == ["workload", "implementation", "operation"]


@pytest.mark.corpus
def test_seed_comparison_key_with_the_catalogs_workload(
    seed_manifest: dict[str, Any], catalog: dict[str, list[dict[str, Any]]]
) -> None:
    wanted = seed_manifest["run"]["spec"]["workloadDigest"]
    (workload,) = [w for w in catalog["workloads"] if w["workloadDigest"] == wanted]
    (operation,) = [o for o in catalog["operations"] if o["id"] == workload["operationId"]]
    bundle = {**seed_manifest, "workload": workload["manifest"], "operation": operation["manifest"]}
    ident = identify(parse_bundle(bundle, source="seed"), source="seed")
    assert isinstance(ident, KernelIdentity)
    assert (
        ident.operationDigest
        == "sha256:60ee31285eaf117c536c5345c1baf40bd813925b9e509c57daa9b99eab71539c"
    )
    assert ident.correctnessKey is not None
    assert ident.comparisonKey == (
        "sha256:b5a07d877d4aa9400dad13a88f1b4654bb2e32f324516242ada766a54ca56e34"
    )
    assert ident.unresolved == ["implementation"]


def test_declared_digest_must_match_bundled_manifest(seed_manifest: dict[str, Any]) -> None:
    protocol = dict(
        seed_manifest["protocol"],
        spec={**seed_manifest["protocol"]["spec"], "harness": {"name": "other"}},
    )
    with pytest.raises(InvalidManifest, match=r"\$\.run\.spec\.protocolDigest"):
        identify(parse_bundle({**seed_manifest, "protocol": protocol}, source="s"), source="s")


def test_bundle_role_must_hold_its_kind(seed_manifest: dict[str, Any]) -> None:
    with pytest.raises(InvalidManifest, match=r"\$\.protocol: expected BenchmarkProtocol"):
        parse_bundle({**seed_manifest, "protocol": seed_manifest["environment"]}, source="s")
    with pytest.raises(InvalidManifest, match="unknown bundle role"):
        parse_bundle({**seed_manifest, "extra": seed_manifest["environment"]}, source="s")


def test_invalid_bundle_member_names_its_path(seed_manifest: dict[str, Any]) -> None:
    env = seed_manifest["environment"]
    bad = {
        **env,
        "spec": {**env["spec"], "hardware": {**env["spec"]["hardware"], "vendor": "NVIDIA"}},
    }
    with pytest.raises(InvalidManifest, match=r"\$\.environment\.spec\.hardware\.vendor"):
        parse_bundle({**seed_manifest, "environment": bad}, source="s")


def test_pattern_errors_say_what_is_expected_in_words(seed_manifest: dict[str, Any]) -> None:
    run = seed_manifest["run"]
    bad = {**run, "spec": {**run["spec"], "observedAt": "2026-13-01T00:00:00Z"}}
    with pytest.raises(InvalidManifest) as info:
        check_manifest(bad, source="s")
    assert "RFC 3339 instant" in str(info.value) and "regex" not in str(info.value)
    bad = {**run, "spec": {**run["spec"], "protocolDigest": "sha256:XYZ"}}
    with pytest.raises(InvalidManifest) as info:
        check_manifest_json(json.dumps(bad).encode(), source="s")
    assert "sha256:<64 lowercase hex>" in str(info.value)
    assert info.value.details["path"] == "$.spec.protocolDigest"
