"""What every importer returns: a ``Plan`` of what it read and checked (the runs it found, each a
checked run manifest with the manifests given alongside it; the standalone manifests; the
sources to register; the rows it rejected, with why), and what an import did
(``IngestResult``). ``service.ingest.resolve`` turns a plan into the entries to append, given
what the log already holds.
"""

from __future__ import annotations

import msgspec

from events.documents import Checked
from events.types import Origin, SourceRegistered

__all__ = ["IngestResult", "Plan", "Rejected", "RunItem"]


class RunItem(msgspec.Struct, frozen=True, kw_only=True):
    """One run an importer found, with the manifests its source gave alongside it."""

    run: Checked
    given: dict[str, Checked] = {}
    origin: Origin
    aliases: tuple[str, ...] = ()
    sourceStatus: str | None = None
    publishedAt: str | None = None
    rowKey: str | None = None  # the source row it came from: a changed row supersedes
    retraction: str | None = None  # the source retracted the run (the reason)


class Rejected(msgspec.Struct, frozen=True):
    """A row an importer could not read, and why."""

    file: str
    row: str
    reason: str


class Plan(msgspec.Struct, kw_only=True):
    """What an importer read and checked: nothing in it has met the log yet."""

    runs: list[RunItem] = msgspec.field(default_factory=list)
    manifests: list[tuple[Checked, Origin]] = msgspec.field(default_factory=list)
    sources: list[SourceRegistered] = msgspec.field(default_factory=list)
    rejected: list[Rejected] = msgspec.field(default_factory=list)


class IngestResult(msgspec.Struct, kw_only=True, rename="camel"):
    """What an import did (as JSON, camelCase like the rest of the API)."""

    runs_appended: int = 0
    runs_known: int = 0
    manifests_appended: int = 0
    manifests_known: int = 0
    superseded: int = 0
    unresolved: int = 0
    entries: int = 0
    size: int = 0

    def summary(self) -> str:
        if self.entries == 0:
            return (
                f"nothing new: the log already holds all {self.runs_known} runs and "
                f"{self.manifests_known} manifests (log size {self.size})"
            )
        parts = [
            f"appended {self.entries} entries: {self.runs_appended} runs, {self.manifests_appended} manifests"
        ]
        if self.superseded:
            parts.append(f"{self.superseded} supersessions")
        if self.runs_known or self.manifests_known:
            parts.append(
                f"{self.runs_known} runs and {self.manifests_known} manifests already in the log"
            )
        if self.unresolved:
            parts.append(f"{self.unresolved} runs with unresolved references")
        return "; ".join(parts) + f" (log size {self.size})"
