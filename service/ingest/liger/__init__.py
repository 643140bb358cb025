"""``benchproof ingest liger PATH...``: Liger-Kernel's committed benchmark results.

Reads ``benchmark/data/all_benchmark_data*.csv`` (a PATH may be a folder: it is walked for
``*.csv``). Every row becomes a BenchmarkRun given with its protocol, environment, workload,
operation and implementation, so that a comparison group is (kernel, mode, metric, x value,
extra config, GPU) and the providers compete inside it. Files are read oldest revision first
(``REVISIONS``), so a later revision's changed row supersedes the earlier one and a row removed
upstream stays in the log, unsuperseded. The mapping rules and their reasons are in
``service/ingest/README.md``.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any, NamedTuple

from events import InvalidManifest
from events.types import Origin, SourceRegistered
from service.ingest._build import (
    Checker,
    RowError,
    instant,
    manifest,
    ms_to_ns,
    number,
    short_hash,
    slug,
)
from service.ingest.core import Plan, Rejected, RunItem
from service.ingest.files import SourceFile, walk
from service.ingest.liger.given import (
    METRICS,
    REPOSITORY,
    given_manifests,
    read_config,
    split_parameters,
)

__all__ = ["IMPORTER", "REVISIONS", "VERSION", "plan"]

IMPORTER = "liger"
VERSION = "1"
SOURCE = "liger"

REGISTRATION = SourceRegistered(
    source=SOURCE,
    name="Liger-Kernel benchmark results",
    url=REPOSITORY,
    license="BSD-2-Clause",
    notice=(
        "Copyright 2024 LinkedIn Corporation. All Rights Reserved. Benchmark data from "
        "linkedin/Liger-Kernel benchmark/data/*.csv, redistributed under the BSD 2-Clause License."
    ),
)


class Revision(NamedTuple):
    """Where a known file came from upstream: its name under ``benchmark/data/``, the commit
    and the commit date (files are ingested oldest first)."""

    upstream: str
    commit: str
    date: str


_HEAD = "ead96b618e5c67bddc6a6e9bcb99bfe6b5ab661c"  # 2026-08-21; main CSV identical at 2120862
REVISIONS: dict[str, Revision] = {
    "sha256:a17906d4f5d0a104488c4b133c341b728abe6127b13c377deffeb82e3937887c": Revision(
        "all_benchmark_data.csv", "ee5aaf26b934808504f71ee4d20614358fa3cdbf", "2025-03-03"
    ),
    "sha256:5ba5b0462dc6497133a1579866d3b01ba170ea42f9eab8cce05c2a2d98095602": Revision(
        "all_benchmark_data.csv", _HEAD, "2026-08-21"
    ),
    "sha256:8e2a050dec85a462f0b08ece56f69ad2aad284d8191f65044c135ae8ed243fc0": Revision(
        "all_benchmark_data_cutedsl.csv", _HEAD, "2026-08-21"
    ),
    "sha256:af668e01edeb99365f8c3d2218f99934e4262ade9b0db92fad582aa95b6ba033": Revision(
        "all_benchmark_data_cutile.csv", _HEAD, "2026-08-21"
    ),
}

COLUMNS = (
    "kernel_name",
    "kernel_provider",
    "kernel_operation_mode",
    "metric_name",
    "metric_unit",
    "x_name",
    "x_label",
    "x_value",
    "y_value_50",
    "y_value_20",
    "y_value_80",
    "extra_benchmark_config_str",
    "gpu_name",
    "timestamp",
    "liger_version",
)
_KEY_COLUMNS = (
    "kernel_name",
    "kernel_provider",
    "kernel_operation_mode",
    "gpu_name",
    "x_name",
    "x_value",
    "liger_version",
)
_REFERENCED = ("implementation", "workload", "protocol", "environment")
_QUANTILES = (("y_value_50", "median"), ("y_value_20", "p20"), ("y_value_80", "p80"))
_SNAPSHOT_SUFFIX = re.compile(r"\.at-[0-9a-f]+(?=\.csv\Z)")


def _order(f: SourceFile) -> tuple[int, str, str]:
    known = REVISIONS.get(f.digest)
    return (0, known.date, str(f.path)) if known else (1, "", str(f.path))


def plan(paths: Iterable[Path]) -> Plan:
    """Read every Liger benchmark CSV under ``paths`` (oldest known revision first, unknown
    files after them in path order).

    Returns the plan: one run per valid row, the rejected rows with reasons, and the source.

    Raises:
        InvalidManifest: a file is not a Liger benchmark CSV (not UTF-8, or columns missing).
        NotFound / UsageError: a path is missing or a folder holds no CSV.
    """
    out = Plan(sources=[REGISTRATION])
    check = Checker(SOURCE)
    for f in sorted(walk(paths, (".csv",)), key=_order):
        _read_file(f, out, check)
    return out


def _read_file(f: SourceFile, out: Plan, check: Checker) -> None:
    where = str(f.path)
    try:
        text = f.data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InvalidManifest(f"{where}: not a UTF-8 CSV file: {exc}") from None
    reader = csv.DictReader(io.StringIO(text, newline=""))
    missing = [c for c in COLUMNS if c not in (reader.fieldnames or ())]
    if missing:
        raise InvalidManifest(
            f"{where}: not a Liger-Kernel benchmark CSV: missing columns {', '.join(missing)}"
        )
    revision = REVISIONS.get(f.digest)
    upstream = revision.upstream if revision else _SNAPSHOT_SUFFIX.sub("", f.path.name)
    for row in reader:
        line = f"line {reader.line_num}"
        try:
            if None in row or any(row[c] is None for c in COLUMNS):
                raise RowError("wrong number of fields")
            out.runs.append(_run(row, f, upstream, revision, check, line))
        except (RowError, InvalidManifest) as exc:
            out.rejected.append(Rejected(where, line, str(exc)))


def _run(
    row: dict[str, str],
    f: SourceFile,
    upstream: str,
    revision: Revision | None,
    check: Checker,
    line: str,
) -> RunItem:
    empty = [c for c in _KEY_COLUMNS if not row[c].strip()]
    if empty:
        raise RowError(f"{', '.join(empty)} empty")
    kernel, provider, mode = (row[c] for c in _KEY_COLUMNS[:3])
    metric_name, gpu = row["metric_name"], row["gpu_name"]
    if metric_name not in METRICS:
        raise RowError(f"unknown metric_name {metric_name!r} (expected speed or memory)")
    csv_unit, metric, unit, _ = METRICS[metric_name]
    if row["metric_unit"] != csv_unit:
        raise RowError(f"{metric_name} rows are in {csv_unit}, not {row['metric_unit']!r}")
    values = {stat: number(row[col], col) for col, stat in _QUANTILES}
    observed = instant(row["timestamp"], "timestamp")
    config = read_config(row["extra_benchmark_config_str"])
    x_name, x_value = row["x_name"], row["x_value"]
    config_text = json.dumps(config, sort_keys=True, separators=(",", ":"))
    given = given_manifests(
        row, split_parameters(x_name, x_value, config), config, config_text, check, line
    )
    measurements = [
        {"metric": metric, "statistic": stat, "unit": unit, "value": value}
        for stat, value in values.items()
    ]
    spec: dict[str, Any] = {
        **{f"{role}Digest": given[role].digest for role in _REFERENCED},
        "status": "passed",
        "observedAt": observed,
    }
    if metric_name == "speed":
        spec["timing"] = {
            "primaryStatistic": "median",
            "latencyNs": {"median": ms_to_ns(values["median"])},
        }
    spec["measurements"] = measurements
    spec["sourceNative"] = {"source": SOURCE, "benchmark": kernel[:200]}
    row_key = f"{SOURCE}:{upstream}:" + json.dumps(
        [kernel, provider, mode, metric_name, x_value, config_text, gpu],
        separators=(",", ":"),
        ensure_ascii=False,
    )
    refs = (
        [{"url": f"{REPOSITORY}/blob/{revision.commit}/benchmark/data/{upstream}"}]
        if revision
        else None
    )
    run = check(
        manifest(
            "BenchmarkRun",
            slug(f"liger-{kernel}-{provider}-{mode}-{metric_name}-{x_name}-{x_value}", limit=180)
            + "-"
            + short_hash(row_key),
            spec,
            title=f"{provider} · {kernel} {mode} {metric_name} · {x_name}={x_value} · {gpu}"[:200],
            sourceRefs=refs,
        ),
        f"{line}.run",
    )
    origin = Origin(
        source=SOURCE,
        importer=IMPORTER,
        importerVersion=VERSION,
        snapshotDigest=f.digest,
        path=f.path.name,
    )
    return RunItem(run=run, given=given, origin=origin, rowKey=row_key)
