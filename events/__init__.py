"""What happened: manifests and their identity, event types, canonical JSON, the log store,
the Merkle tree, checkpoints and proofs. This package imports nothing else of ours."""

from events.canonical import canonical_bytes, digest, es6_number
from events.documents import (
    Checked,
    KernelIdentity,
    ManifestIdentity,
    ServingIdentity,
    check_manifest,
    identify,
    is_bundle,
    parse_bundle,
    read_documents,
)
from events.errors import CanonicalizationError, EventError, InvalidManifest
from events.identity import spec_digest

__all__ = [
    "CanonicalizationError",
    "Checked",
    "EventError",
    "InvalidManifest",
    "KernelIdentity",
    "ManifestIdentity",
    "ServingIdentity",
    "canonical_bytes",
    "check_manifest",
    "digest",
    "es6_number",
    "identify",
    "is_bundle",
    "parse_bundle",
    "read_documents",
    "spec_digest",
]
