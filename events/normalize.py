"""KernelIndex's normalisations, applied before digesting: exactly these and nothing more.

1. Durations written as strings (``"0.008 ms"``; units ns, us, µs, ms, s) become integer
   nanoseconds, in ``BenchmarkRun.spec.timing.latencyNs.*`` (median, mean, p05, p95, minimum,
   maximum, mad, both ends of confidence95) and ``BenchmarkProtocol.spec.measurement.
   warmupDuration``. The arithmetic is decimal and exact; a value that does not land on a whole
   nanosecond is refused as ambiguous, never rounded.
2. The set-like lists of ``ImplementationRevision.spec.support`` (hardwareArchitectures,
   productsTested, axes, dtypes, layouts) are deduplicated and sorted (by UTF-16 code units, as
   JavaScript's default sort orders strings). No other list is touched: tensor shapes, cases and
   measurements are ordered data.

Instants are validated by the schema and kept exactly as written (``…:14Z`` and ``…:14.000Z``
hash differently, and KernelIndex's digests depend on that).

``normalize`` never mutates its input (YAML aliases may share objects); it returns a new value
that shares every untouched subtree.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

from events.errors import InvalidManifest
from events.manifests.common import MAX_SAFE

__all__ = ["duration_ns", "normalize"]

_DURATION = re.compile(r"^([0-9]+(?:\.[0-9]+)?)\s?(ns|us|µs|ms|s)\Z")
_NS_PER_UNIT = {"ns": 1, "us": 1_000, "µs": 1_000, "ms": 1_000_000, "s": 1_000_000_000}
_LATENCY_FIELDS = ("median", "mean", "p05", "p95", "minimum", "maximum", "mad")
_SET_LISTS = ("hardwareArchitectures", "productsTested", "axes", "dtypes", "layouts")


def duration_ns(value: int | str, *, path: str = "$") -> int:
    """Return a duration in integer nanoseconds.

    Raises:
        InvalidManifest: the string is not a duration, does not land on a whole nanosecond, or
            exceeds 2**53 - 1 ns.
    """
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    match = _DURATION.match(value) if isinstance(value, str) else None
    if match is None:
        raise InvalidManifest(f"{path}: {value!r} is not a duration", path=path)
    nanoseconds = Decimal(match.group(1)) * _NS_PER_UNIT[match.group(2)]
    if nanoseconds != nanoseconds.to_integral_value():
        raise InvalidManifest(
            f"{path}: {value!r} is ambiguous: it is not a whole number of nanoseconds", path=path
        )
    result = int(nanoseconds)
    if result > MAX_SAFE:
        raise InvalidManifest(f"{path}: {value!r} is longer than 2**53 - 1 ns", path=path)
    return result


def _utf16(value: str) -> bytes:
    return value.encode("utf-16-be", "surrogatepass")


def _normalize_latency(latency: dict[str, Any], path: str) -> dict[str, Any]:
    if not any(isinstance(v, str) for v in latency.values()) and not any(
        isinstance(v, str) for v in latency.get("confidence95", ())
    ):
        return latency  # already integers: nothing to do, and the value keeps its identity
    out = dict(latency)
    for name in _LATENCY_FIELDS:
        if name in out:
            out[name] = duration_ns(out[name], path=f"{path}.{name}")
    if "confidence95" in out:
        out["confidence95"] = [
            duration_ns(v, path=f"{path}.confidence95[{i}]")
            for i, v in enumerate(out["confidence95"])
        ]
    return out


def _as_set(values: list[str]) -> list[str]:
    ordered = sorted(set(values), key=_utf16)
    return values if ordered == values else ordered


def normalize(manifest: dict[str, Any]) -> dict[str, Any]:
    """Return ``manifest`` with KernelIndex's normalisations applied (see the module docstring).

    The manifest must already have passed ``events.manifests.validate``.

    Raises:
        InvalidManifest: a duration is malformed or ambiguous.
    """
    kind = manifest.get("kind")
    spec = manifest.get("spec")
    if not isinstance(spec, dict):
        return manifest
    if kind == "BenchmarkRun":
        timing = spec.get("timing")
        if isinstance(timing, dict) and isinstance(timing.get("latencyNs"), dict):
            latency = _normalize_latency(timing["latencyNs"], "$.spec.timing.latencyNs")
            if latency is not timing["latencyNs"]:
                spec = {**spec, "timing": {**timing, "latencyNs": latency}}
                return {**manifest, "spec": spec}
    elif kind == "BenchmarkProtocol":
        measurement = spec.get("measurement")
        if isinstance(measurement, dict) and isinstance(measurement.get("warmupDuration"), str):
            warmup = duration_ns(
                measurement["warmupDuration"], path="$.spec.measurement.warmupDuration"
            )
            spec = {**spec, "measurement": {**measurement, "warmupDuration": warmup}}
            return {**manifest, "spec": spec}
    elif kind == "ImplementationRevision":
        support = spec.get("support")
        if isinstance(support, dict):
            normal = {
                key: _as_set(value) if key in _SET_LISTS else value
                for key, value in support.items()
            }
            if any(normal[key] is not support[key] for key in support):
                return {**manifest, "spec": {**spec, "support": normal}}
    return manifest
