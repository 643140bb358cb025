"""The rerun requests as they stand (``GET /v1/reruns``): each request's state at an instant
(pending, claimed while a lease runs, completed), the environment its run needs (``needs``),
and the harness's input for one (``request_bundle``). The writes are ``service.app.reruns``.
"""

from __future__ import annotations

import contextlib
from typing import Any, Literal

import msgspec

from events.port import Session
from events.stores.sqlbase import SqlLog
from projections import queries
from projections.views import RerunRequest, RunView
from service.errors import NotFound, UsageError

__all__ = [
    "CPU_ARCHITECTURES",
    "RerunItem",
    "RerunPage",
    "State",
    "UnknownRequest",
    "found_request",
    "needs",
    "request_bundle",
    "rerun_list",
]

CPU_ARCHITECTURES = frozenset(
    {"x86_64", "amd64", "i686", "aarch64", "arm64", "riscv64", "ppc64le", "s390x"}
)

State = Literal["pending", "claimed", "completed"]


class UnknownRequest(NotFound):
    """No rerun request has this id."""


def needs(view: RunView) -> dict[str, str] | None:
    """The environment a rerun of the run needs: ``kind`` (``cpu`` when the architecture is a
    CPU's, else ``gpu``), ``model`` and ``architecture`` from its environment manifest (None:
    the run names no hardware)."""
    if view.hardware is None or view.hardwareArchitecture is None:
        return None
    cpu = view.hardwareArchitecture.strip().lower() in CPU_ARCHITECTURES
    out = {
        "kind": "cpu" if cpu else "gpu",
        "model": view.hardware,
        "architecture": view.hardwareArchitecture,
    }
    if view.hardwareVendor:
        out["vendor"] = view.hardwareVendor
    return out


class RerunItem(msgspec.Struct, frozen=True, omit_defaults=True):
    """A rerun request and its state now."""

    requestId: str
    runDigest: str
    reason: str
    requestedAt: int
    state: State
    needs: dict[str, str] | None = None
    minSamples: int | None = None  # what the tolerance policy in force asks of a result
    claimer: str | None = None
    leaseUntil: str | None = None
    completedAt: int | None = None


class RerunPage(msgspec.Struct, frozen=True):
    """The rerun requests in the state asked for, oldest first."""

    items: list[RerunItem]
    asOf: int


def _state(request: RerunRequest, now: str) -> State:
    if request.completedSeq is not None:
        return "completed"
    return "claimed" if request.leased_at(now) else "pending"


def found_request(conn: Session, request_id: str) -> tuple[RunView, RerunRequest]:
    """The run a request is about (its view now) and the request as that view holds it.

    Raises:
        UnknownRequest: no request of the index has this id.
    """
    digest = queries.rerun_request_run(conn, request_id)
    view = queries.run_view(conn, digest) if digest is not None else None
    request = None
    if view is not None:
        request = next((r for r in view.rerunRequests if r.requestId == request_id), None)
    if view is None or request is None:
        raise UnknownRequest(f"no rerun request {request_id}", id=request_id)
    return view, request


def rerun_list(conn: Session, *, size: int, now: str, state: str | None) -> RerunPage:
    """The requests (in ``state``, if given) as they stand at the instant ``now``.

    Raises:
        UsageError: ``state`` is not pending, claimed or completed.
    """
    if state not in (None, "pending", "claimed", "completed"):
        raise UsageError("state must be pending, claimed or completed", state=state)
    items = []
    policy = queries.tolerance_policy(conn)
    for request_id in queries.rerun_request_ids(conn):
        with contextlib.suppress(UnknownRequest):  # a request the fold did not take
            view, request = found_request(conn, request_id)
            now_state = _state(request, now)
            if state is None or now_state == state:
                items.append(
                    RerunItem(
                        requestId=request.requestId,
                        runDigest=view.runDigest,
                        reason=request.reason,
                        requestedAt=request.seq,
                        state=now_state,
                        needs=needs(view),
                        minSamples=policy.of(view.comparabilityFamily).minSamples,
                        claimer=request.claimer,
                        leaseUntil=request.leaseUntil,
                        completedAt=request.completedSeq,
                    )
                )
    return RerunPage(items, size)


def request_bundle(conn: Session, log: SqlLog, request_id: str) -> dict[str, Any]:
    """The harness's input material for a request: the run's digest and the manifests it was
    ingested with, by role.

    Raises:
        UnknownRequest: no request of the index has this id.
    """
    view, _ = found_request(conn, request_id)
    bundle = dict(queries.run_bundle(conn, log, view.runDigest) or {})
    # Manifests the run waited on and that came later (manifest.recorded) complete it.
    spec = bundle.get("run", {}).get("spec", {})
    for role, field in _REFERENCES.items():
        digest = spec.get(field)
        if role not in bundle and isinstance(digest, str):
            found = queries.manifest(conn, digest)
            if found is not None:
                bundle[role] = found
    return {"runDigest": view.runDigest, "requestId": request_id, "manifests": bundle}


_REFERENCES = {
    "protocol": "protocolDigest",
    "environment": "environmentDigest",
    "workload": "workloadDigest",
    "implementation": "implementationDigest",
}
