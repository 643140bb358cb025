"""The serving manifest kinds (MLPerf-style results): models, stacks, configurations, workloads, runs."""

from __future__ import annotations

from typing import Annotated, Literal

from msgspec import UNSET, Meta, UnsetType

from events.manifests.common import (
    Commit,
    Digest,
    Ident,
    Instant,
    Manifest,
    Measurement,
    PosInt,
    PosNumber,
    Str100,
    Str120,
    Str200,
    Str500,
    Str2000,
    Strict,
)

# --- ModelRevision -------------------------------------------------------------------------


class ModelRepository(Strict, frozen=True):
    host: Literal["huggingface", "github", "other"]
    id: Str200
    revision: Str100 | UnsetType = UNSET


class Tokenizer(Strict, frozen=True):
    name: Str200 | UnsetType = UNSET
    revision: Str100 | UnsetType = UNSET
    digest: Digest | UnsetType = UNSET


class ModelRevisionSpec(Strict, frozen=True):
    model: Str200
    repository: ModelRepository | UnsetType = UNSET
    tokenizer: Tokenizer | UnsetType = UNSET
    architecture: Str100 | UnsetType = UNSET
    parameterCount: PosInt | UnsetType = UNSET
    contextLength: PosInt | UnsetType = UNSET
    modality: Ident | UnsetType = UNSET
    license: Str200 | UnsetType = UNSET


class ModelRevision(Manifest, frozen=True, tag="ModelRevision"):
    spec: ModelRevisionSpec


# --- ServingStackRevision ------------------------------------------------------------------


class StackProject(Strict, frozen=True):
    name: Str200
    repository: Str2000 | UnsetType = UNSET


class StackRevision(Strict, frozen=True):
    version: Str120 | UnsetType = UNSET
    commit: Commit | UnsetType = UNSET
    containerDigest: Digest | UnsetType = UNSET


class ServingStackRevisionSpec(Strict, frozen=True):
    project: StackProject
    revision: StackRevision
    backends: Annotated[list[Ident], Meta(max_length=8)] | UnsetType = UNSET
    apiProtocol: Ident | UnsetType = UNSET
    license: Str200 | UnsetType = UNSET


class ServingStackRevision(Manifest, frozen=True, tag="ServingStackRevision"):
    spec: ServingStackRevisionSpec


# --- ServingConfiguration ------------------------------------------------------------------


class Parallelism(Strict, frozen=True):
    tensor: PosInt | UnsetType = UNSET
    pipeline: PosInt | UnsetType = UNSET
    data: PosInt | UnsetType = UNSET
    expert: PosInt | UnsetType = UNSET
    context: PosInt | UnsetType = UNSET


class KvCache(Strict, frozen=True):
    dtype: Ident | UnsetType = UNSET
    capacityTokens: PosInt | UnsetType = UNSET


class Limits(Strict, frozen=True):
    maxSequenceLength: PosInt | UnsetType = UNSET
    maxBatchSize: PosInt | UnsetType = UNSET
    maxNumTokens: PosInt | UnsetType = UNSET


class Speculative(Strict, frozen=True):
    method: Ident
    draftModel: Str200 | UnsetType = UNSET


class ServingConfigurationSpec(Strict, frozen=True):
    stackDigest: Digest
    dtype: Ident | UnsetType = UNSET
    quantization: Ident | UnsetType = UNSET
    parallelism: Parallelism | UnsetType = UNSET
    attentionBackend: Ident | UnsetType = UNSET
    kvCache: KvCache | UnsetType = UNSET
    limits: Limits | UnsetType = UNSET
    speculative: Speculative | UnsetType = UNSET
    options: dict[Ident, Str500] | UnsetType = UNSET


class ServingConfiguration(Manifest, frozen=True, tag="ServingConfiguration"):
    spec: ServingConfigurationSpec


# --- ServingWorkload -----------------------------------------------------------------------


class Dataset(Strict, frozen=True):
    name: Str200
    digest: Digest | UnsetType = UNSET


class TokenDistribution(Strict, frozen=True):
    distribution: Ident
    mean: PosNumber | UnsetType = UNSET
    maximum: PosInt | UnsetType = UNSET
    artifactDigest: Digest | UnsetType = UNSET


class Tokens(Strict, frozen=True):
    prompt: TokenDistribution | UnsetType = UNSET
    output: TokenDistribution | UnsetType = UNSET


class Slo(Strict, frozen=True):
    metric: Ident
    statistic: Ident
    operator: Literal["<=", "<"]
    value: PosNumber
    unit: Ident


class Sampling(Strict, frozen=True):
    temperature: float | UnsetType = UNSET
    seeded: bool | UnsetType = UNSET


class ServingWorkloadSpec(Strict, frozen=True):
    streaming: bool
    loadGeneration: Literal["open_loop", "closed_loop", "offline"]
    dataset: Dataset | UnsetType = UNSET
    tokens: Tokens | UnsetType = UNSET
    arrival: Ident | UnsetType = UNSET
    requestRatePerSecond: PosNumber | UnsetType = UNSET
    slo: Annotated[list[Slo], Meta(max_length=8)] | UnsetType = UNSET
    sampling: Sampling | UnsetType = UNSET
    durationSeconds: PosInt | UnsetType = UNSET
    requestCount: PosInt | UnsetType = UNSET


class ServingWorkload(Manifest, frozen=True, tag="ServingWorkload"):
    spec: ServingWorkloadSpec


# --- ServingRun ----------------------------------------------------------------------------


class Topology(Strict, frozen=True):
    acceleratorModel: Str200
    acceleratorsPerNode: PosInt
    nodeCount: PosInt
    acceleratorVendor: Ident | UnsetType = UNSET
    interconnect: Str200 | UnsetType = UNSET


class ServingHarness(Strict, frozen=True):
    name: Ident
    version: Str100


class ServingSourceNative(Strict, frozen=True):
    source: Annotated[str, Meta(max_length=100, pattern=r"^[a-z0-9][a-z0-9-]*\Z")]
    benchmark: Str200
    scenario: Ident
    division: Ident
    category: Ident
    externalId: Str500
    metrics: dict[Ident, float | Str500] | UnsetType = UNSET


class ServingRunSpec(Strict, frozen=True):
    modelDigest: Digest
    configurationDigest: Digest
    workloadDigest: Digest
    topology: Topology
    harness: ServingHarness
    qualityPolicy: Ident
    status: Literal["valid", "invalid", "incomplete_evidence"]
    measurements: Annotated[list[Measurement], Meta(min_length=1, max_length=64)]
    observedAt: Instant
    placement: Ident | UnsetType = UNSET
    sourceNative: ServingSourceNative | UnsetType = UNSET
    caveats: Annotated[list[Str500], Meta(max_length=16)] | UnsetType = UNSET


class ServingRun(Manifest, frozen=True, tag="ServingRun"):
    spec: ServingRunSpec


__all__ = [
    "ModelRevision",
    "ServingConfiguration",
    "ServingRun",
    "ServingStackRevision",
    "ServingWorkload",
]
