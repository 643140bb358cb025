"""Synthetic but schema-valid KernelIndex bundles and signed statements, for tests and
benchmarks (never real source data)."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import msgspec

from events import check_manifest
from events.documents import Checked
from events.entries import INTOTO_PAYLOAD_TYPE, Pending
from events.types import KeyRegistered, Origin, RunIngested
from keys import SigningKey, encode_envelope, sign_envelope

API = "kernelindex.dev/v1alpha1"


def _m(kind: str, name: str, spec: dict[str, Any], title: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if title:
        meta["title"] = title
    return {"apiVersion": API, "kind": kind, "metadata": meta, "spec": spec}


def operation(family: int) -> dict[str, Any]:
    return _m(
        "OperationSpec",
        f"op-{family}",
        {
            "family": f"family-{family}",
            "axes": {"n": {"role": "variable", "type": "integer"}},
            "inputs": [{"name": "x", "tensor": {"shape": ["n"], "dtype": "bf16"}}],
            "outputs": [{"name": "y", "tensor": {"shape": ["n"], "dtype": "bf16"}}],
            "semantics": {"mutation": "none", "determinism": "deterministic"},
        },
        title=f"Operation {family}",
    )


def workload(family: int, size: int, op_digest: str) -> dict[str, Any]:
    return _m(
        "WorkloadCase",
        f"wl-{family}-{size}",
        {
            "operationSpecDigest": op_digest,
            "axes": {"n": size},
            "tensors": {"x": {"shape": [size], "dtype": "bf16"}},
            "correctness": {"comparator": "elementwise_close", "maxAbsoluteError": 0.01},
        },
        title=f"Operation {family}, n={size}",
    )


def protocol() -> dict[str, Any]:
    return _m(
        "BenchmarkProtocol",
        "synthetic-protocol",
        {
            "harness": {"name": "synthetic-harness", "version": "1.0"},
            "measurement": {"timer": "device_events", "primaryStatistic": "median"},
            "correctness": {"reference": "fp32 reference", "comparator": "elementwise_close"},
        },
    )


def environment(gpu: str = "NVIDIA B200") -> dict[str, Any]:
    return _m(
        "ExecutionEnvironment",
        "env-" + gpu.lower().replace(" ", "-"),
        {
            "hardware": {"vendor": "nvidia", "product": gpu, "architecture": "sm_100"},
            "software": {"driver": "580.00"},
        },
    )


def implementation(author: int, op_digest: str, *, source: bool = True) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "projectRevision": {
            "repository": f"https://example.invalid/author-{author}",
            "version": f"v{author}",
        },
        "operation": {"specDigest": op_digest},
        "callable": {"language": "triton"},
        "support": {"hardwareArchitectures": ["sm_100"], "dtypes": ["bf16"]},
        "licensing": {"declared": "Apache-2.0"},
    }
    if source:
        spec["source"] = {"contentDigest": "sha256:" + f"{author:064x}", "fileName": "kernel.py"}
    return _m("ImplementationRevision", f"impl-{author}", spec, title=f"Kernel by author {author}")


def bundle(
    *,
    group: int = 0,
    author: int = 0,
    value: int = 1000,
    observed: str = "2026-01-01T00:00:00Z",
    status: str = "passed",
    raw_evidence: bool = False,
    source: bool = True,
    gpu: str = "NVIDIA B200",
    external: str | None = None,
) -> dict[str, Checked]:
    """A checked bundle {run, protocol, environment, workload, implementation, operation}.
    Runs of one ``group`` (and gpu) share a comparison key; ``author`` varies the kernel."""
    op = check_manifest(operation(group % 7), source="builder")
    wl = check_manifest(workload(group % 7, 1024 * (1 + group // 7), op.digest), source="builder")
    pr = check_manifest(protocol(), source="builder")
    env = check_manifest(environment(gpu), source="builder")
    impl = check_manifest(implementation(author, op.digest, source=source), source="builder")
    spec: dict[str, Any] = {
        "implementationDigest": impl.digest,
        "workloadDigest": wl.digest,
        "protocolDigest": pr.digest,
        "environmentDigest": env.digest,
        "status": status,
        "timing": {"primaryStatistic": "median", "latencyNs": {"median": value}},
        "observedAt": observed,
        "sourceNative": {
            "source": "synthetic",
            "externalId": external or f"{group}-{author}-{value}",
        },
    }
    if raw_evidence:
        spec["evidence"] = {
            "rawSamples": {"uri": "https://example.invalid/samples", "digest": "sha256:" + "0" * 64}
        }
    run = check_manifest(
        _m("BenchmarkRun", f"run-{group}-{author}-{value}", spec), source="builder"
    )
    return {
        "run": run,
        "protocol": pr,
        "environment": env,
        "workload": wl,
        "implementation": impl,
        "operation": op,
    }


def ingest_event(
    parts: dict[str, Checked], *, drop: tuple[str, ...] = (), aliases: tuple[str, ...] = ()
) -> RunIngested:
    """A run.ingested event carrying the bundle (minus ``drop`` roles, recorded as unresolved)."""
    manifests = {role: c.manifest for role, c in parts.items() if role not in drop}
    native = parts["run"].manifest["spec"]["sourceNative"]
    return RunIngested(
        runDigest=parts["run"].digest,
        kind="BenchmarkRun",
        manifests=manifests,
        origin=Origin(
            source="synthetic",
            importer="tests",
            importerVersion="1",
            externalId=native["externalId"],
        ),
        unresolved=[
            r
            for r in ("protocol", "environment", "workload", "implementation", "operation")
            if r in drop
        ],
        aliases=list(aliases) or [f"synthetic:{native['externalId']}"],
    )


def key_registration(key: SigningKey, role: str) -> KeyRegistered:
    return KeyRegistered(
        keyId=key.key_id,
        publicKey=base64.b64encode(key.public.raw).decode(),
        role=role,  # type: ignore[arg-type]
        name=f"{role}-{key.key_id[:8]}",
    )


def statement(
    entry_type: str,
    run_digest: str,
    predicate_type: str,
    predicate: dict[str, Any],
    key: SigningKey,
) -> Pending:
    """An in-toto Statement v1 about a run, signed (DSSE) by ``key``."""
    body = {
        "_type": "https://in-toto.io/Statement/v1",
        "subject": [{"name": run_digest, "digest": {"sha256": run_digest.removeprefix("sha256:")}}],
        "predicateType": predicate_type,
        "predicate": predicate,
    }
    payload = msgspec.json.encode(body)
    envelope = encode_envelope(sign_envelope(INTOTO_PAYLOAD_TYPE, payload, key))
    return Pending(
        type=entry_type,
        subject=run_digest,
        payload=payload,
        payload_type=INTOTO_PAYLOAD_TYPE,
        envelope=envelope,
    )


def rerun(
    run_digest: str,
    key: SigningKey,
    *,
    passed: bool = True,
    within: bool = True,
    value: float = 1000,
) -> Pending:
    predicate = {
        "correctnessPassed": passed,
        "withinTolerance": within,
        "measured": {"metric": "latency", "statistic": "median", "unit": "ns", "value": value},
    }
    return statement(
        "rerun.completed.v1", run_digest, "https://benchproof.dev/rerun/v1", predicate, key
    )


def rerun_v2(
    run_digest: str,
    key: SigningKey,
    samples: list[float],
    *,
    passed: bool = True,
    request_id: str = "sha256:" + "0" * 64,
    **extra: Any,
) -> Pending:
    """A ``rerun.completed.v2`` statement: raw samples (ns), no verdict (``extra`` adds fields
    to the predicate, e.g. a verdict the server must refuse)."""
    predicate = {
        "requestId": request_id,
        "samples": samples,
        "correctness": {"passed": passed, "detail": "max abs error 1e-7 against float64"},
        "environment": {"kind": "cpu", "model": "Test CPU", "architecture": "x86_64"},
        "harness": {"name": "test-harness", "version": "1"},
        **extra,
    }
    return statement(
        "rerun.completed.v2", run_digest, "https://benchproof.dev/rerun/v2", predicate, key
    )


def rerun_claim(
    run_digest: str,
    request_id: str,
    key: SigningKey,
    *,
    lease_until: str = "2099-01-01T00:00:00.000Z",
    environment: dict[str, str] | None = None,
) -> Pending:
    """A ``rerun.claimed.v2`` of ``request_id``, signed by the worker's key ``key``."""
    from events.types import RerunClaimedV2

    event = RerunClaimedV2(
        runDigest=run_digest,
        requestId=request_id,
        worker=key.key_id,
        leaseUntil=lease_until,
        environment=environment
        or {"kind": "gpu", "model": "NVIDIA B200", "architecture": "sm_100"},
    )
    return signed_event(event, run_digest, key)


def attestation(run_digest: str, key: SigningKey, text: str = "reproduced") -> Pending:
    return statement(
        "attestation.posted.v1",
        run_digest,
        "https://benchproof.dev/attestation/v1",
        {"kind": "note", "text": text},
        key,
    )


def signed_event(event: Any, subject: str, key: SigningKey) -> Pending:
    """One of our events, signed by ``key`` instead of the index key (self-registrations,
    revocations and rotations by the key itself)."""
    from events.types import EVENT_ENCODER, event_tag

    payload = EVENT_ENCODER.encode(event)
    envelope = encode_envelope(sign_envelope("application/vnd.benchproof.event+json", payload, key))
    return Pending(type=event_tag(event), subject=subject, payload=payload, envelope=envelope)


def log_with_attesters(data: Path, keys: list[SigningKey]) -> str:
    """Initialise the data directory ``data`` with one run and ``keys`` registered as community
    keys (who may attest it); return the run's digest."""
    from service.core.init import init_data_dir

    ledger, _ = init_data_dir(data)
    with ledger:
        parts = bundle(group=1, author=1, value=100, raw_evidence=True)
        run = parts["run"].digest
        ledger.append([(ingest_event(parts), run)])
        ledger.append_pending(
            [signed_event(key_registration(k, "community"), k.key_id, k) for k in keys]
        )
    return run
