"""Presentation for the HTML pages: figures people can read, links between the pages, JSON
as shown and the compare table. Pure functions of their arguments (no IO, no clock); the
dossier's sections are in ``service.web.sections``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import quote, urlencode

import msgspec
from markupsafe import Markup, escape

from service.app.runs import Comparison

__all__ = [
    "KEY_PARTS",
    "MISMATCH",
    "Row",
    "Urls",
    "breakable",
    "compare_table",
    "measured",
    "number",
    "pretty_json",
    "quantity",
    "safe_url",
    "samples_svg",
]

_NS_PER = {"ns": 1.0, "us": 1e3, "µs": 1e3, "ms": 1e6, "s": 1e9}
_SCALES = ((1e9, "s"), (1e6, "ms"), (1e3, "µs"), (1.0, "ns"))
# Sizes: benchmark harnesses that say "MB" divide by 2**20 (torch.cuda.max_memory_allocated()
# / 2**20 in Liger's), so they are shown in binary units.
_BYTES_PER = {
    "b": 1,
    "bytes": 1,
    "kb": 2**10,
    "kib": 2**10,
    "mb": 2**20,
    "mib": 2**20,
    "gb": 2**30,
    "gib": 2**30,
}
_BYTE_SCALES = ((2**40, "TiB"), (2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB"), (1, "bytes"))


class Row(msgspec.Struct, frozen=True):
    """One labelled value of a section; ``digest`` values are shown shortened."""

    label: str
    value: str
    digest: bool = False
    href: str | None = None
    note: str | None = None  # how to read the value ("as the run states")


def safe_url(url: str | None) -> str | None:
    """``url`` if it is an http(s) URL (sources publish these; anything else is not linked)."""
    return url if url and url.startswith(("https://", "http://")) else None


class Urls:
    """Links between the pages, keeping ``asOf`` when a page is pinned to a tree size."""

    def __init__(self, as_of: int | None) -> None:
        self.as_of = as_of

    def _with(self, path: str, params: dict[str, str]) -> str:
        if self.as_of is not None:
            params = {**params, "asOf": str(self.as_of)}
        return path + ("?" + urlencode(params, safe=":,") if params else "")

    def run(self, ref: str) -> str:
        """The dossier page of ``ref`` (short id, digest or alias, URL-encoded)."""
        return self._with("/runs/" + quote(ref, safe=":"), {})

    def group(self, key: str) -> str:
        """The leaderboard page of a comparison group or serving cohort."""
        return self._with("/groups/" + quote(key, safe=":"), {})

    def compare(self, refs: list[str]) -> str:
        """The side-by-side page of ``refs``."""
        return self._with("/compare", {"runs": ",".join(refs)})

    def home(self, **params: str) -> str:
        """The search page with ``params`` (empty ones dropped)."""
        return self._with("/", {k: v for k, v in params.items() if v})


def _digits(x: float) -> str:
    """Three significant digits, keeping trailing zeros (1.09, 45.0, 186)."""
    if abs(x) >= 100:
        return f"{x:.0f}"
    if abs(x) >= 10:
        return f"{x:.1f}"
    return f"{x:.2f}"


def number(value: float) -> str:
    """A plain number: integers with thousands separators, others to four significant digits."""
    if float(value).is_integer():
        return f"{int(value):,}"
    if abs(value) >= 1000:
        return f"{value:,.1f}"
    return f"{value:.4g}"


def quantity(value: float | None, unit: str | None) -> str:
    """``value`` in ``unit`` as people read it: durations in the largest fitting unit
    (1093964 ns → "1.09 ms"), sizes in binary units (1056.2 mb → "1.03 GiB"), rates as "/s"
    ("tokens_s" → "tokens/s")."""
    if value is None:
        return "—"
    if value == 0:
        return "0"
    if unit in _NS_PER:
        ns = value * _NS_PER[unit]
        for factor, name in _SCALES:
            if abs(ns) >= factor or factor == 1.0:
                return f"{_digits(ns / factor)} {name}"
    if unit is not None and unit.lower() in _BYTES_PER:
        size = value * _BYTES_PER[unit.lower()]
        for factor, name in _BYTE_SCALES:
            if abs(size) >= factor or factor == 1:
                return f"{_digits(size / factor)} {name}" if factor > 1 else f"{size:,.0f} bytes"
    label = (unit or "").replace("_per_s", "/s")
    if label.endswith("_s"):
        label = label[:-2] + "/s"
    return f"{number(value)} {label}".strip()


def measured(value: Any, unit: str | None) -> str:
    """A published figure as people read it: one value (``quantity``), or an interval, as the
    manifest format gives ``confidence95`` (a pair: "8.10 µs to 8.15 µs"). Anything else it
    might hold is shown as text, never a failure of the page."""
    if isinstance(value, list | tuple):
        if len(value) == 2 and all(_is_number(v) for v in value):
            return f"{quantity(value[0], unit)} to {quantity(value[1], unit)}"
        return ", ".join(measured(v, unit) for v in value) or "—"
    if value is None or _is_number(value):
        return quantity(value, unit)
    return str(value)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def breakable(text: str) -> Markup:
    """``text`` escaped, with a line-break opportunity after each ``_``, ``/`` and ``.`` so a
    long identifier (``001_fused_vision_…``) wraps between its words, not inside one."""
    out = str(escape(text))
    for mark in ("_", "/", "."):
        out = out.replace(mark, mark + "<wbr>")
    return Markup(out)  # noqa: S704 - escaped above; only <wbr> added


def pretty_json(value: Any) -> str:
    """Indented JSON, keys in the order the record holds them."""
    return msgspec.json.format(msgspec.json.encode(value), indent=2).decode()


MISMATCH = {
    "kind": ("kind of run", "A kernel run and a serving run measure different things."),
    "operationDigest": ("operation", "They implement different operations."),
    "workloadDigest": ("workload", "They ran different inputs (shapes, cases or suites)."),
    "protocolKey": ("protocol", "They were measured by different harnesses or timing rules."),
    "environmentKey": ("environment", "They ran on different hardware or software."),
    "correctnessKey": (
        "correctness policy",
        "They were checked against different correctness rules.",
    ),
    "metricKey": ("metric", "Their primary figures are different metrics or statistics."),
}


KEY_PARTS = ("operationDigest", "protocolKey", "environmentKey", "correctnessKey")
"""The parts of a comparison key besides the workload and metric, in the order pages name them."""


def _signed(value: float, unit: str | None) -> str:
    text = quantity(abs(value), unit)
    return text if value == 0 else ("+" if value > 0 else "−") + text


def _differences(c: Comparison) -> list[tuple[str, str, list[Any], bool]]:
    """The difference and ratio of each run's primary value to the first run's, when every run
    has one of the same metric in the same unit (empty otherwise)."""
    runs = c.runs
    first = runs[0] if runs else None
    if (
        first is None
        or first.primaryValue is None
        or first.primaryValue == 0
        or first.metricKey in (None, "none")
        or any(
            r.primaryValue is None
            or r.metricKey != first.metricKey
            or r.primaryUnit != first.primaryUnit
            for r in runs
        )
    ):
        return []
    base = first.primaryValue
    values = [r.primaryValue or 0.0 for r in runs]
    ref = f"{first.shortId}"
    return [
        (
            "difference",
            f"difference from {ref}",
            ["(baseline)", *(_signed(v - base, first.primaryUnit) for v in values[1:])],
            False,
        ),
        ("ratio", f"ratio to {ref}", ["1×", *(f"{v / base:.3g}×" for v in values[1:])], False),
    ]


def compare_table(c: Comparison, names: dict[str, str]) -> list[dict[str, Any]]:
    """The compare page's rows: shown fields, then the comparison key's parts."""
    shown: list[tuple[str, str, list[Any], bool]] = [
        ("title", "title", [r.title or r.name for r in c.runs], False),
        ("source", "source", [names.get(r.source, r.source) for r in c.runs], False),
        ("hardware", "hardware", [r.hardware for r in c.runs], False),
        (
            "primary",
            "primary value",
            [quantity(r.primaryValue, r.primaryUnit) for r in c.runs],
            False,
        ),
        ("status", "status", [r.status for r in c.runs], False),
        ("evidenceLevel", "evidence level", [r.evidenceLevel for r in c.runs], False),
        ("observedAt", "observed", [r.observedAt[:10] for r in c.runs], False),
    ]
    shown += _differences(c)
    shown += [(f, MISMATCH[f][0], c.fields[f], f != "kind" and f != "metricKey") for f in c.fields]
    group = [r.comparisonKey or r.cohortKey for r in c.runs]
    shown.append(("group", "comparison group", group, True))
    return [
        {
            "key": k,
            "label": label,
            "cells": values,
            "digest": digest,
            "differs": k not in ("difference", "ratio") and len({str(v) for v in values}) > 1,
        }
        for k, label, values, digest in shown
    ]


def samples_svg(samples: Sequence[float], reported: float | None, *, width: int = 240) -> Markup:
    """A strip of a rerun's samples (ns): one tick per sample, the median as a taller tick, and
    the run's reported value as a dashed line, on one linear scale; drawn by the server (no
    script). Empty without samples."""
    if not samples:
        return Markup("")
    values = [*samples, *([reported] if reported else [])]
    low, high = min(values), max(values)
    span = (high - low) or max(high, 1.0)
    pad = 8

    def x(value: float) -> float:
        return round(pad + (value - low) / span * (width - 2 * pad), 1)

    ordered = sorted(samples)
    middle = len(ordered) // 2
    median = ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2
    ticks = "".join(
        f'<line x1="{x(v)}" y1="10" x2="{x(v)}" y2="26" class="sample"/>' for v in samples
    )
    line = (
        f'<line x1="{x(reported)}" y1="2" x2="{x(reported)}" y2="34" class="reported"/>'
        if reported
        else ""
    )
    title = (
        f"{len(samples)} samples from {quantity(low, 'ns')} to {quantity(high, 'ns')}, median "
        f"{quantity(median, 'ns')}" + (f"; reported {quantity(reported, 'ns')}" if reported else "")
    )
    return Markup(  # noqa: S704 - numbers we format, and the title escaped
        f'<svg class="samples" width="{width}" height="36" viewBox="0 0 {width} 36" role="img">'
        f"<title>{escape(title)}</title>{ticks}"
        f'<line x1="{x(median)}" y1="4" x2="{x(median)}" y2="32" class="median"/>{line}</svg>'
    )
