"""This machine as the contract's ``environment`` object, and whether two environments match.

A rerun counts only on the run's own kind of device, model and architecture: a CPU worker never
matches a GPU run, and two CPUs of one architecture but different models do not match either.
"""

from __future__ import annotations

import platform
from collections.abc import Mapping
from pathlib import Path

__all__ = ["detect", "matches", "normalise"]

CPUINFO = Path("/proc/cpuinfo")


def _cpuinfo() -> dict[str, str]:
    """The first value of each ``key : value`` line of /proc/cpuinfo ({} where there is none)."""
    try:
        text = CPUINFO.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return {}
    fields: dict[str, str] = {}
    for line in text.splitlines():
        key, colon, value = line.partition(":")
        if colon:
            fields.setdefault(key.strip(), " ".join(value.split()))
    return fields


def detect() -> dict[str, str]:
    """This machine's CPU: ``kind`` "cpu", ``model`` (/proc/cpuinfo's first "model name", else
    ``platform.processor()``, else "unknown"; with " (CPU)" added when it does not say CPU), ``architecture`` (``platform.machine()``) and
    ``vendor`` (/proc/cpuinfo's "vendor_id") when known."""
    info = _cpuinfo()
    model = info.get("model name") or platform.processor().strip() or "unknown"
    environment = {
        "kind": "cpu",
        # Named as a CPU wherever it is shown ("AMD EPYC 7B13 64-Core Processor" does not say so).
        "model": model if "cpu" in model.lower() else f"{model} (CPU)",
        "architecture": platform.machine() or "unknown",
    }
    if vendor := info.get("vendor_id"):
        environment["vendor"] = vendor
    return environment


def normalise(environment: Mapping[str, object]) -> tuple[str, str, str]:
    """``(kind, model, architecture)`` with whitespace collapsed, case folded and the model's
    " (CPU)" dropped ("" where one is absent or not a string)."""
    kind, model, architecture = (
        " ".join(value.split()).casefold() if isinstance(value := environment.get(key), str) else ""
        for key in ("kind", "model", "architecture")
    )
    # " (CPU)" is what ``detect`` adds for display: the run's manifest may not say it.
    return kind, model.removesuffix(" (cpu)"), architecture


def matches(needed: Mapping[str, object], offered: Mapping[str, object]) -> bool:
    """Whether ``offered`` is the environment ``needed``: the same kind, model and architecture
    after ``normalise`` (an environment missing any of the three matches nothing)."""
    wanted = normalise(needed)
    return all(wanted) and wanted == normalise(offered)
