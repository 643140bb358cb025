"""The kernel manifest kinds that describe a measurement: protocols, environments and runs
(``kernels`` has what is measured)."""

from __future__ import annotations

from typing import Annotated, Literal

from msgspec import UNSET, Meta, UnsetType

from events.manifests.common import (
    Artifact,
    Commit,
    Digest,
    Duration,
    Ident,
    Instant,
    Manifest,
    Measurement,
    NonNegInt,
    NonNegNumber,
    PosInt,
    PosNumber,
    Ratio,
    Str100,
    Str200,
    Str500,
    Str1000,
    Str2000,
    Strict,
)

# --- BenchmarkProtocol ---------------------------------------------------------------------


class Harness(Strict, frozen=True):
    name: Str200
    version: Str100 | UnsetType = UNSET
    repository: Str2000 | UnsetType = UNSET
    commit: Commit | UnsetType = UNSET


class MeasurementPolicy(Strict, frozen=True):
    timer: Ident
    primaryStatistic: Ident
    synchronization: Ident | UnsetType = UNSET
    compileIncluded: bool | UnsetType = UNSET
    setupIncluded: bool | UnsetType = UNSET
    warmupIterations: NonNegInt | UnsetType = UNSET
    warmupDuration: Duration | UnsetType = UNSET
    measuredIterations: PosInt | UnsetType = UNSET
    samples: PosInt | UnsetType = UNSET
    inputRegeneration: Ident | UnsetType = UNSET
    outlierPolicy: Str500 | UnsetType = UNSET


class ProtocolCorrectness(Strict, frozen=True):
    reference: Str500
    comparator: Ident


class DevicePolicy(Strict, frozen=True):
    clocksLocked: bool | UnsetType = UNSET
    powerLimitWatts: PosNumber | UnsetType = UNSET
    persistenceMode: bool | UnsetType = UNSET


class Comparability(Strict, frozen=True):
    family: Ident
    notes: Str1000 | UnsetType = UNSET


class BenchmarkProtocolSpec(Strict, frozen=True):
    harness: Harness
    measurement: MeasurementPolicy
    correctness: ProtocolCorrectness | UnsetType = UNSET
    devicePolicy: DevicePolicy | UnsetType = UNSET
    comparability: Comparability | UnsetType = UNSET


class BenchmarkProtocol(Manifest, frozen=True, tag="BenchmarkProtocol"):
    spec: BenchmarkProtocolSpec


# --- ExecutionEnvironment ------------------------------------------------------------------


class Hardware(Strict, frozen=True):
    vendor: Ident
    product: Str200
    architecture: Ident
    formFactor: Str100 | UnsetType = UNSET
    memoryBytes: PosInt | UnsetType = UNSET
    count: PosInt | UnsetType = UNSET
    interconnect: Str200 | UnsetType = UNSET


class Framework(Strict, frozen=True):
    name: Ident
    version: Str100


class Software(Strict, frozen=True):
    operatingSystem: Str200 | UnsetType = UNSET
    kernel: Str200 | UnsetType = UNSET
    driver: Str100 | UnsetType = UNSET
    cudaToolkit: Str100 | UnsetType = UNSET
    compiler: Str200 | UnsetType = UNSET
    framework: Framework | UnsetType = UNSET
    libraries: dict[Ident, Str100] | UnsetType = UNSET


class Settings(Strict, frozen=True):
    clocksLocked: bool | UnsetType = UNSET
    powerLimitWatts: PosNumber | UnsetType = UNSET
    persistenceMode: bool | UnsetType = UNSET
    eccEnabled: bool | UnsetType = UNSET
    environmentVariables: dict[Str200, Str500] | UnsetType = UNSET


class ExecutionEnvironmentSpec(Strict, frozen=True):
    hardware: Hardware
    software: Software
    settings: Settings | UnsetType = UNSET
    imageDigest: Digest | UnsetType = UNSET


class ExecutionEnvironment(Manifest, frozen=True, tag="ExecutionEnvironment"):
    spec: ExecutionEnvironmentSpec


# --- BenchmarkRun --------------------------------------------------------------------------


class RunCorrectness(Strict, frozen=True):
    comparator: Ident
    maximumAbsoluteError: NonNegNumber | UnsetType = UNSET
    maximumRelativeError: NonNegNumber | UnsetType = UNSET
    matchedRatio: Ratio | UnsetType = UNSET


class LatencyNs(Strict, frozen=True):
    median: Duration | UnsetType = UNSET
    mean: Duration | UnsetType = UNSET
    p05: Duration | UnsetType = UNSET
    p95: Duration | UnsetType = UNSET
    minimum: Duration | UnsetType = UNSET
    maximum: Duration | UnsetType = UNSET
    mad: Duration | UnsetType = UNSET
    confidence95: tuple[Duration, Duration] | UnsetType = UNSET


class Timing(Strict, frozen=True):
    primaryStatistic: Ident
    latencyNs: LatencyNs
    samples: PosInt | UnsetType = UNSET
    rawSamples: Artifact | UnsetType = UNSET


class RunSourceNative(Strict, frozen=True):
    source: Annotated[str, Meta(max_length=100, pattern=r"^[a-z0-9][a-z0-9-]*\Z")]
    benchmark: Str200 | UnsetType = UNSET
    externalId: Str500 | UnsetType = UNSET
    metrics: dict[Ident, float] | UnsetType = UNSET


class HarnessRef(Strict, frozen=True):
    repository: Str2000
    commit: Commit


class Evidence(Strict, frozen=True):
    logs: Artifact | UnsetType = UNSET
    rawSamples: Artifact | UnsetType = UNSET
    harness: HarnessRef | UnsetType = UNSET


RunStatus = Literal[
    "passed",
    "incorrect_shape",
    "incorrect_dtype",
    "incorrect_numerical",
    "compile_error",
    "runtime_error",
    "timeout",
    "resource_exceeded",
    "invalid_reference",
    "policy_violation",
    "suspected_reward_hack",
    "incomplete_evidence",
    "revoked",
]


class BenchmarkRunSpec(Strict, frozen=True):
    implementationDigest: Digest
    workloadDigest: Digest
    protocolDigest: Digest
    environmentDigest: Digest
    status: RunStatus
    observedAt: Instant
    correctness: RunCorrectness | UnsetType = UNSET
    timing: Timing | UnsetType = UNSET
    measurements: list[Measurement] | UnsetType = UNSET
    sourceNative: RunSourceNative | UnsetType = UNSET
    evidence: Evidence | UnsetType = UNSET


class BenchmarkRun(Manifest, frozen=True, tag="BenchmarkRun"):
    spec: BenchmarkRunSpec


__all__ = ["BenchmarkProtocol", "BenchmarkRun", "ExecutionEnvironment"]
