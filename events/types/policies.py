"""Policy and citation events."""

from __future__ import annotations

from typing import Any

from events.types.base import Event, Sha256


class PolicyChanged(Event, frozen=True, tag="policy.changed.v1"):
    """A ranking or tolerance policy version takes effect from this position on."""

    policy: str
    version: str
    parameters: dict[str, Any]


class CitationNotarized(Event, frozen=True, tag="citation.notarized.v1"):
    """A citation recorded in the log (optional; a receipt is verifiable without it)."""

    runDigest: Sha256
    permalink: str
    accessedAt: str
    checkpointSize: int


PolicyEvent = PolicyChanged | CitationNotarized
