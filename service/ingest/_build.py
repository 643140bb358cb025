"""Shared builders for the source importers (liger, mlperf, kernelbench, sol-execbench).

Each importer turns a source row into plain KernelIndex manifests (dicts) and checks them with
``events.check_manifest``; the helpers here name things (metadata names, identifiers), convert
units and instants, describe GPUs, and remember manifests already checked (a protocol or an
environment is shared by thousands of rows, and checking is the costly part of a plan).
"""

from __future__ import annotations

import hashlib
import re
from datetime import UTC, datetime
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation
from typing import Any

import msgspec

from events import InvalidManifest, check_manifest
from events.documents import Checked
from events.manifests import API_VERSION

__all__ = [
    "Checker",
    "RowError",
    "dtype_name",
    "family",
    "gpu_hardware",
    "ident",
    "instant",
    "load_json",
    "manifest",
    "ms_to_ns",
    "number",
    "short_hash",
    "slug",
]

_ENCODE = msgspec.json.Encoder()
_DECODE = msgspec.json.Decoder()
_NOT_NAME = re.compile(r"[^a-z0-9._-]+")
_NOT_FAMILY = re.compile(r"[^a-z0-9-]+")
_NOT_IDENT = re.compile(r"[^a-z0-9_]+")
_RFC3339_Z = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?Z\Z")
_MS_TO_NS = Decimal(1_000_000)


class RowError(ValueError):
    """A source row that cannot be read; the importer records it as rejected, with this reason."""


def slug(text: str, *, limit: int = 200) -> str:
    """A metadata name (``^[a-z0-9][a-z0-9._-]*$``, at most ``limit`` characters) for ``text``."""
    out = _NOT_NAME.sub("-", text.lower()).strip("-._")[:limit].rstrip("-._")
    return out or "x"


def family(text: str) -> str:
    """An operation family (``^[a-z0-9][a-z0-9-]*$``, at most 100 characters) for ``text``."""
    out = _NOT_FAMILY.sub("-", text.lower()).strip("-")[:100].rstrip("-")
    return out or "other"


def ident(text: str) -> str:
    """An identifier (``^[a-z][a-z0-9_]*$``) for ``text``: lower case, other characters become
    ``_``; a leading digit gets an ``x`` in front."""
    out = _NOT_IDENT.sub("_", text.lower()).strip("_")
    if not out:
        return "x"
    return out if out[0].isalpha() else "x" + out


def short_hash(text: str, length: int = 10) -> str:
    """The first ``length`` hex digits of SHA-256 of ``text`` (to keep long names unique)."""
    return hashlib.sha256(text.encode()).hexdigest()[:length]


def number(value: Any, what: str) -> float:
    """A finite, non-negative number read from a source value (a JSON number or a string); a
    JSON integer stays an integer.

    Raises:
        RowError: the value is missing, not a number, negative, NaN or infinite.
    """
    if isinstance(value, bool) or value is None:
        raise RowError(f"{what} is {value!r}, not a number")
    if type(value) is int:
        if value < 0:
            raise RowError(f"{what} is {value!r}, a negative number")
        return value  # kept an integer, as the source wrote it
    try:
        result = float(value)
    except (TypeError, ValueError):
        raise RowError(f"{what} is {value!r}, not a number") from None
    if result != result or result in (float("inf"), float("-inf")):
        raise RowError(f"{what} is {value!r}, not a finite number")
    if result < 0:
        raise RowError(f"{what} is {value!r}, a negative number")
    return result


def ms_to_ns(value: float) -> int:
    """Milliseconds (as the source printed them) in whole nanoseconds, rounded half to even.

    Sources print float milliseconds (``0.5324159860610962``); the digits below a nanosecond
    are float noise far under any GPU timer's resolution, and KernelIndex's latencyNs must be an
    integer, so they are rounded away here and the exact value is kept beside it (measurements
    or sourceNative metrics) by the importers.
    """
    try:
        exact = Decimal(repr(value)) * _MS_TO_NS
    except InvalidOperation:
        raise RowError(f"{value!r} ms is not a number") from None
    return int(exact.to_integral_value(rounding=ROUND_HALF_EVEN))


def instant(text: Any, what: str = "timestamp") -> str:
    """An RFC 3339 UTC instant with ``Z`` for a source timestamp.

    A value already in that form is kept exactly (digests depend on the spelling); any other ISO
    8601 form is converted to UTC (a value without an offset is taken as UTC) and written with
    the precision it had (seconds or milliseconds or microseconds).

    Raises:
        RowError: the value is not an ISO 8601 date-time.
    """
    if not isinstance(text, str):
        raise RowError(f"{what} is {text!r}, not a date-time")
    if _RFC3339_Z.match(text):
        return text
    try:
        when = datetime.fromisoformat(text.strip().replace(" ", "T", 1))
    except ValueError:
        raise RowError(f"{what} {text!r} is not an ISO 8601 date-time") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    when = when.astimezone(UTC)
    fraction = re.search(r"[T ]\d{2}:\d{2}:\d{2}\.(\d+)", text)
    digits = len(fraction.group(1)) if fraction else 0
    spec = "seconds" if digits == 0 else "milliseconds" if digits <= 3 else "microseconds"
    return when.replace(tzinfo=None).isoformat(timespec=spec) + "Z"


def load_json(data: bytes, where: str) -> Any:
    """The JSON value a file holds.

    Raises:
        InvalidManifest: the bytes are not JSON (the message names the file and the place).
    """
    try:
        return _DECODE.decode(data)
    except msgspec.DecodeError as exc:
        raise InvalidManifest(f"{where}: invalid JSON: {exc}") from None


def manifest(kind: str, name: str, spec: dict[str, Any], **metadata: Any) -> dict[str, Any]:
    """A plain KernelIndex manifest; ``metadata`` entries that are None are left out."""
    meta: dict[str, Any] = {"name": name}
    meta.update({k: v for k, v in metadata.items() if v is not None})
    return {"apiVersion": API_VERSION, "kind": kind, "metadata": meta, "spec": spec}


class Checker:
    """``events.check_manifest`` with a memory: a manifest built twice (same kind, metadata and
    spec, in the same key order) is checked once."""

    def __init__(self, source: str) -> None:
        self.source = source
        self._seen: dict[bytes, Checked] = {}

    def __call__(self, value: dict[str, Any], path: str = "$") -> Checked:
        """The checked manifest.

        Raises:
            InvalidManifest: the manifest fails its schema (the message names the field).
        """
        key = _ENCODE.encode(value)
        found = self._seen.get(key)
        if found is None:
            found = check_manifest(value, source=self.source, path=path)
            self._seen[key] = found
        return found


# Compute architecture by a token of the product name (``NVIDIA A100-SXM4-80GB`` has ``a100``).
_ARCHITECTURES = dict(
    re.findall(
        r"(\S+)=(\S+)",
        "gb300=sm_103 b300=sm_103 gb200=sm_100 b200=sm_100 gh200=sm_90 h200=sm_90 h100=sm_90 "
        "h800=sm_90 a100=sm_80 a800=sm_80 a30=sm_80 l40s=sm_89 l40=sm_89 l4=sm_89 4090=sm_89 "
        "a10g=sm_86 a10=sm_86 a40=sm_86 3090=sm_86 a5000=sm_86 a6000=sm_86 t4=sm_75 v100=sm_70 "
        "mi355x=gfx950 mi325x=gfx942 mi300x=gfx942",
    )
)
_TOKEN = re.compile(r"[a-z0-9]+")


def gpu_hardware(product: str) -> dict[str, str]:
    """The ``hardware`` block of an ExecutionEnvironment for a GPU product name as a source
    prints it (``NVIDIA H100 80GB HBM3``): vendor and compute architecture from the name, the
    product kept verbatim. An unrecognised name gets architecture (and vendor) ``unknown``."""
    tokens = set(_TOKEN.findall(product.lower()))
    architecture = next((arch for key, arch in _ARCHITECTURES.items() if key in tokens), "unknown")
    if tokens & {"amd", "instinct"} or architecture.startswith("gfx"):
        vendor = "amd"
    elif tokens & {"nvidia", "tesla", "geforce", "rtx"} or architecture.startswith("sm_"):
        vendor = "nvidia"
    else:
        vendor = "unknown"
    return {"vendor": vendor, "product": product, "architecture": architecture}


# Dtype names as sources spell them (torch, SOL-ExecBench), in KernelIndex's spellings.
_DTYPES = {
    "float64": "fp64",
    "float32": "fp32",
    "float16": "fp16",
    "bfloat16": "bf16",
    "float8_e4m3fn": "fp8_e4m3",
    "float8_e5m2": "fp8_e5m2",
    "float4_e2m1": "fp4_e2m1",
}


def dtype_name(value: Any) -> str:
    """Our identifier for a dtype (``bfloat16`` -> ``bf16``: KernelIndex's spellings).

    Raises:
        RowError: the value is not a name.
    """
    if not isinstance(value, str) or not value:
        raise RowError(f"dtype {value!r} is not a name")
    return _DTYPES.get(value, ident(value))
