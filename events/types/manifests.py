"""Manifest events: any KernelIndex manifest that is not a run, recorded as published."""

from __future__ import annotations

from typing import Any

from events.types.base import Event, Origin, Sha256


class ManifestRecorded(Event, frozen=True, tag="manifest.recorded.v1"):
    """A normalised manifest (operation, workload, implementation, project, protocol,
    environment, serving model/stack/configuration/workload). ``digest`` is its spec digest."""

    digest: Sha256
    kind: str
    manifest: dict[str, Any]
    origin: Origin


ManifestEvent = ManifestRecorded
