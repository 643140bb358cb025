"""``make reliability``: the reliability suite at the issue's sizes, then its summary.

Runs ``pytest tests/reliability`` with ``BENCHPROOF_RELIABILITY=full``, gathers what the tests
recorded (:mod:`tests.reliability.report`) and prints it: writes attempted, acknowledged and
found, crash rounds survived, hostile inputs per parser and endpoint, 5xx answers, what each
attack got back, latency tables. Exits non-zero when a test failed or was skipped (the browser
is required, and the fault tests need root), a test file recorded nothing, a write was lost or
duplicated, a 5xx was seen, an input appended to the log, an attack was not refused or a
tampering went undetected. The last line is the summary."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path
from typing import Any

from tests.reliability.report import REPORT_ENV

ROOT = Path(__file__).resolve().parents[2]


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(str(c)) for c in column) for column in zip(header, *rows, strict=True)]
    line = "  ".join(f"{{:<{w}}}" for w in widths)
    return [line.format(*header).rstrip(), line.format(*("-" * w for w in widths)).rstrip()] + [
        line.format(*row).rstrip() for row in rows
    ]


def summarise(records: list[dict[str, Any]]) -> tuple[list[str], str, bool]:
    """The report's lines, its last (summary) line, and whether every figure holds."""
    out: list[str] = []
    ok = True
    by_kind: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        by_kind[r["kind"]].append(r)

    writes = by_kind["writes"]
    if writes:
        rows = []
        for w in writes:
            good = w["found"] == w["acknowledged"] <= w["attempted"]
            ok &= good
            rows.append(
                [
                    w["section"],
                    w["attempted"],
                    w["acknowledged"],
                    w["found"],
                    "ok" if good else "LOST OR DUPLICATED",
                ]
            )
        out += ["", "Writes", *_table(["test", "attempted", "acknowledged", "found", ""], rows)]
    rounds = by_kind["rounds"]
    if rounds:
        rows = []
        for r in rounds:
            good = r["survived"] == r["rounds"] > 0
            ok &= good
            rows.append([r["section"], r["rounds"], r["survived"], "ok" if good else "FAILED"])
        out += ["", "Crash and fault rounds", *_table(["test", "rounds", "survived", ""], rows)]
    inputs = by_kind["inputs"]
    if inputs:
        merged: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
        for i in inputs:
            m = merged[i["target"]]
            m[0] += i["tried"]
            m[1] += i["server_errors"]
            m[2] += i["appends"]
        rows = []
        for target, (tried, errors, appends) in sorted(merged.items()):
            good = errors == 0 and appends == 0
            ok &= good
            rows.append([target, tried, errors, appends, "ok" if good else "FAILED"])
        out += [
            "",
            "Hostile inputs",
            *_table(["parser or endpoint", "tried", "5xx", "appends", ""], rows),
        ]
    attacks = by_kind["attack"]
    if attacks:
        rows = []
        for a in attacks:
            ok &= bool(a["ok"])
            # "as expected": refused, detected, or (a path the user named) done as asked
            rows.append([a["attack"], a["got"], "as expected" if a["ok"] else "UNEXPECTED"])
        out += ["", "Attacks", *_table(["attack", "got back", ""], rows)]
    for t in by_kind["table"]:
        out += ["", t["title"], *_table(t["header"], t["rows"])]
    notes = by_kind["note"]
    if notes:
        out += ["", "Figures"] + [f"- {n['section']}: {n['text']}" for n in notes]

    five = sum(r["count"] for r in by_kind["server_errors"]) + sum(
        i["server_errors"] for i in inputs
    )
    ok &= five == 0
    attempted = sum(w["attempted"] for w in writes)
    acked = sum(w["acknowledged"] for w in writes)
    found = sum(w["found"] for w in writes)
    n_rounds = sum(r["rounds"] for r in rounds)
    survived = sum(r["survived"] for r in rounds)
    tried = sum(i["tried"] for i in inputs)
    refused = sum(1 for a in attacks if a["ok"])
    summary = (
        f"writes {attempted} attempted / {acked} acknowledged / {found} found; "
        f"rounds {survived}/{n_rounds} survived; {tried} hostile inputs; {five} 5xx; "
        f"attacks and faults {refused}/{len(attacks)} answered as expected"
    )
    return out, summary, ok


def silent_files(records: list[dict[str, Any]]) -> list[str]:
    """The suite's test files that recorded no figure (a test that stopped early, or a file
    whose tests all skipped or were deselected)."""
    files = sorted(p.name for p in (ROOT / "tests" / "reliability").glob("test_*.py"))
    heard = {Path(str(r.get("test", "")).split("::")[0]).name for r in records}
    return [f for f in files if f not in heard]


def skipped(junit: Path) -> int:
    """How many tests pytest skipped, from its JUnit XML report."""
    if not junit.exists():
        return 0
    root = ET.parse(junit).getroot()
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    return sum(int(s.get("skipped", "0")) for s in suites)


def main() -> int:
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="benchproof-reliability-") as tmp:
        report = Path(tmp) / "report.jsonl"
        junit = Path(tmp) / "junit.xml"
        env = {
            **os.environ,
            "BENCHPROOF_RELIABILITY": "full",
            "BENCHPROOF_REQUIRE_BROWSER": "1",  # the escaping tests fail rather than skip
            REPORT_ENV: str(report),
        }
        args = [sys.executable, "-m", "pytest", "-q", "-rs", f"--junitxml={junit}"]
        args += ["-o", "junit_family=xunit2", "tests/reliability", *sys.argv[1:]]
        tests = subprocess.run(args, cwd=ROOT, env=env, check=False)
        records = (
            [json.loads(line) for line in report.read_text().splitlines()]
            if report.exists()
            else []
        )
        skips = skipped(junit)
    lines, summary, ok = summarise(records)
    silent = silent_files(records)
    if silent:
        lines += ["", "Test files that recorded nothing: " + ", ".join(silent)]
    print("\n".join(lines), flush=True)
    passed = tests.returncode == 0 and ok and not skips and not silent
    minutes = (time.monotonic() - started) / 60
    verdict = "PASS" if passed else "FAIL"
    why = "" if tests.returncode == 0 else f" (pytest exit {tests.returncode})"
    why += f" ({skips} skipped)" if skips else ""
    why += f" ({len(silent)} test files recorded nothing)" if silent else ""
    print(f"\nreliability: {verdict}{why}: {summary}; {minutes:.1f} min", flush=True)
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
