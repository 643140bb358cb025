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
from pathlib import Path
from typing import Any, NamedTuple

import msgspec
import zstandard

from events.bulk import cores
from events.documents import Checked
from events.errors import InvalidManifest
from events.types import Origin, SourceRegistered
from service.ingest.core import Plan, Rejected, RunItem
from service.ingest.files import SourceFile, walk
from service.ingest.pool import CheckPool

__all__ = ["CHECK_ON_EVERY_CORE_FROM", "IMPORTER", "VERSION", "plan"]

IMPORTER = "kernelindex-catalog"
VERSION = "1"
SUFFIXES = (".jsonl.zst", ".jsonl")
CHECK_ON_EVERY_CORE_FROM = 2_000
"""Rows from which an export's manifests are checked in worker processes, one per core (a
smaller export is checked faster in this process than workers start)."""
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


def _lines(f: SourceFile) -> list[bytes]:
    if f.path.name.endswith(".zst"):
        try:
            data = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(f.data)).read()
        except zstandard.ZstdError as exc:
            raise InvalidManifest(f"{f.path}: not a zstd file: {exc}") from None
    else:
        data = f.data
    return data.splitlines()


class _Cache:
    """Checks each shared manifest once (protocols and environments repeat hundreds of times),
    straight from its JSON text: validated while decoding, digested from the text. The checks
    run in ``pool``'s worker processes, submitted as the rows are read."""

    def __init__(self, pool: CheckPool) -> None:
        self.pool = pool
        self.by_bytes: dict[bytes, Checked] = {}

    def check(self, manifest: msgspec.Raw, where: str) -> Checked:
        key = bytes(manifest)
        found = self.by_bytes.get(key)
        if found is None:
            found = self.pool.result(key, where)
            self.by_bytes[key] = found
        return found


class _RunManifests(msgspec.Struct):
    run: msgspec.Raw
    protocol: msgspec.Raw
    environment: msgspec.Raw


class _Row(msgspec.Struct):
    """The columns of a row the importer reads; the manifests stay JSON text until checked."""

    id: str
    manifest: msgspec.Raw = msgspec.Raw()  # empty when the row has none
    operationId: str | None = None
    projectId: str | None = None
    workloadId: str | None = None
    implementationId: str | None = None
    sourceId: str | None = None
    publishedAt: str | None = None
    modelRevisionId: str | None = None
    configurationId: str | None = None
    stackRevisionId: str | None = None
    supersedesId: str | None = None  # the row (KernelIndex id) this one corrects
    retractedAt: str | None = None
    retractionReason: str | None = None


_ROW_TYPED = msgspec.json.Decoder(_Row)
_RUN_MANIFESTS = msgspec.json.Decoder(_RunManifests)


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
    lines = _lines(f)
    parallel = len(lines) >= CHECK_ON_EVERY_CORE_FROM
    pool = CheckPool(str(f.path), processes=cores() if parallel else 1)
    _plan_rows(f, _read_tables(f, lines, pool), pool, out)


class _Tables(NamedTuple):
    sources: list[dict[str, Any]]
    rows: dict[str, list[_Row]]


def _read_tables(f: SourceFile, lines: list[bytes], pool: CheckPool) -> _Tables:
    """The rows of every table the importer reads. Each manifest they hold is handed to
    ``pool`` as its row is read, so that the workers check while this process reads on.

    Raises:
        InvalidManifest: a line is not a catalog line (the first such line is named), the file
            holds no runs, or a row is not a catalog row (in that order).
    """
    source_name = str(f.path)
    sources: list[dict[str, Any]] = []
    tables: dict[str, list[_Row]] = defaultdict(list)
    # The first row of each table that is not a catalog row, said once every line has been
    # read (a bad line is said first), the table seen first winning.
    bad_rows: dict[str, msgspec.DecodeError] = {}
    seen: dict[str, None] = {}
    has_runs = False
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            entry = _LINE.decode(line)
        except msgspec.DecodeError as exc:
            raise InvalidManifest(
                f"{source_name}: line {number}: not a catalog line: {exc}"
            ) from None
        has_runs = has_runs or entry.table in ("benchmark_runs", "serving_runs")
        if entry.table not in _TABLES:
            continue
        seen.setdefault(entry.table)
        if entry.table in bad_rows:
            continue
        try:
            if entry.table == "sources":
                sources.append(_ROW.decode(entry.row))
            else:
                row = _ROW_TYPED.decode(entry.row)
                tables[entry.table].append(row)
                _submit(entry.table, row, pool)
        except msgspec.DecodeError as exc:
            bad_rows[entry.table] = exc
    if not has_runs:
        raise InvalidManifest(
            f"{source_name}: no benchmark_runs or serving_runs: not a KernelIndex catalog export"
        )
    for table in seen:
        if table in bad_rows:
            raise InvalidManifest(f"{source_name}: a row is not a catalog row: {bad_rows[table]}")
    return _Tables(sources, tables)


def _submit(table: str, row: _Row, pool: CheckPool) -> None:
    """Hand the manifests of ``row`` to ``pool`` to check."""
    if not row.manifest:
        return
    where = f"{table}[{row.id}].manifest"
    if table != "benchmark_runs":
        pool.submit(bytes(row.manifest), where)
        return
    try:
        parts = _RUN_MANIFESTS.decode(row.manifest)
    except msgspec.DecodeError:
        return  # rejected, with the reason, when the plan is built
    pool.submit(bytes(parts.run), f"{where}.run")
    pool.submit(bytes(parts.protocol), f"{where}.protocol")
    pool.submit(bytes(parts.environment), f"{where}.environment")


def _plan_rows(f: SourceFile, read: _Tables, pool: CheckPool, out: Plan) -> None:
    source_rows, tables = read.sources, read.rows
    cache = _Cache(pool)
    slugs = {r["id"]: r["slug"] for r in source_rows}
    for source_row in source_rows:
        policy = source_row.get("policy") or {}
        out.sources.append(
            SourceRegistered(
                source=source_row["slug"],
                name=source_row["name"],
                url=policy.get("url"),
                license=policy.get("license"),
                notice=policy.get("attribution")
                or "Facts from the source's public pages; no data license: not for republication.",
            )
        )

    def origin(row: _Row, external: str | None) -> Origin:
        return Origin(
            source=slugs.get(row.sourceId or "", "kernelindex"),
            importer=IMPORTER,
            importerVersion=VERSION,
            snapshotDigest=f.digest,
            externalId=external,
            path=f.path.name,
        )

    def reject(table: str, row: _Row, reason: str) -> None:
        out.rejected.append(Rejected(f.path.name, f"{table} {row.id}", reason))

    def checked(table: str) -> dict[str, Checked]:
        found: dict[str, Checked] = {}
        for row in tables[table]:
            if not row.manifest:
                reject(table, row, "the row has no manifest")
                continue
            try:
                found[row.id] = cache.check(row.manifest, f"{table}[{row.id}].manifest")
            except InvalidManifest as exc:
                reject(table, row, exc.detail)
        return found

    def run_item(row: _Row, run: Checked, given: dict[str, Checked]) -> RunItem:
        external = run.manifest["spec"].get("sourceNative", {}).get("externalId")
        item_origin = origin(row, external)
        aliases = [f"kernelindex:{row.id}"]
        if external:
            aliases.append(f"{item_origin.source}:{external}")
        return RunItem(
            run=run,
            given=given,
            origin=item_origin,
            aliases=tuple(aliases),
            publishedAt=row.publishedAt,
            # KernelIndex ids are stable per row: a later export that changes a row's run makes
            # a new run that supersedes the old one. A row that says it supersedes another
            # continues that row's line.
            rowKey=f"kernelindex:{row.supersedesId or row.id}",
            retraction=None
            if row.retractedAt is None
            else f"retracted by KernelIndex at {row.retractedAt}"
            + (f": {row.retractionReason}" if row.retractionReason else ""),
        )

    operations, workloads = checked("operations"), checked("workloads")
    implementations, projects = checked("implementations"), checked("projects")
    workload_operation = {r.id: r.operationId for r in tables["workloads"]}
    implementation_project = {r.id: r.projectId for r in tables["implementations"]}
    used: set[str] = set()
    for row in tables["benchmark_runs"]:
        where = f"benchmark_runs[{row.id}].manifest"
        try:
            if not row.manifest:
                raise InvalidManifest("the row has no manifest")
            parts = _RUN_MANIFESTS.decode(row.manifest)
            run = cache.check(parts.run, f"{where}.run")
            given = {
                "protocol": cache.check(parts.protocol, f"{where}.protocol"),
                "environment": cache.check(parts.environment, f"{where}.environment"),
            }
        except InvalidManifest as exc:
            reject("benchmark_runs", row, exc.detail)
            continue
        except msgspec.DecodeError as exc:
            reject("benchmark_runs", row, f"{where}: {exc}")
            continue
        workload = workloads.get(row.workloadId or "")
        if workload is not None:
            given["workload"] = workload
            operation_id = workload_operation.get(row.workloadId or "") or ""
            if operation_id in operations:
                given["operation"] = operations[operation_id]
                used.add(operation_id)
        implementation = implementations.get(row.implementationId or "")
        if implementation is not None:
            given["implementation"] = implementation
            project_id = implementation_project.get(row.implementationId or "") or ""
            if project_id in projects:
                given["project"] = projects[project_id]
                used.add(project_id)
        out.runs.append(run_item(row, run, given))
    models, stacks = checked("model_revisions"), checked("serving_stack_revisions")
    configurations, serving_workloads = (
        checked("serving_configurations"),
        checked("serving_workloads"),
    )
    stack_of = {r.id: r.stackRevisionId for r in tables["serving_configurations"]}
    for row in tables["serving_runs"]:
        try:
            if not row.manifest:
                raise InvalidManifest("the row has no manifest")
            run = cache.check(row.manifest, f"serving_runs[{row.id}].manifest")
        except InvalidManifest as exc:
            reject("serving_runs", row, exc.detail)
            continue
        given = {}
        for role, found, ref in (
            ("model", models, row.modelRevisionId),
            ("configuration", configurations, row.configurationId),
            ("workload", serving_workloads, row.workloadId),
        ):
            if ref in found:
                given[role] = found[ref]
        stack_id = stack_of.get(row.configurationId or "")
        if stack_id in stacks:
            given["stack"] = stacks[stack_id]
        out.runs.append(run_item(row, run, given))
    for table, found in (("projects", projects), ("operations", operations)):
        for row_id, c in found.items():
            if row_id not in used:
                unreferenced = Origin(
                    source="kernelindex",
                    importer=IMPORTER,
                    importerVersion=VERSION,
                    snapshotDigest=f.digest,
                    externalId=f"{table}/{row_id}",
                    path=f.path.name,
                )
                out.manifests.append((c, unreferenced))
