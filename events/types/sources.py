"""Source events: the publishers whose results the index ingests."""

from __future__ import annotations

from events.types.base import Event, Origin


class SourceRegistered(Event, frozen=True, tag="source.registered.v1", omit_defaults=True):
    """A source the index ingests from, with its license and the notice it requires."""

    source: str
    name: str
    url: str | None = None
    license: str | None = None
    notice: str | None = None
    # The snapshot and importer the registration came with (None when not from an import).
    origin: Origin | None = None


SourceEvent = SourceRegistered
