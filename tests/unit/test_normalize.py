"""KernelIndex's normalisations: durations to integer ns, set-like lists sorted, nothing more."""

from __future__ import annotations

import pytest

from events.errors import InvalidManifest
from events.normalize import duration_ns, normalize


@pytest.mark.parametrize(
    ("text", "ns"),
    [
        ("0.008 ms", 8_000),
        ("8120", None),
        ("8120 ns", 8_120),
        ("8120ns", 8_120),
        ("1.5 us", 1_500),
        ("1.5 µs", 1_500),
        ("2 s", 2_000_000_000),
        ("0.000001 s", 1_000),
        ("1.000 ms", 1_000_000),
    ],
)
def test_durations(text: str, ns: int | None) -> None:
    if ns is None:
        with pytest.raises(InvalidManifest, match="not a duration"):
            duration_ns(text)
    else:
        assert duration_ns(text) == ns


@pytest.mark.parametrize("text", ["0.0000005 ms", "1.5 ns", "0.1 ns"])
def test_ambiguous_durations_are_refused(text: str) -> None:
    with pytest.raises(InvalidManifest, match="ambiguous"):
        duration_ns(text, path="$.spec.timing.latencyNs.median")


def test_too_long_duration_is_refused() -> None:
    with pytest.raises(InvalidManifest, match="2\\*\\*53"):
        duration_ns("9007200 s")


def test_greek_mu_is_not_the_micro_sign() -> None:
    with pytest.raises(InvalidManifest):
        duration_ns("1 \u03bcs")


def test_run_latencies_and_confidence_interval() -> None:
    run = {
        "kind": "BenchmarkRun",
        "spec": {
            "timing": {
                "primaryStatistic": "median",
                "latencyNs": {"median": "8.12 us", "mean": 8200, "confidence95": ["8 us", 8300]},
            },
            "observedAt": "2026-08-01T12:00:00.000Z",
        },
    }
    out = normalize(run)
    assert out["spec"]["timing"]["latencyNs"] == {
        "median": 8120,
        "mean": 8200,
        "confidence95": [8000, 8300],
    }
    assert out["spec"]["observedAt"] == "2026-08-01T12:00:00.000Z"
    assert run["spec"]["timing"]["latencyNs"]["median"] == "8.12 us"  # input untouched


def test_protocol_warmup_duration() -> None:
    protocol = {"kind": "BenchmarkProtocol", "spec": {"measurement": {"warmupDuration": "0.5 s"}}}
    assert normalize(protocol)["spec"]["measurement"]["warmupDuration"] == 500_000_000


def test_implementation_support_lists_are_sets_and_nothing_else() -> None:
    impl = {
        "kind": "ImplementationRevision",
        "spec": {
            "support": {
                "hardwareArchitectures": ["sm_90", "sm_100", "sm_90"],
                "dtypes": ["fp16", "bf16"],
                "axes": ["b", "a"],
                "productsTested": ["Z", "A"],
                "layouts": ["row_major", "col_major"],
            },
            "buildVariants": [{"name": "z"}, {"name": "a"}],
        },
    }
    out = normalize(impl)["spec"]
    assert out["support"] == {
        "hardwareArchitectures": ["sm_100", "sm_90"],
        "dtypes": ["bf16", "fp16"],
        "axes": ["a", "b"],
        "productsTested": ["A", "Z"],
        "layouts": ["col_major", "row_major"],
    }
    assert out["buildVariants"] == [{"name": "z"}, {"name": "a"}]


def test_other_lists_keep_their_order() -> None:
    workload = {"kind": "WorkloadCase", "spec": {"tensors": {"x": {"shape": [4, 2]}}}}
    assert normalize(workload) is workload
