"""The pages' figures and chart geometry, without a browser."""

from __future__ import annotations

import pytest

from service.web.charts import bar_chart
from service.web.present import Urls, quantity, safe_url
from service.web.sections import native_highlights, native_rows


@pytest.mark.parametrize(
    ("value", "unit", "shown"),
    [
        (1093964, "ns", "1.09 ms"),
        (44998, "ns", "45.0 µs"),
        (0.00018619244981838177, "s", "186 µs"),
        (512, "ns", "512 ns"),
        (2.5, "s", "2.50 s"),
        (49215.9, "tokens_s", "49,215.9 tokens/s"),
        (0, "ns", "0"),
        (None, "ns", "—"),
    ],
)
def test_quantity(value: float | None, unit: str, shown: str) -> None:
    assert quantity(value, unit) == shown


def test_sol_native_metrics() -> None:
    native = {
        "source": "sol-execbench",
        "metrics": {
            "sol_score": 0.838001,
            "latency_ms": 1.093964,
            "avg_speedup": 5.06,
            "fast_1_count": 16,
            "fast_1_total": 16,
        },
        "benchmark": "001_fused",
    }
    assert native_highlights(native) == ["SOL 0.8380", "5.06× reference", "16/16 cases faster"]
    assert [(r.label, r.value) for r in native_rows(native)] == [
        ("latency_ms", "1.093964 ms"),  # as published, in its own unit
        ("benchmark", "001_fused"),
    ]


def test_links_keep_as_of_and_encode_aliases() -> None:
    assert (
        Urls(None).run("gpumode-kernelbot:submission/1") == "/runs/gpumode-kernelbot:submission%2F1"
    )
    assert Urls(7).compare(["a", "b"]) == "/compare?runs=a,b&asOf=7"
    assert safe_url("javascript:alert(1)") is None
    assert safe_url("https://example.org/x") == "https://example.org/x"


def test_chart_is_best_first_with_one_bar_per_run() -> None:
    items = [
        (1, 10.0, "a", "/runs/a", "sha256:" + "a" * 64),
        (2, 20.0, "b", "/runs/b", "sha256:" + "b" * 64),
    ]
    chart = bar_chart(items, "ns")
    assert len(chart.bars) == 2
    assert (
        chart.bars[0].height < chart.bars[1].height
    )  # lower is better: the leader's bar is the shortest
    assert chart.bars[0].lead and not chart.bars[1].lead
    assert not chart.log
    wide = bar_chart(
        [(1, 1.0, "a", "/a", "sha256:" + "a" * 64), (2, 1e4, "b", "/b", "sha256:" + "b" * 64)], "ns"
    )
    assert wide.log and wide.bars[0].height > 1.0
