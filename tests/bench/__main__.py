"""``python -m tests.bench [SECTION|GROUP...]``: run the benchmark sections (all by default), then
write the figures they recorded to ``tests/bench/results.json`` and print them as a table."""

from __future__ import annotations

import argparse
import importlib
import os
import platform
import time

from tests.bench.common import write_results

SECTIONS = [
    "digests",
    "log",
    "ingest",
    "projections",
    "http",
    "attest",
    "cite",
    "audit",
    "stores",
    "peer",
    "servers",
    "roundtrips",
    "scale",
]
# Groups name several sections at once. ``write``: every section of the write path (issue 27):
# the attestation posts, the ingest, both stores, the peer library, the HTTP servers and
# PostgreSQL's round trips.
# ``reads``: the read, replay, verify and memory figures as the index grows (issue 28), and the
# HTTP figures they are ratios of.
GROUPS = {
    "write": ["attest", "ingest", "stores", "peer", "servers", "roundtrips"],
    "reads": ["http", "scale"],
}


def _machine() -> dict[str, object]:
    return {
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "platform": platform.platform(),
        "cores": len(os.sched_getaffinity(0)),
        "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.bench")
    choices = SECTIONS + sorted(GROUPS)
    parser.add_argument("sections", nargs="*", metavar="SECTION", help=f"any of {choices}")
    args = parser.parse_args()
    unknown = set(args.sections) - set(choices)
    if unknown:
        parser.error(f"unknown section(s) {sorted(unknown)}; choose from {choices}")
    wanted: list[str] = []
    for name in args.sections or SECTIONS:
        for section in GROUPS.get(name, [name]):
            if section not in wanted:
                wanted.append(section)
    print(
        f"benchproof benchmarks · {platform.python_implementation()} {platform.python_version()} · {time.strftime('%Y-%m-%d %H:%M')}"
    )
    for name in wanted:
        importlib.import_module(f"tests.bench.{name}").main()
    write_results(_machine())


if __name__ == "__main__":
    main()
