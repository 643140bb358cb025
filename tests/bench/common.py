"""Helpers shared by the benchmark sections."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


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
