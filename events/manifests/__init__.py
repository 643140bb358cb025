"""msgspec types for the 13 KernelIndex manifest kinds, and their validation.

``validate`` checks a decoded JSON/YAML value against its kind and returns the typed manifest;
the digests are computed from the (normalised) plain value, never from a re-encoding of the
typed one, so nothing the source wrote is lost or reordered.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

from events.errors import InvalidManifest
from events.manifests.common import (
    API_VERSION,
    DURATION_PATTERN,
    INSTANT_PATTERN,
    Manifest,
    Metadata,
)
from events.manifests.kernel_runs import BenchmarkProtocol, BenchmarkRun, ExecutionEnvironment
from events.manifests.kernels import (
    ImplementationRevision,
    OperationSpec,
    SoftwareProject,
    WorkloadCase,
    WorkloadSuite,
)
from events.manifests.serving import (
    ModelRevision,
    ServingConfiguration,
    ServingRun,
    ServingStackRevision,
    ServingWorkload,
)

AnyManifest = (
    BenchmarkRun
    | BenchmarkProtocol
    | ExecutionEnvironment
    | WorkloadCase
    | WorkloadSuite
    | ImplementationRevision
    | OperationSpec
    | SoftwareProject
    | ModelRevision
    | ServingStackRevision
    | ServingConfiguration
    | ServingWorkload
    | ServingRun
)

KINDS: dict[str, type[Manifest]] = {
    cls.__struct_config__.tag: cls  # type: ignore[misc]
    for cls in (
        BenchmarkRun,
        BenchmarkProtocol,
        ExecutionEnvironment,
        WorkloadCase,
        WorkloadSuite,
        ImplementationRevision,
        OperationSpec,
        SoftwareProject,
        ModelRevision,
        ServingStackRevision,
        ServingConfiguration,
        ServingWorkload,
        ServingRun,
    )
}

KIND_OF: dict[type[Manifest], str] = {cls: kind for kind, cls in KINDS.items()}

_AT = re.compile(r" - at `(\$[^`]*)`$")
ERROR_PATH = _AT  # where msgspec names the field in a validation message
_REGEX = re.compile(r"`str` matching regex '(.*)'", re.DOTALL)
# What the long patterns mean, in words (msgspec quotes the pattern itself).
_PATTERN_WORDS = {
    INSTANT_PATTERN: "an RFC 3339 instant in UTC ending in Z, e.g. 2026-04-14T09:30:00Z",
    DURATION_PATTERN: 'integer nanoseconds or a duration such as "0.008 ms"',
    r"^sha256:[0-9a-f]{64}\Z": "a digest sha256:<64 lowercase hex>",
    r"^[0-9a-f]{40}\Z": "a 40-hex git commit",
}


def readable(message: str) -> str:
    """A validation message with a long pattern replaced by what it means."""

    def words(match: re.Match[str]) -> str:
        pattern = match.group(1).replace("\\\\", "\\")
        meaning = _PATTERN_WORDS.get(pattern)
        return match.group(0) if meaning is None else meaning

    return _REGEX.sub(words, message)


def validate(value: Any, *, source: str = "<manifest>", path: str = "$") -> AnyManifest:
    """Check one decoded manifest against its kind's schema and return it typed.

    Raises:
        InvalidManifest: the value is not an object, names an unknown kind or apiVersion, lacks a
            required field, has an unknown field, or a field breaks its constraint. The message
            names the field as a JSON path (also in ``details["path"]``).
    """
    if not isinstance(value, dict):
        raise InvalidManifest(f"{source}: {path}: a manifest must be an object", path=path)
    kind = value.get("kind")
    if not isinstance(kind, str) or kind not in KINDS:  # a list or object is no kind either
        where = f"{path}.kind"
        known = ", ".join(sorted(KINDS))
        raise InvalidManifest(
            f"{source}: {where}: unknown kind {kind!r} (expected one of {known})", path=where
        )
    try:
        typed: AnyManifest = msgspec.convert(value, AnyManifest)
        return typed
    except msgspec.ValidationError as exc:
        message = str(exc)
        match = _AT.search(message)
        where = path + match.group(1)[1:] if match else path
        reason = readable(_AT.sub("", message))
        raise InvalidManifest(f"{source}: {where}: {reason}", path=where) from None


__all__ = [
    "API_VERSION",
    "ERROR_PATH",
    "KINDS",
    "KIND_OF",
    "AnyManifest",
    "BenchmarkProtocol",
    "BenchmarkRun",
    "ExecutionEnvironment",
    "ImplementationRevision",
    "Manifest",
    "Metadata",
    "ModelRevision",
    "OperationSpec",
    "ServingConfiguration",
    "ServingRun",
    "ServingStackRevision",
    "ServingWorkload",
    "SoftwareProject",
    "WorkloadCase",
    "WorkloadSuite",
    "readable",
    "validate",
]
