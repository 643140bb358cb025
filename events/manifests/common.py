"""Building blocks shared by every KernelIndex manifest kind (``kernelindex.dev/v1alpha1``).

The constraints mirror the published JSON Schemas (``registry/schemas/*.schema.json``). Patterns
end in ``\\Z`` rather than ``$``: in Python ``$`` also matches before a trailing newline, which the
ECMAScript patterns of the schemas do not allow.
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec
from msgspec import UNSET, Meta, UnsetType

API_VERSION = "kernelindex.dev/v1alpha1"
MAX_SAFE = 9007199254740991

ApiVersion = Literal["kernelindex.dev/v1alpha1"]
Digest = Annotated[str, Meta(pattern=r"^sha256:[0-9a-f]{64}\Z")]
Commit = Annotated[str, Meta(pattern=r"^[0-9a-f]{40}\Z")]
Ident = Annotated[str, Meta(pattern=r"^[a-z][a-z0-9_]*\Z")]
Slug = Annotated[str, Meta(pattern=r"^[a-z0-9][a-z0-9-]*\Z")]
SafeInt = Annotated[int, Meta(ge=-MAX_SAFE, le=MAX_SAFE)]
NonNegInt = Annotated[int, Meta(ge=0, le=MAX_SAFE)]
PosInt = Annotated[int, Meta(gt=0, le=MAX_SAFE)]
PosNumber = Annotated[float, Meta(gt=0)]
NonNegNumber = Annotated[float, Meta(ge=0)]
Ratio = Annotated[float, Meta(ge=0, le=1)]

# Durations are integer nanoseconds or strings such as "0.008 ms" (normalised before digesting).
DURATION_PATTERN = r"^[0-9]+(\.[0-9]+)?\s?(ns|us|µs|ms|s)\Z"
Duration = NonNegInt | Annotated[str, Meta(pattern=DURATION_PATTERN)]

# RFC 3339 instants in UTC with a literal Z; the calendar check is the schema's own pattern.
INSTANT_PATTERN = (
    r"^(?:(?:[0-9][0-9][2468][048]|[0-9][0-9][13579][26]|[0-9][0-9]0[48]|[02468][048]00"
    r"|[13579][26]00)-02-29|[0-9]{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])"
    r"|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)|(?:02)-(?:0[1-9]|1[0-9]|2[0-8])))"
    r"T(?:(?:[01][0-9]|2[0-3]):[0-5][0-9](?::[0-5][0-9](?:\.[0-9]+)?)?(?:Z))\Z"
)
Instant = Annotated[str, Meta(pattern=INSTANT_PATTERN)]


# msgspec counts code points where JavaScript counts UTF-16 units; the limits are generous
# (100 to 2000) and no real manifest comes near them, so the difference is accepted.
Str50 = Annotated[str, Meta(max_length=50)]
Str100 = Annotated[str, Meta(max_length=100)]
Str120 = Annotated[str, Meta(max_length=120)]
Str200 = Annotated[str, Meta(max_length=200)]
Str500 = Annotated[str, Meta(max_length=500)]
Str1000 = Annotated[str, Meta(max_length=1000)]
Str2000 = Annotated[str, Meta(max_length=2000)]
MetadataName = Annotated[str, Meta(max_length=200, pattern=r"^[a-z0-9][a-z0-9._-]*\Z")]


class Strict(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Base of every manifest object: unknown fields are refused (KernelIndex objects are strict)."""


class Author(Strict, frozen=True):
    name: Str200 | UnsetType = UNSET
    github: Str100 | UnsetType = UNSET


class SourceRef(Strict, frozen=True):
    url: Str2000


class Metadata(Strict, frozen=True):
    """Descriptive data. It never enters a digest."""

    name: MetadataName
    title: Str200 | UnsetType = UNSET
    description: Str2000 | UnsetType = UNSET
    labels: dict[Ident, Str200] | UnsetType = UNSET
    authors: list[Author] | UnsetType = UNSET
    sourceRefs: list[SourceRef] | UnsetType = UNSET


class Artifact(Strict, frozen=True):
    uri: Str2000
    digest: Digest


class Manifest(Strict, frozen=True, tag_field="kind"):
    """A KernelIndex manifest; subclasses set ``tag`` to their ``kind``."""

    apiVersion: ApiVersion
    metadata: Metadata


class Measurement(Strict, frozen=True):
    metric: Ident
    unit: Ident
    statistic: Ident
    value: float
    sampleCount: PosInt | UnsetType = UNSET
