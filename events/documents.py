"""Reading manifests and bundles, and computing their identity (digests and keys).

A *document* is one JSON value: a manifest (it has ``kind``) or a bundle, an object of manifests
by role. Kernel bundles: ``{run, protocol, environment, workload?, implementation?, operation?,
project?}`` (the shape of KernelIndex's canonical run manifest). Serving bundles: ``{run,
model?, configuration?, workload?, stack?}`` with a ServingRun as ``run``.
"""

from __future__ import annotations

from pathlib import PurePath
from typing import Any

import msgspec

from events.canonical import canonical_json, sha256_digest
from events.errors import InvalidManifest
from events.identity import (
    PrimaryMeasurement,
    comparison_key,
    correctness_key,
    primary_measurement,
    serving_cohort_key,
    serving_metric_set_key,
    serving_protocol_key,
    serving_topology_key,
    spec_digest,
)
from events.manifests import ERROR_PATH, KIND_OF, AnyManifest, readable, validate
from events.normalize import normalize
from events.references import KERNEL_REFS, SERVING_REFS, roles
from events.strictjson import check_strict_json
from events.yamlcore import load_yaml

__all__ = [
    "BUNDLE_ROLES",
    "Checked",
    "CheckedText",
    "KernelIdentity",
    "ManifestIdentity",
    "ServingIdentity",
    "check_manifest",
    "check_manifest_json",
    "check_manifest_text",
    "identify",
    "is_bundle",
    "parse_bundle",
    "read_documents",
]

_JSON = msgspec.json.Decoder()
_ENCODE = msgspec.json.Encoder()

KERNEL_ROLES = {
    "run": "BenchmarkRun",
    "protocol": "BenchmarkProtocol",
    "environment": "ExecutionEnvironment",
    "workload": ("WorkloadCase", "WorkloadSuite"),
    "implementation": "ImplementationRevision",
    "operation": "OperationSpec",
    "project": "SoftwareProject",
}
SERVING_ROLES = {
    "run": "ServingRun",
    "model": "ModelRevision",
    "configuration": "ServingConfiguration",
    "workload": "ServingWorkload",
    "stack": "ServingStackRevision",
}
BUNDLE_ROLES = frozenset(KERNEL_ROLES) | frozenset(SERVING_ROLES)


def read_documents(data: bytes, *, source: str) -> list[Any]:
    """Decode the documents of a file: a JSON value (an array is a list of documents), JSON
    lines, or a YAML stream (possibly several ``---`` documents). The format follows the file
    name (``.json``, ``.jsonl``, ``.yaml``/``.yml``), else the first character.

    Raises:
        InvalidManifest: the bytes are not valid JSON/YAML (the message says where).
    """
    suffix = PurePath(source).suffix.lower()
    if suffix in (".yaml", ".yml"):
        return [d for d in load_yaml(data, source=source) if d is not None]
    if suffix == ".jsonl":
        docs = []
        for number, line in enumerate(data.splitlines(), start=1):
            if line.strip():
                docs.append(_decode_json(line, f"{source}:{number}"))
        return docs
    stripped = data.lstrip()
    if suffix == ".json" or stripped[:1] in (b"{", b"["):
        value = _decode_json(data, source)
        return value if isinstance(value, list) else [value]
    return [d for d in load_yaml(data, source=source) if d is not None]


def _decode_json(data: bytes, source: str) -> Any:
    try:
        check_strict_json(data)  # no repeated member or NUL, as YAML refuses repeated keys
        return _JSON.decode(data)
    except (ValueError, msgspec.DecodeError) as exc:
        raise InvalidManifest(f"{source}: invalid JSON: {exc}") from None
    except RecursionError:
        raise InvalidManifest(f"{source}: invalid JSON: nested too deeply") from None


class Checked(msgspec.Struct, frozen=True):
    """A validated, normalised manifest and its spec digest."""

    kind: str
    digest: str
    name: str
    manifest: dict[str, Any]


def check_manifest(value: Any, *, source: str, path: str = "$") -> Checked:
    """Validate and normalise one manifest and compute its spec digest.

    Raises:
        InvalidManifest: the manifest fails its schema or a duration is ambiguous.
    """
    typed = validate(value, source=source, path=path)
    normal = _normalize(value, source, path)
    return Checked(KIND_OF[type(typed)], spec_digest(normal), typed.metadata.name, normal)


def _normalize(value: dict[str, Any], source: str, path: str) -> dict[str, Any]:
    """``normalize``, its error placed in the file and document it came from."""
    try:
        return normalize(value)
    except InvalidManifest as exc:
        where = path + exc.details.get("path", "$")[1:]  # type: ignore[index]
        reason = exc.detail.split(": ", 1)[-1]
        raise InvalidManifest(f"{source}: {where}: {reason}", path=where) from None


_TYPED = msgspec.json.Decoder(AnyManifest)
_IDENTITY = ("apiVersion", "kind", "spec")


def check_manifest_json(text: bytes, *, source: str, path: str = "$") -> Checked:
    """``check_manifest`` for a manifest still in its JSON text: validated while decoding, and
    digested straight from the text when normalisation changes nothing (the common case).

    Raises:
        InvalidManifest: the text is not JSON, the manifest fails its schema, or a duration is
            ambiguous.
    """
    kind, digest, name, normal, _ = _checked_text(text, source, path)
    return Checked(kind, digest, name, normal)


class CheckedText(msgspec.Struct, frozen=True, array_like=True, tag=0):
    """``check_manifest_json``'s answer as bytes can carry it between processes: the kind,
    spec digest and name, and the normalised manifest as JSON text (the text itself when
    normalisation changed nothing). ``checked`` turns it into a ``Checked``. Tagged, so that
    a union with a refusal (``service.ingest.pool``) decodes."""

    kind: str
    digest: str
    name: str
    text: bytes

    def checked(self) -> Checked:
        return Checked(self.kind, self.digest, self.name, _JSON.decode(self.text))


def check_manifest_text(text: bytes, *, source: str, path: str = "$") -> CheckedText:
    """``check_manifest_json``, answered as a ``CheckedText``.

    Raises:
        As ``check_manifest_json``.
    """
    kind, digest, name, normal, changed = _checked_text(text, source, path)
    return CheckedText(kind, digest, name, _ENCODE.encode(normal) if changed else text)


def _checked_text(text: bytes, source: str, path: str) -> tuple[str, str, str, Any, bool]:
    """Kind, spec digest, name, the normalised manifest, and whether normalising changed it."""
    try:
        typed = _TYPED.decode(text)
    except msgspec.ValidationError as exc:
        message = str(exc)
        match = ERROR_PATH.search(message)
        where = path + match.group(1)[1:] if match else path
        reason = readable(ERROR_PATH.sub("", message))
        raise InvalidManifest(f"{source}: {where}: {reason}", path=where) from None
    except msgspec.DecodeError as exc:
        raise InvalidManifest(f"{source}: {path}: not JSON: {exc}", path=path) from None
    value = _JSON.decode(text)
    normal = _normalize(value, source, path)
    tag = KIND_OF[type(typed)]
    name = typed.metadata.name
    if normal is value:
        return tag, sha256_digest(canonical_json(text, members=_IDENTITY)), name, value, False
    return tag, spec_digest(normal), name, normal, True


def is_bundle(value: Any) -> bool:
    """True when a document is a bundle (an object with a ``run`` and no ``kind``)."""
    return isinstance(value, dict) and "kind" not in value and "run" in value


def parse_bundle(value: dict[str, Any], *, source: str, path: str = "$") -> dict[str, Checked]:
    """Check every manifest of a bundle against the kind its role requires.

    Raises:
        InvalidManifest: an unknown role, a manifest of the wrong kind, or an invalid manifest.
    """
    run = check_manifest(value["run"], source=source, path=f"{path}.run")
    roles = SERVING_ROLES if run.kind == "ServingRun" else KERNEL_ROLES
    if run.kind not in ("BenchmarkRun", "ServingRun"):
        raise InvalidManifest(
            f"{source}: {path}.run: a bundle's run must be a BenchmarkRun or ServingRun, "
            f"not {run.kind}",
            path=f"{path}.run",
        )
    out = {"run": run}
    for role, item in value.items():
        if role == "run":
            continue
        if role not in roles:
            raise InvalidManifest(
                f"{source}: {path}.{role}: unknown bundle role (expected {', '.join(roles)})",
                path=f"{path}.{role}",
            )
        checked = check_manifest(item, source=source, path=f"{path}.{role}")
        want = roles[role]
        if checked.kind not in (want if isinstance(want, tuple) else (want,)):
            raise InvalidManifest(
                f"{source}: {path}.{role}: expected {want}, found {checked.kind}",
                path=f"{path}.{role}",
            )
        out[role] = checked
    return out


class ManifestIdentity(msgspec.Struct, frozen=True, omit_defaults=True):
    """The identity of a single manifest that is not a run."""

    kind: str
    name: str
    specDigest: str
    correctnessKey: str | None = None
    operationDigest: str | None = None


class KernelIdentity(msgspec.Struct, frozen=True):
    """Every digest and key of a kernel run; ``None`` where a manifest is still unresolved."""

    kind: str
    name: str
    runDigest: str
    protocolKey: str
    environmentKey: str
    workloadDigest: str
    implementationDigest: str
    operationDigest: str | None
    correctnessKey: str | None
    metricKey: str
    primary: PrimaryMeasurement | None
    comparisonKey: str | None
    unresolved: list[str]


class ServingIdentity(msgspec.Struct, frozen=True):
    """Every digest and key of a serving run; ``None`` where a manifest is still unresolved."""

    kind: str
    name: str
    runDigest: str
    modelDigest: str
    configurationDigest: str
    workloadDigest: str
    protocolKey: str | None
    topologyKey: str
    metricSetKey: str
    cohortKey: str | None
    unresolved: list[str]


def _declared(source: str, field: str, declared: str, present: Checked | None) -> None:
    if present is not None and present.digest != declared:
        raise InvalidManifest(
            f"{source}: $.run.spec.{field} is {declared} but the bundled manifest's digest is "
            f"{present.digest}",
            path=f"$.run.spec.{field}",
        )


def identify(
    parts: dict[str, Checked], *, source: str
) -> KernelIdentity | ServingIdentity | ManifestIdentity:
    """Compute the identity of a bundle (``parse_bundle``) or of one manifest (``{"": m}``).

    A run's declared digests must equal the recomputed digests of the manifests given with it.

    Raises:
        InvalidManifest: a declared digest differs from the bundled manifest's.
    """
    run = parts.get("run")
    if run is None:
        (only,) = parts.values()
        return _single(only)
    if run.kind == "ServingRun":
        return _serving(parts, run, source)
    return _kernel(parts, run, source)


def _single(m: Checked) -> ManifestIdentity | KernelIdentity | ServingIdentity:
    if m.kind in ("BenchmarkRun", "ServingRun"):
        return identify({"run": m}, source="")
    spec = m.manifest["spec"]
    if m.kind in ("WorkloadCase", "WorkloadSuite"):
        return ManifestIdentity(
            m.kind, m.name, m.digest, correctness_key(m.manifest), spec["operationSpecDigest"]
        )
    if m.kind == "ImplementationRevision":
        return ManifestIdentity(
            m.kind, m.name, m.digest, operationDigest=spec["operation"]["specDigest"]
        )
    return ManifestIdentity(m.kind, m.name, m.digest)


def _kernel(parts: dict[str, Checked], run: Checked, source: str) -> KernelIdentity:
    spec = run.manifest["spec"]
    for role, field in KERNEL_REFS.items():
        _declared(source, field, spec[field], parts.get(role))
    workload, operation = parts.get("workload"), parts.get("operation")
    operation_digest = correctness = comparison = None
    if workload is not None:
        operation_digest = workload.manifest["spec"]["operationSpecDigest"]
        if operation is not None and operation.digest != operation_digest:
            raise InvalidManifest(
                f"{source}: $.workload.spec.operationSpecDigest is {operation_digest} but the "
                f"bundled operation's digest is {operation.digest}",
                path="$.workload.spec.operationSpecDigest",
            )
        correctness = correctness_key(workload.manifest)
    elif operation is not None:
        operation_digest = operation.digest
    primary = primary_measurement(run.manifest)
    metric = primary.key if primary is not None else "none"
    if workload is not None:
        comparison = comparison_key(
            operation=operation_digest,  # type: ignore[arg-type]
            workload=spec["workloadDigest"],
            protocol=spec["protocolDigest"],
            environment=spec["environmentDigest"],
            correctness=correctness,  # type: ignore[arg-type]
            metric=metric,
        )
    unresolved = [r for r in roles(run.kind) if r not in parts]
    return KernelIdentity(
        run.kind,
        run.name,
        run.digest,
        spec["protocolDigest"],
        spec["environmentDigest"],
        spec["workloadDigest"],
        spec["implementationDigest"],
        operation_digest,
        correctness,
        metric,
        primary,
        comparison,
        unresolved,
    )


def _serving(parts: dict[str, Checked], run: Checked, source: str) -> ServingIdentity:
    spec = run.manifest["spec"]
    for role, field in SERVING_REFS.items():
        _declared(source, field, spec[field], parts.get(role))
    model, workload = parts.get("model"), parts.get("workload")
    protocol = serving_protocol_key(run.manifest, workload.manifest) if workload else None
    cohort = (
        serving_cohort_key(run.manifest, model.manifest, workload.manifest)
        if model is not None and workload is not None
        else None
    )
    # A serving bundle names its model, configuration and workload; the stack is not bundled.
    unresolved = [r for r in SERVING_REFS if r not in parts]
    return ServingIdentity(
        run.kind,
        run.name,
        run.digest,
        spec["modelDigest"],
        spec["configurationDigest"],
        spec["workloadDigest"],
        protocol,
        serving_topology_key(run.manifest),
        serving_metric_set_key(run.manifest),
        cohort,
        unresolved,
    )
