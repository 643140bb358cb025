"""What ``benchproof verify`` reports: the findings, each with the position to blame."""

from __future__ import annotations

import msgspec

__all__ = ["NO_POSITION", "Finding", "VerifyReport"]

NO_POSITION = 2**62
"""The position of a finding no entry is to blame for (the log as a whole)."""


class Finding(msgspec.Struct, frozen=True, order=True):
    """One thing wrong with the log; ``position`` is the entry to blame, if one is."""

    position: int
    reason: str


class VerifyReport(msgspec.Struct):
    entries: int = 0
    root: str = ""
    checkpoint_size: int | None = None
    checkpoints: int = 0
    findings: list[Finding] = []

    @property
    def ok(self) -> bool:
        return not self.findings
