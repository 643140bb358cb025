"""The kernel manifest kinds: operations, workloads, implementations, protocols, environments, runs."""

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
    MetadataName,
    NonNegInt,
    NonNegNumber,
    PosInt,
    PosNumber,
    Ratio,
    SafeInt,
    Str50,
    Str100,
    Str200,
    Str500,
    Str1000,
    Str2000,
    Strict,
)

# --- OperationSpec -------------------------------------------------------------------------


class Axis(Strict, frozen=True):
    role: Literal["variable", "constant", "derived"]
    type: Literal["integer"]
    value: SafeInt | UnsetType = UNSET
    minimum: SafeInt | UnsetType = UNSET
    maximum: SafeInt | UnsetType = UNSET
    expression: (
        Annotated[str, Meta(max_length=200, pattern=r"^[a-z0-9_+\-*%/() ]+\Z")] | UnsetType
    ) = UNSET


class TensorSignature(Strict, frozen=True):
    shape: Annotated[list[NonNegInt | Ident], Meta(min_length=1)]
    dtype: Ident
    layout: Literal["row_major", "col_major", "contiguous", "strided"] | UnsetType = UNSET


class ScalarSignature(Strict, frozen=True):
    dtype: Ident


class Port(Strict, frozen=True):
    name: Ident
    tensor: TensorSignature | UnsetType = UNSET
    scalar: ScalarSignature | UnsetType = UNSET


class Semantics(Strict, frozen=True):
    mutation: Literal["none", "in_place", "destination"]
    determinism: Literal["deterministic", "nondeterministic", "unspecified"]
    expression: Str2000 | UnsetType = UNSET


class Reference(Strict, frozen=True):
    language: Ident
    artifact: Artifact | UnsetType = UNSET


class OperationSpecSpec(Strict, frozen=True):
    family: Annotated[str, Meta(max_length=100, pattern=r"^[a-z0-9][a-z0-9-]*\Z")]
    axes: dict[Ident, Axis]
    inputs: Annotated[list[Port], Meta(min_length=1)]
    outputs: Annotated[list[Port], Meta(min_length=1)]
    semantics: Semantics
    reference: Reference | UnsetType = UNSET


class OperationSpec(Manifest, frozen=True, tag="OperationSpec"):
    spec: OperationSpecSpec


# --- WorkloadCase / WorkloadSuite ----------------------------------------------------------


class TensorData(Strict, frozen=True):
    generator: Ident
    seed: NonNegInt | UnsetType = UNSET
    parameters: dict[Ident, float] | UnsetType = UNSET
    artifact: Artifact | UnsetType = UNSET


class TensorCase(Strict, frozen=True):
    shape: Annotated[list[NonNegInt], Meta(min_length=1)]
    dtype: Ident
    strides: list[SafeInt] | UnsetType = UNSET
    alignmentBytes: PosInt | UnsetType = UNSET
    data: TensorData | UnsetType = UNSET


class ScalarCase(Strict, frozen=True):
    dtype: Ident
    value: float


Policy = Literal["reject", "exact_match", "ignore"]


class CaseCorrectness(Strict, frozen=True):
    comparator: Ident
    maxAbsoluteError: NonNegNumber | UnsetType = UNSET
    maxRelativeError: NonNegNumber | UnsetType = UNSET
    requiredMatchedRatio: Ratio | UnsetType = UNSET
    nanPolicy: Policy | UnsetType = UNSET
    infinityPolicy: Policy | UnsetType = UNSET


class WorkloadCaseSpec(Strict, frozen=True):
    operationSpecDigest: Digest
    axes: dict[Ident, SafeInt]
    tensors: dict[Ident, TensorCase]
    correctness: CaseCorrectness
    scalars: dict[Ident, ScalarCase] | UnsetType = UNSET


class WorkloadCase(Manifest, frozen=True, tag="WorkloadCase"):
    spec: WorkloadCaseSpec


class SuiteCase(Strict, frozen=True):
    externalId: Str200
    axes: dict[Ident, SafeInt]


class SuiteCorrectness(Strict, frozen=True):
    comparator: Ident
    description: Str500 | UnsetType = UNSET


class Aggregation(Strict, frozen=True):
    metric: Ident
    statistic: Ident


class WorkloadSuiteSpec(Strict, frozen=True):
    operationSpecDigest: Digest
    cases: Annotated[list[SuiteCase], Meta(min_length=1)]
    correctness: SuiteCorrectness
    aggregation: Aggregation


class WorkloadSuite(Manifest, frozen=True, tag="WorkloadSuite"):
    spec: WorkloadSuiteSpec


# --- SoftwareProject -----------------------------------------------------------------------


class ProjectHost(Strict, frozen=True):
    kind: Literal["github", "huggingface", "gitlab", "other"]
    id: Str200


class ProjectPackage(Strict, frozen=True):
    ecosystem: Ident
    name: Str200


class SoftwareProjectSpec(Strict, frozen=True):
    name: Str200
    kind: Literal["library", "individual", "vendor"] | UnsetType = UNSET
    repository: Str2000 | UnsetType = UNSET
    homepage: Str2000 | UnsetType = UNSET
    host: ProjectHost | UnsetType = UNSET
    packages: list[ProjectPackage] | UnsetType = UNSET


class SoftwareProject(Manifest, frozen=True, tag="SoftwareProject"):
    spec: SoftwareProjectSpec


# --- ImplementationRevision ----------------------------------------------------------------


class ProjectRevision(Strict, frozen=True):
    repository: Str2000 | UnsetType = UNSET
    commit: Commit | UnsetType = UNSET
    version: Str100 | UnsetType = UNSET
    treeDigest: Digest | UnsetType = UNSET


class OperationRef(Strict, frozen=True):
    specDigest: Digest


class Callable(Strict, frozen=True):
    language: Ident
    path: Str500 | UnsetType = UNSET
    symbol: Str200 | UnsetType = UNSET
    interface: Ident | UnsetType = UNSET


class Support(Strict, frozen=True):
    hardwareArchitectures: list[Ident]
    dtypes: list[Ident]
    productsTested: list[Str100] | UnsetType = UNSET
    axes: list[Str200] | UnsetType = UNSET
    layouts: list[Str50] | UnsetType = UNSET


class SourceFile(Strict, frozen=True):
    contentDigest: Digest
    fileName: Str200 | UnsetType = UNSET
    sizeBytes: PosInt | UnsetType = UNSET


class Install(Strict, frozen=True):
    kind: Literal["git", "pip", "package", "container", "source"]
    repository: Str2000 | UnsetType = UNSET
    commit: Commit | UnsetType = UNSET
    package: Str200 | UnsetType = UNSET
    version: Str100 | UnsetType = UNSET
    command: Str1000 | UnsetType = UNSET


class BuildVariant(Strict, frozen=True):
    name: MetadataName
    install: Install
    requirements: dict[Ident, Str200] | UnsetType = UNSET


class LicenseEvidence(Strict, frozen=True):
    path: Str500
    digest: Digest | UnsetType = UNSET


class Licensing(Strict, frozen=True):
    declared: Str200 | UnsetType = UNSET
    concluded: Str200 | UnsetType = UNSET
    evidence: LicenseEvidence | UnsetType = UNSET


class ImplementationRevisionSpec(Strict, frozen=True):
    projectRevision: ProjectRevision
    operation: OperationRef
    callable: Callable
    support: Support
    licensing: Licensing
    source: SourceFile | UnsetType = UNSET
    buildVariants: list[BuildVariant] | UnsetType = UNSET


class ImplementationRevision(Manifest, frozen=True, tag="ImplementationRevision"):
    spec: ImplementationRevisionSpec


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


__all__ = [
    "BenchmarkProtocol",
    "BenchmarkRun",
    "ExecutionEnvironment",
    "ImplementationRevision",
    "OperationSpec",
    "SoftwareProject",
    "WorkloadCase",
    "WorkloadSuite",
]
