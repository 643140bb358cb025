"""Helpers shared by the benchmark sections."""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path


def rate(fn: Callable[[], object], *, n: int, repeat: int = 5) -> float:
    """Best-of-``repeat`` calls per second of ``fn`` run ``n`` times."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, time.perf_counter() - t0)
    return n / best


def batch_rate(fn: Callable[[], object], *, items: int, repeat: int = 3) -> float:
    """Best-of-``repeat`` items per second of one call of ``fn`` that handles ``items`` items."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return items / best


def percentiles(samples: list[float], *points: float) -> list[float]:
    ordered = sorted(samples)
    qs = statistics.quantiles(ordered, n=1000, method="inclusive")
    return [qs[min(int(p * 10) - 1, len(qs) - 1)] for p in points]


def line(name: str, value: float, unit: str, note: str = "") -> None:
    decimals = 2 if unit == "x" else 1
    print(f"  {name:<58} {value:>14,.{decimals}f} {unit:<10} {note}")


# Every figure the sections record in this run, by name: what ``python -m tests.bench`` writes
# to ``tests/bench/results.json`` and prints as a markdown table at the end.
RESULTS: dict[str, dict[str, object]] = {}
RESULTS_FILE = Path(__file__).with_name("results.json")


def record(name: str, value: float, unit: str, about: str, **extra: object) -> None:
    """Keep the figure ``name`` of this run (``about`` says what it measures, ``extra`` holds its
    parts: the peer's figure, the raw limit it is a ratio to)."""
    RESULTS[name] = {"value": round(value, 4), "unit": unit, "about": about, **extra}


def recorded(name: str) -> float | None:
    """The value of the figure ``name`` if a section of this run recorded it."""
    figure = RESULTS.get(name)
    return None if figure is None else float(figure["value"])  # type: ignore[arg-type]


def write_results(machine: dict[str, object]) -> Path:
    """Write the figures recorded so far, with the machine they were measured on, to
    ``RESULTS_FILE`` (one JSON object: name → figure), and print them as a markdown table."""
    document = {"machine": machine, **dict(sorted(RESULTS.items()))}
    RESULTS_FILE.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    print(f"\n## Figures of this run ({RESULTS_FILE.name})\n")
    print("| figure | value | unit | what it measures |")
    print("|---|---:|---|---|")
    for name, figure in sorted(RESULTS.items()):
        print(f"| `{name}` | {figure['value']:,} | {figure['unit']} | {figure['about']} |")
    return RESULTS_FILE
