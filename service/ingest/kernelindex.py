"""``benchproof ingest kernelindex-catalog EXPORT``: KernelIndex's catalog export (zstd JSONL).

Each line is ``{"table", "row"}``. Kernel runs (``benchmark_runs``) become ``run.ingested`` with
their run, protocol and environment manifests and the workload, implementation, operation and
project they reference; serving runs with their model, configuration, workload and stack.
Projects and operations no run references become ``manifest.recorded``; the sources become
``source.registered`` with their licenses and notices. KernelIndex ids are kept as
``kernelindex:<uuid>`` aliases, and ``<source>:<externalId>`` too (KernelBot reuses external
ids, so such an alias may name several runs). ``record_events`` (leader history) and
``measurements`` are derived data: our projections recompute them from the manifests.
"""

from __future__ import annotations

import io
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import zstandard

from events import check_manifest
from events.documents import Checked
from events.errors import InvalidManifest
from events.types import Origin, SourceRegistered
from service.ingest.core import Plan, Rejected, RunItem
from service.ingest.files import SourceFile, walk

__all__ = ["IMPORTER", "VERSION", "plan"]

IMPORTER = "kernelindex-catalog"
VERSION = "1"
SUFFIXES = (".jsonl.zst", ".jsonl")
_TABLES = (
    "sources",
    "projects",
    "operations",
    "workloads",
    "implementations",
    "benchmark_runs",
    "model_revisions",
    "serving_stack_revisions",
    "serving_configurations",
    "serving_workloads",
    "serving_runs",
)


class _Line(msgspec.Struct):
    table: str
    row: msgspec.Raw


_LINE = msgspec.json.Decoder(_Line)
_ROW = msgspec.json.Decoder()


def _lines(f: SourceFile) -> Iterator[bytes]:
    if f.path.name.endswith(".zst"):
        try:
            data = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(f.data)).read()
        except zstandard.ZstdError as exc:
            raise InvalidManifest(f"{f.path}: not a zstd file: {exc}") from None
    else:
        data = f.data
    return iter(data.splitlines())


class _Cache:
    """Checks each shared manifest once (protocols and environments repeat hundreds of times)."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.by_bytes: dict[bytes, Checked] = {}
        self.encoder = msgspec.json.Encoder()

    def check(self, manifest: Any, where: str) -> Checked:
        key = self.encoder.encode(manifest)
        found = self.by_bytes.get(key)
        if found is None:
            found = check_manifest(manifest, source=self.source, path=where)
            self.by_bytes[key] = found
        return found


def plan(paths: list[Path]) -> Plan:
    """Read every catalog export under ``paths``.

    Raises:
        InvalidManifest: a line is not JSON, or the file is not a catalog export.
    """
    out = Plan()
    for f in walk(paths, SUFFIXES):
        _plan_file(f, out)
    return out


def _plan_file(f: SourceFile, out: Plan) -> None:
    source_name = str(f.path)
    tables: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for number, line in enumerate(_lines(f), start=1):
        if not line.strip():
            continue
        try:
            item = _LINE.decode(line)
            if item.table in _TABLES:
                tables[item.table].append(_ROW.decode(item.row))
        except msgspec.DecodeError as exc:
            raise InvalidManifest(
                f"{source_name}: line {number}: not a catalog line: {exc}"
            ) from None
    if not tables.get("benchmark_runs") and not tables.get("serving_runs"):
        raise InvalidManifest(
            f"{source_name}: no benchmark_runs or serving_runs: not a KernelIndex catalog export"
        )
    cache = _Cache(source_name)
    sources = {r["id"]: r for r in tables["sources"]}
    for row in tables["sources"]:
        policy = row.get("policy") or {}
        out.sources.append(
            SourceRegistered(
                source=row["slug"],
                name=row["name"],
                url=policy.get("url"),
                license=policy.get("license"),
                notice=policy.get("attribution")
                or "Facts from the source's public pages; no data license: not for republication.",
            )
        )

    def origin(row: dict[str, Any], external: str | None) -> Origin:
        slug = sources.get(row.get("sourceId", ""), {}).get("slug", "kernelindex")
        return Origin(
            source=slug,
            importer=IMPORTER,
            importerVersion=VERSION,
            snapshotDigest=f.digest,
            externalId=external,
            path=f.path.name,
        )

    def checked(rows: list[dict[str, Any]], table: str) -> dict[str, Checked]:
        found: dict[str, Checked] = {}
        for row in rows:
            try:
                found[row["id"]] = cache.check(row["manifest"], f"{table}[{row['id']}].manifest")
            except InvalidManifest as exc:
                out.rejected.append(Rejected(f.path.name, f"{table} {row['id']}", exc.detail))
        return found

    operations = checked(tables["operations"], "operations")
    workloads = checked(tables["workloads"], "workloads")
    implementations = checked(tables["implementations"], "implementations")
    projects = checked(tables["projects"], "projects")
    workload_operation = {r["id"]: r["operationId"] for r in tables["workloads"]}
    implementation_project = {r["id"]: r.get("projectId") for r in tables["implementations"]}
    used_projects: set[str] = set()
    used_operations: set[str] = set()
    for row in tables["benchmark_runs"]:
        manifests = row["manifest"]
        where = f"benchmark_runs[{row['id']}].manifest"
        try:
            run = cache.check(manifests["run"], f"{where}.run")
            given = {
                "protocol": cache.check(manifests["protocol"], f"{where}.protocol"),
                "environment": cache.check(manifests["environment"], f"{where}.environment"),
            }
        except (InvalidManifest, KeyError, TypeError) as exc:
            out.rejected.append(Rejected(f.path.name, f"benchmark_runs {row['id']}", str(exc)))
            continue
        workload = workloads.get(row.get("workloadId", ""))
        if workload is not None:
            given["workload"] = workload
            operation_id = workload_operation.get(row["workloadId"], "")
            if operation_id in operations:
                given["operation"] = operations[operation_id]
                used_operations.add(operation_id)
        implementation = implementations.get(row.get("implementationId", ""))
        if implementation is not None:
            given["implementation"] = implementation
            project_id = implementation_project.get(row["implementationId"])
            if project_id in projects:
                given["project"] = projects[project_id]
                used_projects.add(project_id)
        native = run.manifest["spec"].get("sourceNative", {})
        external = native.get("externalId")
        item_origin = origin(row, external)
        aliases = [f"kernelindex:{row['id']}"]
        if external:
            aliases.append(f"{item_origin.source}:{external}")
        out.runs.append(
            RunItem(
                run=run,
                given=given,
                origin=item_origin,
                aliases=tuple(aliases),
                publishedAt=row.get("publishedAt"),
            )
        )
    _serving(tables, f, out, cache, origin)
    for table, found, used in (
        ("projects", projects, used_projects),
        ("operations", operations, used_operations),
    ):
        for row_id, c in found.items():
            if row_id not in used:
                out.manifests.append(
                    (
                        c,
                        Origin(
                            source="kernelindex",
                            importer=IMPORTER,
                            importerVersion=VERSION,
                            snapshotDigest=f.digest,
                            externalId=f"{table}/{row_id}",
                            path=f.path.name,
                        ),
                    )
                )


def _serving(
    tables: dict[str, list[dict[str, Any]]], f: SourceFile, out: Plan, cache: _Cache, origin: Any
) -> None:
    def by_id(table: str) -> dict[str, Checked]:
        found = {}
        for row in tables[table]:
            try:
                found[row["id"]] = cache.check(row["manifest"], f"{table}[{row['id']}].manifest")
            except InvalidManifest as exc:
                out.rejected.append(Rejected(f.path.name, f"{table} {row['id']}", exc.detail))
        return found

    models = by_id("model_revisions")
    stacks = by_id("serving_stack_revisions")
    configurations = by_id("serving_configurations")
    workloads = by_id("serving_workloads")
    stack_of = {r["id"]: r.get("stackRevisionId") for r in tables["serving_configurations"]}
    for row in tables["serving_runs"]:
        try:
            run = cache.check(row["manifest"], f"serving_runs[{row['id']}].manifest")
        except InvalidManifest as exc:
            out.rejected.append(Rejected(f.path.name, f"serving_runs {row['id']}", exc.detail))
            continue
        given: dict[str, Checked] = {}
        for role, table, key in (
            ("model", models, "modelRevisionId"),
            ("configuration", configurations, "configurationId"),
            ("workload", workloads, "workloadId"),
        ):
            if row.get(key) in table:
                given[role] = table[row[key]]
        stack_id = stack_of.get(row.get("configurationId", ""))
        if stack_id in stacks:
            given["stack"] = stacks[stack_id]
        native = run.manifest["spec"].get("sourceNative", {})
        external = native.get("externalId")
        item_origin = origin(row, external)
        aliases = [f"kernelindex:{row['id']}"]
        if external:
            aliases.append(f"{item_origin.source}:{external}")
        out.runs.append(
            RunItem(
                run=run,
                given=given,
                origin=item_origin,
                aliases=tuple(aliases),
                publishedAt=row.get("publishedAt"),
            )
        )
