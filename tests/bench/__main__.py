"""``python -m tests.bench [SECTION...]``: run the benchmark sections (all by default)."""

from __future__ import annotations

import argparse
import importlib
import platform
import time

SECTIONS = ["digests", "log", "ingest", "projections", "http", "attest", "cite", "audit", "stores"]


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.bench")
    parser.add_argument("sections", nargs="*", metavar="SECTION", help=f"any of {SECTIONS}")
    args = parser.parse_args()
    unknown = set(args.sections) - set(SECTIONS)
    if unknown:
        parser.error(f"unknown section(s) {sorted(unknown)}; choose from {SECTIONS}")
    print(
        f"benchproof benchmarks · {platform.python_implementation()} {platform.python_version()} · {time.strftime('%Y-%m-%d %H:%M')}"
    )
    for name in args.sections or SECTIONS:
        importlib.import_module(f"tests.bench.{name}").main()


if __name__ == "__main__":
    main()
