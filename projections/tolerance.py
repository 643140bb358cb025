"""The tolerance policy, and the index's judgement of a rerun by it (docs/evidence.md).

A rerun matches a run when the chosen statistic of what it measured (``median`` of the raw
samples of a ``rerun.completed.v2``; the one measured value of a v1 entry) lies within a relative
margin of the run's reported primary value, both in nanoseconds. The policy is an event
(``policy.changed.v1`` with ``policy = "tolerance"``, signed by the index): it applies from its
position on and never rewrites an earlier judgement. ``benchproof init`` records
``DEFAULT_POLICY``; a log written before policies were recorded is judged by it too.

Parameters (``PolicyChanged.parameters``)::

    {"default": {"statistic": "median", "relativeMargin": 0.1, "symmetric": true,
                 "minSamples": 5},
     "families": {"<comparability family>": {...same fields...}}}

``families`` are keyed by the comparability family its protocol names
(``spec.comparability.family``); a run of no listed family takes ``default``. ``symmetric``: a rerun faster than the margin also misses
(a reported figure much slower than what the rerun measured is as wrong as one much faster);
``false`` lets a faster rerun pass (only a slower one misses). A rerun with fewer than
``minSamples`` samples is not a match.
"""

from __future__ import annotations

import math
import statistics
from typing import Any, Literal

import msgspec

__all__ = [
    "DEFAULT_POLICY",
    "POLICY_NAME",
    "Judgement",
    "Tolerance",
    "TolerancePolicy",
    "judge",
    "policy_from",
    "to_ns",
]

POLICY_NAME = "tolerance"


class Tolerance(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """How one family's reruns are compared with the reported primary value."""

    relativeMargin: float
    statistic: Literal["median", "mean", "min"] = "median"
    symmetric: bool = True
    minSamples: int = 5


class TolerancePolicy(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A version of the tolerance policy: the default and per-family tolerances."""

    version: str
    default: Tolerance
    families: dict[str, Tolerance] = {}

    def of(self, family: str | None) -> Tolerance:
        """The tolerance of the comparability ``family`` (the default if none is listed)."""
        return self.families.get(family or "", self.default)

    def parameters(self) -> dict[str, Any]:
        """The policy's parameters as a ``policy.changed.v1`` event carries them."""
        out: dict[str, Any] = msgspec.to_builtins(self)
        out.pop("version")
        return out


DEFAULT_POLICY = TolerancePolicy(
    version="tolerance-v1",
    default=Tolerance(relativeMargin=0.10, statistic="median", symmetric=True, minSamples=5),
)
"""Recorded by ``benchproof init``: the median of at least five samples within 10 % of the
reported value, either way."""


def policy_from(version: str, parameters: dict[str, Any]) -> TolerancePolicy | None:
    """The policy a ``policy.changed.v1`` event states (None: its parameters are not a
    tolerance policy, and the one in force stays)."""
    try:
        policy = msgspec.convert({**parameters, "version": version}, TolerancePolicy)
    except msgspec.ValidationError:
        return None
    tolerances = [policy.default, *policy.families.values()]
    if any(not (0 <= t.relativeMargin < 10 and t.minSamples >= 1) for t in tolerances):
        return None
    return policy


_NS_PER = {"ns": 1.0, "us": 1e3, "µs": 1e3, "ms": 1e6, "s": 1e9}


def to_ns(value: float | None, unit: str | None) -> float | None:
    """``value`` in ``unit`` as nanoseconds (None: not a time, or no value)."""
    if value is None or unit is None:
        return None
    scale = _NS_PER.get(unit.strip().lower())
    return None if scale is None else value * scale


class Judgement(msgspec.Struct, frozen=True):
    """The index's judgement of one rerun: does it match, by which statistic and value (ns),
    against which reported value (ns), under which policy version, and why not."""

    within: bool
    statistic: str
    measuredNs: float | None
    reportedNs: float | None
    policyVersion: str
    why: str = ""


def _statistic(samples: tuple[float, ...], name: str) -> float:
    if name == "mean":
        return statistics.fmean(samples)
    if name == "min":
        return min(samples)
    return statistics.median(samples)


def judge(
    samples: tuple[float, ...],
    reported_ns: float | None,
    policy: TolerancePolicy,
    family: str | None,
    *,
    at_least: int | None = None,
) -> Judgement:
    """Whether ``samples`` (ns) match the reported value ``reported_ns`` under ``policy``;
    ``at_least`` replaces the policy's ``minSamples`` (a v1 rerun's one measured value)."""
    tolerance = policy.of(family)
    name = tolerance.statistic
    if reported_ns is None or reported_ns <= 0:
        return Judgement(False, name, None, reported_ns, policy.version, "no reported time")
    needed = tolerance.minSamples if at_least is None else at_least
    if len(samples) < needed:
        return Judgement(
            False,
            name,
            None,
            reported_ns,
            policy.version,
            f"{len(samples)} samples, the policy asks for {needed}",
        )
    if not all(math.isfinite(x) and x > 0 for x in samples):
        return Judgement(False, name, None, reported_ns, policy.version, "a sample is not valid")
    measured = _statistic(samples, name)
    change = (measured - reported_ns) / reported_ns
    margin = tolerance.relativeMargin
    within = -margin <= change <= margin if tolerance.symmetric else change <= margin
    why = "" if within else f"{change:+.1%} from the reported value; the margin is {margin:.0%}"
    return Judgement(within, name, measured, reported_ns, policy.version, why)
