"""``runs show``, ``runs list`` and ``groups show`` as people read them: figures as the pages
show them, why a run is not ranked, and group keys taken by a unique prefix."""

from __future__ import annotations

import collections
import json
from pathlib import Path
from typing import Any

import pytest

from tests.cli.conftest import Runner
from tests.corpora import shared_file

GROUPS = 17  # more groups than hex digits: two keys share their first digit


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory, bp: Runner) -> Path:
    """The seed run (its manifests unresolved: no comparison key), and two ranked runs in each
    of ``GROUPS`` synthetic groups (1,093,964 ns leads 2,000,000 ns)."""
    from service.core.init import init_data_dir
    from tests.builders import bundle, ingest_event

    d = tmp_path_factory.mktemp("views") / "data"
    ledger, _ = init_data_dir(d)
    with ledger:
        for group in range(GROUPS):
            for author, value in enumerate((1_093_964, 2_000_000)):
                parts = bundle(group=group, author=author, value=value)
                ledger.append([(ingest_event(parts), parts["run"].digest)])
    seeded = bp("ingest", "manifest", shared_file("seed-manifest.json"), "--data", d)
    assert seeded.returncode == 0, seeded.stderr
    return d


@pytest.fixture(scope="module")
def listed(bp: Runner, data: Path) -> list[dict[str, Any]]:
    out = bp("runs", "list", "--json", "--data", data)
    assert out.returncode == 0, out.stderr
    return [json.loads(line) for line in out.stdout.splitlines()]


def _fields(text: str) -> dict[str, str]:
    """The ``label  value`` lines of ``runs show`` as a mapping."""
    pairs = (line.strip().split(None, 1) for line in text.splitlines()[1:] if line.strip())
    return {p[0]: p[1] for p in pairs if len(p) == 2}


def test_a_ranked_run_shows_its_figure_as_the_pages_do(
    bp: Runner, data: Path, listed: list[dict[str, Any]]
) -> None:
    leader = next(r for r in listed if r["rank"] == 1 and r["primaryValue"] == 1_093_964)
    out = bp("runs", "show", leader["shortId"], "--data", data)
    assert out.returncode == 0, out.stderr
    shown = _fields(out.stdout)
    assert shown["primary"] == "1.09 ms (latency median)"
    assert shown["rank"] == f"#1 of 2 in {leader['comparisonKey']}"
    assert "1093964.0" not in out.stdout and " ns" not in out.stdout


def test_a_run_without_comparison_key_says_why_it_is_not_ranked(bp: Runner, data: Path) -> None:
    out = bp("runs", "show", "sol-execbench:165", "--data", data)
    assert out.returncode == 0, out.stderr
    shown = _fields(out.stdout)
    assert shown["primary"] == "1.09 ms (latency mean)"
    assert shown["rank"] == (
        "not ranked (no comparison key: waits on its workload, implementation, operation manifests)"
    )
    assert "unranked" not in out.stdout and "group unresolved" not in out.stdout


def test_runs_list_is_a_table_and_json_lines_with_json(
    bp: Runner, data: Path, listed: list[dict[str, Any]]
) -> None:
    out = bp("runs", "list", "--data", data)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert len(lines) == len(listed) == 2 * GROUPS + 1
    for line, row in zip(lines, listed, strict=True):
        with pytest.raises(json.JSONDecodeError):
            json.loads(line)
        assert line.split()[:2] == [row["shortId"], row["evidenceLevel"]]
    assert {line.split()[2] + " " + line.split()[3] for line in lines} == {"1.09 ms", "2.00 ms"}
    assert {"runDigest", "shortId", "comparisonKey", "rank", "primaryValue"} <= set(listed[0])


@pytest.mark.parametrize(
    ("option", "value", "named"),
    [("--evidence", "bogus", "evidenceLevel"), ("--source", "nowhere", "source")],
)
def test_runs_list_refuses_a_filter_that_names_nothing(
    bp: Runner, data: Path, option: str, value: str, named: str
) -> None:
    """As the API does: a filter that cannot match is a mistake, not an empty list."""
    out = bp("runs", "list", "--data", data, option, value)
    assert out.returncode == 2
    assert out.stdout == ""
    assert named in out.stderr and value in out.stderr
    assert out.stderr.count("\n") == 1


def _shared_prefix(listed: list[dict[str, Any]]) -> tuple[str, list[str]]:
    """A first hex digit that two or more group keys share, and those keys."""
    keys = {r["comparisonKey"] for r in listed if r["comparisonKey"]}
    by_digit = collections.defaultdict(list)
    for key in sorted(keys):
        by_digit[key.removeprefix("sha256:")[0]].append(key)
    return next((d, ks) for d, ks in by_digit.items() if len(ks) > 1)


def test_groups_show_takes_a_unique_prefix_of_the_key(
    bp: Runner, data: Path, listed: list[dict[str, Any]]
) -> None:
    key = next(r["comparisonKey"] for r in listed if r["comparisonKey"])
    full = bp("groups", "show", key, "--data", data)
    assert full.returncode == 0, full.stderr
    for short in (key.removeprefix("sha256:")[:12], key[:19]):
        out = bp("groups", "show", short, "--data", data)
        assert out.returncode == 0, out.stderr
        assert out.stdout == full.stdout
    assert out.stdout.startswith(f"group {key} ")
    assert "1.09 ms" in out.stdout and "2.00 ms" in out.stdout
    as_json = bp("groups", "show", key[:19], "--json", "--data", data)
    assert json.loads(as_json.stdout)["comparisonKey"] == key


def test_an_ambiguous_group_prefix_lists_the_candidates_and_exits_2(
    bp: Runner, data: Path, listed: list[dict[str, Any]]
) -> None:
    digit, keys = _shared_prefix(listed)
    out = bp("groups", "show", digit, "--data", data)
    assert out.returncode == 2
    assert out.stdout == "" and out.stderr.count("\n") == 1
    assert f"names {len(keys)} comparison groups" in out.stderr
    assert all(key in out.stderr for key in keys)


@pytest.mark.parametrize("ref", ["sha256:" + "f" * 64, "0" * 40])
def test_an_unknown_group_exits_3(bp: Runner, data: Path, ref: str) -> None:
    out = bp("groups", "show", ref, "--data", data)
    assert out.returncode == 3
    assert f"no comparison group matches {ref!r}" in out.stderr


@pytest.mark.parametrize("ref", ["not-a-key", "sha256:", "f" * 65])
def test_a_malformed_group_key_exits_2(bp: Runner, data: Path, ref: str) -> None:
    out = bp("groups", "show", ref, "--data", data)
    assert out.returncode == 2
    assert f"{ref!r} is not a group key" in out.stderr and out.stderr.count("\n") == 1


def test_groups_history_takes_a_prefix_too(
    bp: Runner, data: Path, listed: list[dict[str, Any]]
) -> None:
    key = next(r["comparisonKey"] for r in listed if r["comparisonKey"])
    out = bp("groups", "history", key.removeprefix("sha256:")[:12], "--json", "--data", data)
    assert out.returncode == 0, out.stderr
    changes = [json.loads(line) for line in out.stdout.splitlines()]
    assert changes and {c["comparisonKey"] for c in changes} == {key}
