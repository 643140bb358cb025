"""The run dossier's sections as the run page shows them (docs/runs.md): the source's own
figures, identity, correctness, workload, measurements, protocol and environment as labelled
rows, a BibTeX entry, and why a run is unranked or still waits on a manifest. Pure functions of
the dossier (no IO, no clock)."""

from __future__ import annotations

from typing import Any

from service.readmodel.dossier import Dossier
from service.web.present import Row, Urls, measured, number, safe_url

__all__ = [
    "correctness_text",
    "environment_rows",
    "evidence_missing",
    "identity_rows",
    "measurement_rows",
    "native_highlights",
    "native_rows",
    "protocol_rows",
    "unranked_reason",
    "unresolved_refs",
    "workload_rows",
]


_UNITS = (("_ns", "ns"), ("_us", "µs"), ("_ms", "ms"), ("_s", "s"))


def _native_value(key: str, value: Any) -> str:
    """A source-native figure as the source published it, in the unit its name says
    ("latency_ms": 1.093964 → "1.093964 ms"): never converted, never rounded."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    for suffix, unit in _UNITS:
        if key.endswith(suffix):
            return f"{value} {unit}"
    return number(value) if isinstance(value, int) else str(value)


def native_highlights(native: dict[str, Any] | None) -> list[str]:
    """The source's own headline figures: "SOL 0.8380", "5.06× reference", "16/16 cases faster"."""
    metrics = (native or {}).get("metrics") or {}
    out = []
    if isinstance(metrics.get("sol_score"), int | float):
        out.append(f"SOL {metrics['sol_score']:.4f}")
    if isinstance(metrics.get("avg_speedup"), int | float):
        out.append(f"{metrics['avg_speedup']:.2f}× reference")
    if "fast_1_count" in metrics and "fast_1_total" in metrics:
        out.append(f"{metrics['fast_1_count']}/{metrics['fast_1_total']} cases faster")
    return out


_HIGHLIGHTED = {"sol_score", "avg_speedup", "fast_1_count", "fast_1_total"}


def native_rows(native: dict[str, Any] | None) -> list[Row]:
    """Every other source-native figure and label, each in its published unit ("best_ns":
    43900 → "43900 ns")."""
    if not native:
        return []
    rows = [
        Row(k, _native_value(k, v))
        for k, v in (native.get("metrics") or {}).items()
        if k not in _HIGHLIGHTED
    ]
    rows += [
        Row(k, str(v))
        for k, v in native.items()
        if k not in ("metrics", "source", "externalId") and not isinstance(v, dict | list)
    ]
    return rows


def _workload_summary(workload: dict[str, Any] | None) -> str | None:
    if not workload or not workload.get("resolved"):
        return None
    if workload.get("kind") == "WorkloadSuite":
        agg = workload.get("aggregation") or {}
        how = " ".join(x for x in (agg.get("statistic"), agg.get("metric")) if x)
        return f"suite of {workload.get('cases', 0)} cases" + (f" · {how}" if how else "")
    return workload.get("title") or workload.get("name")


def identity_rows(d: Dossier, source_name: str, urls: Urls) -> list[Row]:
    """The Identity section, in the reference page's order."""
    ident = d.identity
    key_label, key = (
        ("cohort key", d.cohortKey)
        if d.kind == "ServingRun"
        else ("comparison key", d.comparisonKey)
    )
    waiting = "implementation" in d.unresolved
    missing = "unresolved" if waiting else "not published"
    rows = []
    if waiting and not ident.get("implementation") and d.title:
        # What the run itself says, until its implementation manifest arrives.
        rows.append(Row("title", d.title, note="as the run states"))
    rows += [
        Row("implementation", ident.get("implementation") or missing),
        Row("project", ident.get("project") or missing),
        Row("revision", ident.get("revision") or missing),
        Row("workload", _workload_summary(d.workload) or ident.get("workload") or "unresolved"),
    ]
    rows.append(
        Row(key_label, key, digest=True, href=urls.group(key))
        if key
        else Row(key_label, "unresolved (waits on a referenced manifest)")
    )
    rows += [
        Row("source", source_name),
        Row("external id", source_id(d.source, d.externalId) or "—"),
        Row("run digest", d.runDigest, digest=True),
    ]
    rows += [Row("alias", a) for a in d.aliases if not a.startswith(d.source + ":")]
    return rows


# How a source writes its own record ids where the published manifests keep only the number:
# SOL-ExecBench names a leaderboard entry ``submission/<id>`` (as KernelIndex's run page shows).
_SOURCE_ID_FORMS = {"sol-execbench": "submission/{}"}


def source_id(source: str, external: str | None) -> str | None:
    """The run's external id as its source writes it."""
    form = _SOURCE_ID_FORMS.get(source)
    if external and form and external.isdigit():
        return form.format(external)
    return external


def correctness_text(d: Dossier) -> str:
    """What the record says about correctness when it publishes no policy of its own."""
    if d.status in ("passed", "valid"):
        return f"Marked {d.status} by the source; the correctness policy was not published."
    return f"Marked {d.status} by the source; the correctness policy was not published, so the run is not ranked."


def workload_rows(workload: dict[str, Any] | None) -> list[Row]:
    """The Workload section: its definition's correctness, then its shape."""
    if not workload:
        return []
    correctness = workload.get("correctness") or {}
    rows = [Row("definition " + k, str(v)) for k, v in correctness.items() if k != "description"]
    if "description" in correctness:
        rows.append(Row("description", str(correctness["description"])))
    if workload.get("title"):
        rows.append(Row("title", str(workload["title"])))
    if "cases" in workload:
        rows.append(Row("cases", str(workload["cases"])))
    agg = workload.get("aggregation")
    if agg:
        rows.append(
            Row("aggregation", " ".join(str(agg[k]) for k in ("statistic", "metric") if k in agg))
        )
    if workload.get("axes"):
        rows.append(Row("axes", ", ".join(f"{k}={v}" for k, v in workload["axes"].items())))
    if workload.get("digest"):
        rows.append(Row("workload digest", workload["digest"], digest=True))
    return rows


def measurement_rows(measurements: list[dict[str, Any]]) -> list[Row]:
    """One row per published figure: "latency · mean" → "1.09 ms", an interval as its two ends
    ("latency · confidence95" → "8.10 µs to 8.15 µs")."""
    rows = []
    for m in measurements:
        label = " · ".join(str(m[k]) for k in ("metric", "statistic") if m.get(k))
        value = measured(m.get("value"), m.get("unit"))
        if m.get("sampleCount"):
            value += f" (n = {m['sampleCount']})"
        rows.append(Row(label, value))
    return rows


def protocol_rows(d: Dossier) -> list[Row]:
    """The Protocol section: harness, timer, statistics, correctness reference, family."""
    if d.protocol is None:
        key = d.identity.get("protocolKey")
        return [Row("protocol key", key)] if key else []
    spec = d.protocol.get("spec", {})
    harness = spec.get("harness", {})
    measurement = dict(spec.get("measurement", {}))
    rows = [
        Row(
            "harness",
            " ".join(str(harness[k]) for k in ("name", "version") if harness.get(k)) or "—",
            href=safe_url(harness.get("repository")),
        )
    ]
    for key in ("timer", "primaryStatistic"):
        if key in measurement:
            rows.append(Row(key, str(measurement.pop(key))))
    rows += [Row(k, str(v)) for k, v in measurement.items()]
    correctness = spec.get("correctness", {})
    if "reference" in correctness:
        rows.append(Row("correctnessReference", str(correctness["reference"])))
    if "family" in spec.get("comparability", {}):
        rows.append(Row("comparabilityFamily", str(spec["comparability"]["family"])))
    return rows


def environment_rows(d: Dossier) -> list[Row]:
    """The Environment section: the accelerator with its architecture, then the software."""
    if d.environment is None:
        return [Row("gpu", d.hardware)] if d.hardware else []
    spec = d.environment.get("spec", {})
    hw = dict(spec.get("hardware", {}))
    arch = hw.pop("architecture", None)
    product = str(hw.pop("product", d.hardware or "—"))
    hw.pop("vendor", None)
    rows = [Row("gpu", f"{product} ({arch})" if arch and arch != "unknown" else product)]
    rows += [Row(k, str(v)) for k, v in hw.items()]
    for key, value in spec.get("software", {}).items():
        if key == "libraries" and isinstance(value, dict):
            rows += [Row(lib, str(version)) for lib, version in value.items()]
        elif isinstance(value, dict) and "name" in value:
            rows.append(Row(key, f"{value['name']} {value.get('version', '')}".strip()))
        else:
            rows.append(Row(key, str(value)))
    if spec.get("imageDigest"):
        rows.append(Row("image", spec["imageDigest"], digest=True))
    return rows


def unranked_reason(d: Dossier) -> str:
    """Why a run has no rank."""
    if d.retractedReason is not None:
        return "retracted"
    if d.supersededBy is not None:
        return "superseded"
    if d.status not in ("passed", "valid"):
        return f"the source marked it {d.status}"
    if d.primary is None or d.primary.value is None:
        return "no primary measurement"
    return "its comparison group is not known yet (a referenced manifest is missing)"


def evidence_missing(reason: str) -> tuple[str, list[str]]:
    """The evidence reason split for reading: its lead, and what a higher level still needs as
    short items ("As published by the source; not yet reproducible", ["source available", …])."""
    lead, sep, needs = reason.partition(": needs ")
    if not sep:
        return reason, []
    return lead, [item.strip().rstrip(".") for item in needs.split("; ") if item.strip()]


def unresolved_refs(d: Dossier) -> list[tuple[str, str | None]]:
    """The roles the run still waits on, with the digest it names for each."""
    digests = {
        "implementation": d.identity.get("implementationDigest"),
        "workload": d.identity.get("workloadDigest"),
        "protocol": d.identity.get("protocolKey"),
        "environment": d.identity.get("environmentKey"),
    }
    return [(role, digests.get(role)) for role in d.unresolved]
