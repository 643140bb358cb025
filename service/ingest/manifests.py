"""``benchproof ingest manifest PATH...``: KernelIndex manifests and bundles, JSON or YAML.

Runs (bare or in bundles) become ``run.ingested``; every other manifest not already held
becomes ``manifest.recorded`` (unless a run of the same batch carries it). A run's source is its
``sourceNative.source`` (else ``manifest``), and ``<source>:<externalId>`` becomes its alias.
An invalid document refuses the whole import (every invalid one is reported), unless
``--skip-invalid``.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from events import check_manifest, identify, is_bundle, parse_bundle, read_documents
from events.documents import Checked
from events.errors import InvalidManifest
from events.types import Origin
from service.ingest.core import Plan, Rejected, RunItem
from service.ingest.files import SourceFile, walk

__all__ = ["IMPORTER", "VERSION", "plan"]

IMPORTER = "manifest"
VERSION = "1"
SUFFIXES = (".json", ".jsonl", ".yaml", ".yml")


def _run_item(run: Checked, given: dict[str, Checked], snapshot: str, path: str) -> RunItem:
    native = run.manifest["spec"].get("sourceNative", {})
    source = native.get("source", IMPORTER)
    external = native.get("externalId")
    origin = Origin(
        source=source,
        importer=IMPORTER,
        importerVersion=VERSION,
        snapshotDigest=snapshot,
        externalId=external,
        path=path,
    )
    aliases = (f"{source}:{external}",) if external else ()
    return RunItem(run=run, given=given, origin=origin, aliases=aliases)


def _plan_document(out: Plan, doc: Any, f: SourceFile, source: str, where: str) -> None:
    """Check one document and add it to the plan (a run, or a manifest on its own).

    Raises:
        InvalidManifest: the document is invalid.
    """
    if is_bundle(doc):
        parts = parse_bundle(doc, source=source, path=where)
        identify(parts, source=source)  # declared digests must match the bundled ones
        run = parts.pop("run")
        out.runs.append(_run_item(run, parts, f.digest, f.path.name))
        return
    checked = check_manifest(doc, source=source, path=where)
    if checked.kind in ("BenchmarkRun", "ServingRun"):
        out.runs.append(_run_item(checked, {}, f.digest, f.path.name))
        return
    origin = Origin(
        source=IMPORTER,
        importer=IMPORTER,
        importerVersion=VERSION,
        snapshotDigest=f.digest,
        path=f.path.name,
    )
    out.manifests.append((checked, origin))


def plan(paths: Iterable[Path]) -> Plan:
    """Read and check every document under ``paths``; an invalid document (or a file that does
    not parse) becomes a rejected row naming file, document and field, so that one import
    reports every problem at once.

    Raises:
        NotFound / UsageError: a path is missing or a folder holds no manifest.
    """
    out = Plan()
    for f in walk(paths, SUFFIXES):
        source = str(f.path)
        try:
            docs = read_documents(f.data, source=source)
        except InvalidManifest as exc:
            out.rejected.append(Rejected(f.path.name, "(file)", exc.detail))
            continue
        for i, doc in enumerate(docs):
            where = "$" if len(docs) == 1 else f"$[{i}]"
            try:
                _plan_document(out, doc, f, source, where)
            except InvalidManifest as exc:
                out.rejected.append(Rejected(f.path.name, f"document {where}", exc.detail))
    return out
