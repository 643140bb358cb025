"""The leaderboard's bar chart, as geometry for an inline SVG drawn on the server."""

from __future__ import annotations

import math

import msgspec

from service.readmodel.dossier import short_id
from service.web.present import quantity

__all__ = ["Bar", "Chart", "bar_chart"]


class Bar(msgspec.Struct, frozen=True):
    """One bar of the leaderboard chart (SVG user units)."""

    x: float
    y: float
    width: float
    height: float
    label: str
    href: str
    lead: bool


class Chart(msgspec.Struct, frozen=True):
    """A bar chart of ranked values, best first."""

    width: int
    height: int
    plot: int
    bars: list[Bar]
    log: bool
    top: str
    bottom: str


def bar_chart(items: list[tuple[int, float, str, str, str]], unit: str | None) -> Chart:
    """Bars for ``(rank, value, label, href, digest)`` items, best first. Values spanning more
    than two decades are drawn on a log scale, so the leaders stay visible."""
    width, height, plot = 640, 200, 176
    values = [v for _, v, *_ in items]
    low, high = (min(values), max(values)) if values else (0.0, 1.0)
    log = low > 0 and high / low > 100
    if log:
        # The axis starts a tenth of the span below the best value, so the leader keeps a bar.
        ceil = math.log10(high)
        floor = math.log10(low) - 0.1 * (ceil - math.log10(low))

        def scale(v: float) -> float:
            return (math.log10(v) - floor) / (ceil - floor)

        top, bottom = quantity(high, unit), quantity(10.0**floor, unit)
    else:

        def scale(v: float) -> float:
            return v / high if high > 0 else 0.0

        top, bottom = quantity(high, unit), quantity(0.0, unit)
    step = width / max(len(items), 1)
    bar_width = min(step * (0.8 if len(items) <= 60 else 1.0), 48.0)
    bars = []
    for i, (rank, value, label, href, digest) in enumerate(items):
        h = max(plot * scale(value), 1.0)
        bars.append(
            Bar(
                x=round(i * step + (step - bar_width) / 2, 2),
                y=round(height - h, 2),
                width=round(bar_width, 2),
                height=round(h, 2),
                label=f"#{rank} · {quantity(value, unit)} · {label} ({short_id(digest)})",
                href=href,
                lead=rank == 1,
            )
        )
    return Chart(width, height, plot, bars, log, top, bottom)
