"""The structs of ``benchproof-harness/v1``: what a worker writes to a harness and reads back.

They mirror ``schemas/harness-input-v1.schema.json`` and ``schemas/harness-output-v1.schema.json``
field for field: unknown fields are refused (the manifests inside the input are free-form), and
samples are finite and positive.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Final, Literal

import msgspec
from msgspec import UNSET, Meta, UnsetType

__all__ = [
    "CONTRACT",
    "Correctness",
    "Environment",
    "HarnessInfo",
    "HarnessInput",
    "HarnessOutput",
    "HarnessOutputError",
    "read_output",
]

CONTRACT: Final = "benchproof-harness/v1"

Contract = Literal["benchproof-harness/v1"]
Digest = Annotated[str, Meta(pattern=r"^sha256:[0-9a-f]{64}\Z")]
Text200 = Annotated[str, Meta(min_length=1, max_length=200)]
SampleNs = Annotated[float, Meta(gt=0)]


class _Closed(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Base of the contract's objects: unknown fields are refused."""


class HarnessInput(_Closed, frozen=True):
    """The bundle a worker writes to a harness's stdin."""

    contract: Contract
    runDigest: Digest
    requestId: Digest
    minSamples: Annotated[int, Meta(ge=1)]
    timeLimitSeconds: Annotated[float, Meta(gt=0)]
    manifests: dict[str, dict[str, Any]]


class Correctness(_Closed, frozen=True):
    """The harness's correctness check: passed or not, and what it compared."""

    passed: bool
    detail: Annotated[str, Meta(max_length=4096)]


class Environment(_Closed, frozen=True):
    """Where the samples were taken (``msgspec.to_builtins`` gives the dict ``environment``
    matches, without ``vendor`` when it is unset)."""

    kind: Literal["cpu", "gpu"]
    model: Text200
    architecture: Text200
    vendor: Text200 | UnsetType = UNSET


class HarnessInfo(_Closed, frozen=True):
    """The harness that measured: its name and version."""

    name: Text200
    version: Text200


class HarnessOutput(_Closed, frozen=True):
    """The measurement a harness prints on stdout (exit 0)."""

    contract: Contract
    samplesNs: Annotated[tuple[SampleNs, ...], Meta(min_length=1)]
    correctness: Correctness
    environment: Environment
    harness: HarnessInfo

    def __post_init__(self) -> None:
        # JSON cannot carry infinity, but a harness building this struct in Python can, and
        # msgspec would encode it as null.
        if not all(math.isfinite(sample) for sample in self.samplesNs):
            raise ValueError("samplesNs must be finite")


class HarnessOutputError(ValueError):
    """A harness's stdout is not exactly one ``benchproof-harness/v1`` output object."""


_OUTPUT = msgspec.json.Decoder(HarnessOutput)


def read_output(stdout: bytes) -> HarnessOutput:
    """Decode a harness's whole stdout as one output object (whitespace around it is allowed).

    Raises:
        HarnessOutputError: stdout is empty, is not one JSON object (two objects, trailing
            text, malformed JSON), or the object breaks the contract (a missing or unknown
            field, another ``contract``, no samples, a sample that is not finite and > 0).
    """
    if not stdout.strip():
        raise HarnessOutputError("the harness printed nothing on stdout")
    try:
        return _OUTPUT.decode(stdout)
    except msgspec.DecodeError as error:
        raise HarnessOutputError(
            f"the harness's stdout is not one {CONTRACT} output object: {error}"
        ) from None
