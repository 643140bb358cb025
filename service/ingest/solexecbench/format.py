"""The SOL-ExecBench problem format (FORMAT.md) in KernelIndex's manifests: a definition's
OperationSpec (its axes, ports and dtypes), a workload's WorkloadCase (its axes evaluated, its
scalar inputs, the correctness tolerance FORMAT.md applies) and the WorkloadSuite a leaderboard
ranks a definition on."""

from __future__ import annotations

import ast
import hashlib
import re
from typing import Any

from service.ingest._build import RowError, dtype_name, family, ident, manifest, number, slug

__all__ = ["sol_axes", "sol_dtypes", "sol_operation", "sol_suite", "sol_workload_case"]

_NAME_IN_EXPRESSION = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_EXPRESSION = re.compile(r"^[a-z0-9_+\-*%/() ]+\Z")
# FORMAT.md's defaults, written out so the correctness key states the policy actually applied.
_SOL_TOLERANCE = (
    ("max_atol", "maxAbsoluteError", 1e-2),
    ("max_rtol", "maxRelativeError", 1e-2),
    ("required_matched_ratio", "requiredMatchedRatio", 0.99),
)


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
