"""A catalog-shaped corpus at any size: ``python -m tests.bench.corpus --runs N OUT``.

Writes KernelIndex catalog exports (``OUT/part-00000.jsonl.zst``, ...; each one
self-contained, ``--shard-runs`` runs at most) that ``benchproof ingest kernelindex-catalog``
reads like the real one. The runs are the real catalog's (``../shared/corpora``, read when the
generator runs; nothing of it is stored in the project), and copies of it:

- **Copy 0 is the catalog itself**, every row as published. Copy ``c`` >= 1 repeats every kernel
  and serving run of the catalog with its workload made new (the axis ``bench_copy = c``
  added, so its spec digest, and so the comparison group, is new). So the copies keep the
  catalog's shares of sources, hardware, operations and implementations, and its groups of
  every size (1,301 of one run up to one of 260), each copy's groups beside the others.
- **Shared manifests stay shared**: the protocols, environments, operations, projects and
  implementations are the catalog's own in every copy (an implementation measured on many
  workloads, as in life); serving runs join the catalog's cohorts.
- **Values and times move a little**: each copied measurement is scaled by a factor within
  ±5 %, its observation time moved by ``c`` hours, so each copy's leaders differ.
- **Corrections and retractions**: 1 % of the copied kernel runs are corrected by a later row
  (``supersedesId``: a new run that supersedes the first, as a source correcting a row does) and
  0.2 % are retracted by the source.

Everything follows from ``--seed``: the same arguments write the same bytes. A run is counted
once whichever row it comes from (a correction is a run too).
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import io
import json
import sys
import uuid
from collections import defaultdict
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import zstandard

from events import check_manifest
from tests.corpora import CATALOG, corpus

__all__ = ["Template", "generate", "main", "shard_path", "shards_of"]

CORRECTED = 0.01
RETRACTED = 0.002
SPREAD = 0.05
SHARD_RUNS = 10_000

Row = dict[str, Any]
_SHARED_TABLES = (
    "sources",
    "projects",
    "operations",
    "implementations",
    "model_revisions",
    "serving_stack_revisions",
    "serving_configurations",
    "serving_workloads",
)


class Template:
    """The real catalog's tables, read once."""

    def __init__(self, path: Path | None = None) -> None:
        path = path or corpus(*CATALOG)
        raw = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(path.read_bytes())).read()
        self.tables: dict[str, list[Row]] = defaultdict(list)
        for line in raw.splitlines():
            if line.strip():
                entry = json.loads(line)
                self.tables[entry["table"]].append(entry["row"])
        self.workloads = {r["id"]: r for r in self.tables["workloads"]}
        self.runs_per_copy = len(self.tables["benchmark_runs"]) + len(self.tables["serving_runs"])


def _unit(seed: int, *parts: object) -> float:
    """A number in [0, 1) fixed by ``seed`` and ``parts``."""
    h = hashlib.sha256(":".join(map(str, (seed, *parts))).encode()).digest()
    return int.from_bytes(h[:8], "big") / 2**64


def _id(seed: int, *parts: object) -> str:
    return str(
        uuid.UUID(bytes=hashlib.sha256(":".join(map(str, (seed, *parts))).encode()).digest()[:16])
    )


def _later(instant: str, hours: int) -> str:
    when = datetime.fromisoformat(instant.replace("Z", "+00:00")) + timedelta(hours=hours)
    text = when.isoformat(timespec="milliseconds" if "." in instant else "seconds")
    return text.replace("+00:00", "Z")


def _scaled(spec: dict[str, Any], factor: float) -> None:
    """Every measured value of a run's spec scaled by ``factor`` (whole nanoseconds stay whole)."""
    for m in spec.get("measurements", ()):
        if isinstance(m.get("value"), int | float) and not isinstance(m["value"], bool):
            m["value"] = m["value"] * factor
    for key, value in (spec.get("timing", {}).get("latencyNs") or {}).items():
        if isinstance(value, int) and not isinstance(value, bool):
            spec["timing"]["latencyNs"][key] = max(1, round(value * factor))


def _workload(template: Row, c: int) -> tuple[Row, str]:
    """Copy ``c`` of a workload row, and its new spec digest."""
    row = copy.deepcopy(template)
    manifest = row["manifest"]
    spec = manifest["spec"]
    if manifest["kind"] == "WorkloadSuite":
        spec["cases"][0]["axes"]["bench_copy"] = c
    else:
        spec["axes"]["bench_copy"] = c
    manifest["metadata"]["name"] = f"{manifest['metadata']['name'][:180]}-copy{c}"
    row["id"] = _id(0, "workload", c, template["id"])
    return row, check_manifest(manifest, source="bench-corpus").digest


class _Shard:
    """One export, written under a temporary name and renamed when complete: a reader that
    waits for ``path`` (the bench ingests each export while the next is written) never sees
    part of one."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._partial = path.with_name(path.name + ".partial")
        self._file = self._partial.open("wb")
        self._out = zstandard.ZstdCompressor(level=3).stream_writer(self._file)
        self.runs = 0
        self.workloads: set[str] = set()

    def write(self, table: str, row: Row) -> None:
        line = json.dumps({"table": table, "row": row}, separators=(",", ":"), ensure_ascii=False)
        self._out.write(line.encode() + b"\n")

    def close(self) -> None:
        self._out.close()  # closes the file too
        self._partial.replace(self.path)


def _copies(template: Template, runs: int, seed: int) -> Iterator[tuple[str, Row, Row | None]]:
    """``(table, run row, workload row or None)`` for ``runs`` runs, copy after copy."""
    made = 0
    digests: dict[tuple[int, str], tuple[Row, str]] = {}
    c = 0
    while made < runs:
        corrections: list[tuple[str, Row, Row | None]] = []
        for row in template.tables["benchmark_runs"]:
            if made >= runs:
                return
            if c == 0:
                made += 1
                yield "benchmark_runs", row, template.workloads.get(row["workloadId"])
                continue
            key = (c, row["workloadId"])
            if key not in digests:
                digests[key] = _workload(template.workloads[row["workloadId"]], c)
            workload, digest = digests[key]
            out = copy.deepcopy(row)
            out["id"] = _id(seed, "run", c, row["id"])
            out["workloadId"] = workload["id"]
            run = out["manifest"]["run"]
            spec = run["spec"]
            spec["workloadDigest"] = digest
            spec["observedAt"] = _later(spec["observedAt"], c)
            _scaled(spec, 1 + SPREAD * (2 * _unit(seed, "value", c, row["id"]) - 1))
            native = spec.get("sourceNative")
            if native and native.get("externalId"):
                native["externalId"] = f"{native['externalId']}/copy{c}"
            run["metadata"]["name"] = f"{run['metadata']['name'][:180]}-copy{c}"
            if _unit(seed, "retract", c, row["id"]) < RETRACTED:
                out["retractedAt"] = _later(spec["observedAt"], 1)
                out["retractionReason"] = "withdrawn by the submitter (bench corpus)"
            made += 1
            yield "benchmark_runs", out, workload
            if _unit(seed, "correct", c, row["id"]) < CORRECTED:
                fixed = copy.deepcopy(out)
                fixed["id"] = _id(seed, "correction", c, row["id"])
                fixed["supersedesId"] = out["id"]
                fixed.pop("retractedAt", None)
                fixed.pop("retractionReason", None)
                fixed_spec = fixed["manifest"]["run"]["spec"]
                fixed_spec["observedAt"] = _later(spec["observedAt"], 2)
                _scaled(fixed_spec, 0.97)
                corrections.append(("benchmark_runs", fixed, workload))
        for row in template.tables["serving_runs"]:
            if made >= runs:
                return
            out = row
            if c:
                out = copy.deepcopy(row)
                out["id"] = _id(seed, "serving", c, row["id"])
                spec = out["manifest"]["spec"]
                spec["observedAt"] = _later(spec["observedAt"], c)
                _scaled(spec, 1 + SPREAD * (2 * _unit(seed, "value", c, row["id"]) - 1))
                native = spec.get("sourceNative")
                if native and native.get("externalId"):
                    native["externalId"] = f"{native['externalId']}/copy{c}"
                out["manifest"]["metadata"]["name"] = (
                    f"{out['manifest']['metadata']['name'][:180]}-copy{c}"
                )
            made += 1
            yield "serving_runs", out, None
        for item in corrections:
            if made >= runs:
                return
            made += 1
            yield item
        c += 1


def shard_path(out: Path, index: int) -> Path:
    """Where ``generate`` writes its ``index``-th export."""
    return out / f"part-{index:05d}.jsonl.zst"


def shards_of(runs: int, shard_runs: int = SHARD_RUNS) -> int:
    """How many exports ``generate`` writes for ``runs`` runs."""
    return -(-runs // shard_runs)


def generate(
    out: Path,
    runs: int,
    *,
    seed: int = 1,
    shard_runs: int = SHARD_RUNS,
    template: Template | None = None,
    progress: Any = None,
) -> list[Path]:
    """Write ``runs`` catalog-shaped runs under ``out`` in exports of ``shard_runs`` runs at
    most; return their paths, in the order to ingest them."""
    template = template or Template()
    out.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    shard: _Shard | None = None
    for table, row, workload in _copies(template, runs, seed):
        if shard is None or shard.runs >= shard_runs:
            if shard is not None:
                shard.close()
            shard = _Shard(shard_path(out, len(paths)))
            paths.append(shard.path)
            for shared in _SHARED_TABLES:
                for r in template.tables[shared]:
                    shard.write(shared, r)
        if workload is not None and workload["id"] not in shard.workloads:
            shard.workloads.add(workload["id"])
            shard.write("workloads", workload)
        shard.write(table, row)
        shard.runs += 1
        if progress is not None:
            progress(1)
    if shard is not None:
        shard.close()
    return paths


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.corpus", description=__doc__)
    parser.add_argument("--runs", type=int, required=True, help="how many runs to write")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--shard-runs", type=int, default=SHARD_RUNS)
    parser.add_argument("out", type=Path, help="the folder to write the exports into")
    args = parser.parse_args(argv)
    if args.runs < 1 or args.shard_runs < 1:
        print("--runs and --shard-runs must be at least 1", file=sys.stderr)
        return 2
    paths = generate(args.out, args.runs, seed=args.seed, shard_runs=args.shard_runs)
    print(f"wrote {args.runs:,} runs in {len(paths)} exports under {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
