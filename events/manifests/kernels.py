"""The kernel manifest kinds that describe what is measured: operations, workloads, software
projects and implementations (``kernel_runs`` has protocols, environments and runs)."""

from __future__ import annotations

from typing import Annotated, Literal

from msgspec import UNSET, Meta, UnsetType

from events.manifests.common import (
    Artifact,
    Commit,
    Digest,
    Ident,
    Manifest,
    MetadataName,
    NonNegInt,
    NonNegNumber,
    PosInt,
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


__all__ = [
    "ImplementationRevision",
    "OperationSpec",
    "SoftwareProject",
    "WorkloadCase",
    "WorkloadSuite",
]
