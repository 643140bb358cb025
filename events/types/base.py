"""The base of every stored event, and the provenance every ingested record carries."""

from __future__ import annotations

from typing import Annotated

import msgspec
from msgspec import Meta

Sha256 = Annotated[str, Meta(pattern=r"^sha256:[0-9a-f]{64}\Z")]
KeyId = Annotated[str, Meta(pattern=r"^[0-9a-f]{64}\Z")]


class Event(msgspec.Struct, frozen=True, kw_only=True, tag_field="type"):
    """Base for every stored event. Subclasses set an explicit, versioned tag
    ``family.verb.vN``; a tag is never derived from a class name and never reused."""


class Origin(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """Where an ingested record came from: the source, the exact snapshot (its digest), and
    the importer (and version) that read it."""

    source: str
    importer: str
    importerVersion: str
    snapshotDigest: Sha256 | None = None
    externalId: str | None = None
    path: str | None = None
