"""Evidence levels (docs/evidence.md), derived only from events, never chosen by a submitter.

``reported`` (as published) -> ``reproducible`` (source available, identity complete, raw
evidence present) -> ``verified`` (an index-controlled rerun, signed by a rerunner key, passed
correctness and matched the reported primary value within the tolerance policy in force at its
position, as the index judges it from what was measured: ``projections.tolerance``) ->
``replicated`` (two or more independent rerunner identities verified it). A rerun that fails
correctness or misses the tolerance makes the run ``disputed`` (and it stays disputed: a later
passing rerun does not erase a failed one; both are shown). ``retracted`` and ``superseded`` end
a record's ranking life but keep it citable. Attestations and reports never enter here.
"""

from __future__ import annotations

import msgspec

from projections.views import EvidenceLevel, RunView

__all__ = ["evidence_of", "with_evidence"]


def _number(value: float | None) -> str:
    return "n/a" if value is None else f"{value:g}"


def evidence_of(view: RunView) -> tuple[EvidenceLevel, str]:
    """The level and a one-sentence reason for it."""
    if view.retractedReason is not None:
        return "retracted", f"Retracted: {view.retractedReason}"
    if view.supersededBy is not None:
        return (
            "superseded",
            f"Superseded by {view.supersededBy}: {view.supersededReason or ''}".strip(),
        )
    failing = [r for r in view.reruns if not (r.correctnessPassed and r.withinTolerance)]
    if failing:
        r = failing[0]
        if not r.correctnessPassed:
            why = "failed correctness"
        else:
            why = (
                f"measured {_number(r.value)} {r.unit or ''} against the reported "
                f"{_number(view.primaryValue)} {view.primaryUnit or ''}, outside the tolerance"
                + (f" ({r.why}; policy {r.policyVersion})" if r.why else "")
            )
        return (
            "disputed",
            f"An index-controlled rerun (key {r.rerunner[:12]}, entry {r.seq}) {why}.",
        )
    # An identity is a registered name: a rotated key keeps its name, so it never counts twice.
    verifiers = sorted({r.identity or r.rerunner for r in view.reruns})
    if len(verifiers) >= 2:
        return "replicated", f"Verified by {len(verifiers)} independent rerunner identities."
    if verifiers:
        return (
            "verified",
            "An index-controlled rerun passed correctness and matched the reported value "
            "within the protocol's tolerance.",
        )
    missing = []
    if not view.sourceAvailable:
        missing.append("source available")
    if view.unresolved:
        missing.append("identity complete (unresolved: " + ", ".join(view.unresolved) + ")")
    if not view.rawEvidence:
        missing.append("raw evidence (samples or logs)")
    if not missing:
        return "reproducible", "Source available, identity complete, raw evidence published."
    return "reported", "As published by the source; not yet reproducible: needs " + "; ".join(
        missing
    ) + "."


def with_evidence(view: RunView) -> RunView:
    """``view`` with its evidence level recomputed."""
    level, reason = evidence_of(view)
    if level == view.evidenceLevel and reason == view.evidenceReason:
        return view
    return msgspec.structs.replace(view, evidenceLevel=level, evidenceReason=reason)
