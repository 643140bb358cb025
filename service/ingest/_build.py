"""Shared builders for the source importers (liger, mlperf, kernelbench, solexecbench).

Each importer turns a source row into plain KernelIndex manifests (dicts) and checks them with
``events.check_manifest``; the helpers here name things (metadata names, identifiers), convert
units and instants, describe GPUs, and remember manifests already checked (a protocol or an
environment is shared by thousands of rows, and checking is the costly part of a plan).
"""

from __future__ import annotations

import ast
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
    "number_or_signed",
    "short_hash",
    "slug",
    "sol_axes",
    "sol_dtypes",
    "sol_operation",
    "sol_suite",
    "sol_workload_case",
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


# --- SOL-ExecBench problem format (FORMAT.md): definitions and workloads ---------------------

_SOL_DTYPES = {
    "float64": "fp64",
    "float32": "fp32",
    "float16": "fp16",
    "bfloat16": "bf16",
    "float8_e4m3fn": "fp8_e4m3",
    "float8_e5m2": "fp8_e5m2",
    "float4_e2m1": "fp4_e2m1",
}
_NAME_IN_EXPRESSION = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_EXPRESSION = re.compile(r"^[a-z0-9_+\-*%/() ]+\Z")
# FORMAT.md's defaults, written out so the correctness key states the policy actually applied.
_SOL_TOLERANCE = (
    ("max_atol", "maxAbsoluteError", 1e-2),
    ("max_rtol", "maxRelativeError", 1e-2),
    ("required_matched_ratio", "requiredMatchedRatio", 0.99),
)


def dtype_name(value: Any) -> str:
    """Our identifier for a dtype (``bfloat16`` -> ``bf16``: KernelIndex's spellings).

    Raises:
        RowError: the value is not a name.
    """
    if not isinstance(value, str) or not value:
        raise RowError(f"dtype {value!r} is not a name")
    return _SOL_DTYPES.get(value, ident(value))


def sol_dtypes(definition: dict[str, Any]) -> list[str]:
    """The sorted set of dtypes of a definition's inputs and outputs."""
    ports = [*definition.get("inputs", {}).values(), *definition.get("outputs", {}).values()]
    return sorted({dtype_name(p.get("dtype")) for p in ports if isinstance(p, dict)})


def _sol_names(definition: dict[str, Any]) -> dict[str, str]:
    axes = definition.get("axes")
    if not isinstance(axes, dict):
        raise RowError("axes must be an object")
    names: dict[str, str] = {}
    for axis in axes:
        name = ident(axis)
        if name in names.values():
            raise RowError(f"axes {axis!r} and another share the identifier {name!r}")
        names[axis] = name
    return names


def _sol_ports(definition: dict[str, Any], key: str, names: dict[str, str]) -> list[dict[str, Any]]:
    ports = definition.get(key)
    if not isinstance(ports, dict) or not ports:
        raise RowError(f"{key} must be a non-empty object")
    out = []
    for port, sig in ports.items():
        if not isinstance(sig, dict):
            raise RowError(f"{key}.{port} must be an object")
        shape = sig.get("shape")
        entry: dict[str, Any] = {"name": ident(port)}
        if shape is None:
            entry["scalar"] = {"dtype": dtype_name(sig.get("dtype"))}
        elif isinstance(shape, list):
            dims = [names.get(d, d) if isinstance(d, str) else d for d in shape]
            if any(isinstance(d, str) and d not in names.values() for d in dims):
                raise RowError(f"{key}.{port}: shape {shape} names an unknown axis")
            # The schema needs one dimension at least; a 0-D tensor holds one element.
            entry["tensor"] = {"shape": dims or [1], "dtype": dtype_name(sig.get("dtype"))}
        else:
            raise RowError(f"{key}.{port}: shape must be a list or null")
        out.append(entry)
    return out


def sol_operation(definition: dict[str, Any]) -> dict[str, Any]:
    """An OperationSpec for a SOL definition (axes, ports by position, dtypes in KernelIndex's
    spellings; constraints kept as the semantics' expression).

    Raises:
        RowError: the definition is malformed (unknown axis type, clashing names...).
    """
    names = _sol_names(definition)
    axes: dict[str, Any] = {}
    for axis, body in definition["axes"].items():
        kind = body.get("type") if isinstance(body, dict) else None
        if kind == "const" and isinstance(body.get("value"), int):
            axes[names[axis]] = {"role": "constant", "type": "integer", "value": body["value"]}
        elif kind == "var":
            axes[names[axis]] = {"role": "variable", "type": "integer"}
        elif kind == "expr" and isinstance(body.get("expression"), str):
            text = _NAME_IN_EXPRESSION.sub(
                lambda m: names.get(m.group(0), m.group(0)), body["expression"]
            )
            if not _EXPRESSION.match(text):
                raise RowError(
                    f"axis {axis}: expression {body['expression']!r} is not integer arithmetic"
                )
            axes[names[axis]] = {"role": "derived", "type": "integer", "expression": text}
        else:
            raise RowError(f"axis {axis}: expected const (with an integer value), var or expr")
    semantics: dict[str, Any] = {"mutation": "none", "determinism": "unspecified"}
    constraints = definition.get("constraints")
    if isinstance(constraints, list) and constraints:
        semantics["expression"] = ("constraints: " + "; ".join(map(str, constraints)))[:2000]
    op_type = definition.get("op_type")
    spec = {
        "family": family(op_type) if isinstance(op_type, str) and op_type else "other",
        "axes": axes,
        "inputs": _sol_ports(definition, "inputs", names),
        "outputs": _sol_ports(definition, "outputs", names),
        "semantics": semantics,
    }
    name = str(definition["name"])
    labels = {}
    if isinstance(definition.get("reference"), str):
        labels["reference_sha256"] = hashlib.sha256(definition["reference"].encode()).hexdigest()
    description = definition.get("description")
    return manifest(
        "OperationSpec",
        slug(name),
        spec,
        title=name[:200],
        description=description[:2000] if isinstance(description, str) and description else None,
        labels=labels or None,
    )


def _sol_eval(expression: str, values: dict[str, int]) -> int:
    """Evaluate a derived axis: integer + - * // % and parentheses over known axes."""

    def walk(node: ast.AST) -> int:
        if isinstance(node, ast.Expression):
            return walk(node.body)
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return node.value
        if isinstance(node, ast.Name) and node.id in values:
            return values[node.id]
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -walk(node.operand)
        if isinstance(node, ast.BinOp):
            left, right = walk(node.left), walk(node.right)
            op = node.op
            if isinstance(op, ast.Add | ast.Sub | ast.Mult):
                return (
                    left + right
                    if isinstance(op, ast.Add)
                    else left - right
                    if isinstance(op, ast.Sub)
                    else left * right
                )
            if isinstance(op, ast.FloorDiv | ast.Mod) and right != 0:
                return left // right if isinstance(op, ast.FloorDiv) else left % right
        raise RowError(f"cannot evaluate axis expression {expression!r}")

    return walk(ast.parse(expression, mode="eval"))


def sol_axes(
    definition: dict[str, Any], line: dict[str, Any]
) -> tuple[dict[str, int], dict[str, int]]:
    """The axes of a workload: (constants and the line's variables, as recorded; every axis
    including derived ones, to size tensors).

    Raises:
        RowError: the line sets an unknown axis, misses a variable one, or sets a non-integer.
    """
    names = _sol_names(definition)
    given = line.get("axes")
    if not isinstance(given, dict):
        raise RowError("a workload's axes must be an object")
    recorded: dict[str, int] = {}
    for axis, body in definition["axes"].items():
        if body.get("type") == "const":
            recorded[names[axis]] = body["value"]
        elif body.get("type") == "var":
            value = given.get(axis)
            if type(value) is not int:
                raise RowError(f"axis {axis} is {value!r}, not an integer")
            recorded[names[axis]] = value
    unknown = [a for a in given if a not in names or definition["axes"][a].get("type") != "var"]
    if unknown:
        raise RowError(f"the workload sets axes the definition does not vary: {', '.join(unknown)}")
    every = dict(recorded)
    for axis, body in definition["axes"].items():
        if body.get("type") == "expr":
            every[names[axis]] = _sol_eval(
                _NAME_IN_EXPRESSION.sub(
                    lambda m: names.get(m.group(0), m.group(0)), body["expression"]
                ),
                every,
            )
    return recorded, every


def sol_workload_case(
    definition: dict[str, Any], operation: str, line: dict[str, Any]
) -> dict[str, Any]:
    """A WorkloadCase for one line of a SOL ``workload.jsonl``: axes, tensor shapes and how
    their data is made, scalar values, and the tolerance (FORMAT.md's defaults filled in).

    Raises:
        RowError: the line does not fit its definition.
    """
    recorded, every = sol_axes(definition, line)
    names = _sol_names(definition)
    inputs = line.get("inputs")
    if not isinstance(inputs, dict):
        raise RowError("a workload's inputs must be an object")
    tensors: dict[str, Any] = {}
    scalars: dict[str, Any] = {}
    for port, sig in definition["inputs"].items():
        given = inputs.get(port)
        if not isinstance(given, dict) or not isinstance(given.get("type"), str):
            raise RowError(f"input {port} is not described")
        dtype = dtype_name(sig.get("dtype"))
        if sig.get("shape") is None:
            if given["type"] == "scalar":
                scalars[ident(port)] = {
                    "dtype": dtype,
                    "value": number_or_signed(given.get("value"), port),
                }
            continue
        shape = [every[names[d]] if isinstance(d, str) else d for d in sig["shape"]] or [1]
        tensors[ident(port)] = {
            "shape": shape,
            "dtype": dtype,
            "data": {"generator": ident(given["type"])},
        }
    tolerance = line.get("tolerance") or {}
    if not isinstance(tolerance, dict):
        raise RowError("tolerance must be an object")
    correctness: dict[str, Any] = {"comparator": "sol_execbench_eval"}
    for key, field, default in _SOL_TOLERANCE:
        correctness[field] = number(tolerance.get(key, default), f"tolerance.{key}")
    if tolerance.get("allow_negative_inf") is True:
        correctness["infinityPolicy"] = "exact_match"
    spec: dict[str, Any] = {
        "operationSpecDigest": operation,
        "axes": recorded,
        "tensors": tensors,
        "correctness": correctness,
    }
    if scalars:
        spec["scalars"] = scalars
    name, uuid = str(definition["name"]), str(line["uuid"])
    shown = ", ".join(
        f"{k}={v}"
        for k, v in recorded.items()
        if definition["axes"].get(k, {}).get("type") != "const"
    )
    return manifest(
        "WorkloadCase", slug(f"{name}-{uuid}"), spec, title=f"{name} · {shown or uuid}"[:200]
    )


def number_or_signed(value: Any, what: str) -> float:
    """A finite number that may be negative (scalar inputs)."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float) and value == value and abs(value) != float("inf"):
        return float(value)
    raise RowError(f"scalar {what} is {value!r}, not a finite number")


def sol_suite(
    definition: dict[str, Any],
    operation: str,
    workloads: dict[str, tuple[dict[str, Any], Any]],
    kernel: str,
) -> dict[str, Any]:
    """The WorkloadSuite a leaderboard ranks a definition on: every workload given for it, in
    file order, with the suite's correctness and mean-latency aggregation (KernelIndex's shape).

    Raises:
        RowError: no workload of the definition was given.
    """
    if not workloads:
        raise RowError(f"no workloads of {definition['name']} were given (pass its workload.jsonl)")
    cases = [
        {"externalId": uuid[:200], "axes": sol_axes(definition, raw)[0]}
        for uuid, (raw, _) in workloads.items()
    ]
    spec = {
        "operationSpecDigest": operation,
        "cases": cases,
        "correctness": {
            "comparator": "sol_execbench_eval",
            "description": "Correctness must pass on every case in the SOL evaluation stack.",
        },
        "aggregation": {"metric": "latency", "statistic": "mean"},
    }
    return manifest(
        "WorkloadSuite", slug(f"{kernel}-suite"), spec, title=f"SOL workload suite: {kernel}"[:200]
    )
