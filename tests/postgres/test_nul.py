"""A NUL in an imported field (a CSV cell says ``cross\\0entropy``): PostgreSQL's text holds no
U+0000, yet the run lists, the search and the pages answer on it as on SQLite."""

from __future__ import annotations

import json
from pathlib import Path

from tests.corpora import corpus
from tests.servers import run_cli

NUL = "\0"


def test_a_nul_in_an_imported_name_breaks_no_listing(tmp_path: Path, pg_url: str) -> None:
    lines = corpus("liger-kernel-bench", "all_benchmark_data.csv").read_text().splitlines(True)
    header, rows = lines[0], lines[1:41]
    name = rows[0].split(",")[0]
    assert name
    rows[0] = rows[0].replace(name, name[:2] + NUL + name[2:], 1)
    gpu = rows[1].rsplit(",", 3)[1]
    rows[1] = rows[1].replace(gpu, gpu[:3] + NUL + gpu[3:], 1)  # a plain text column too
    csv = tmp_path / "liger" / "all_benchmark_data.csv"
    csv.parent.mkdir()
    csv.write_text(header + "".join(rows))
    listed = {}
    for kind, store in (("sqlite", ()), ("postgresql", ("--store", pg_url))):
        data = tmp_path / kind
        assert run_cli("init", "--data", data, *store).returncode == 0
        done = run_cli("ingest", "liger", csv, "--data", data)
        assert done.returncode == 0, done.stderr
        listing = run_cli("runs", "list", "--data", data, "--json")
        assert listing.returncode == 0, listing.stderr
        found = run_cli("runs", "list", "--data", data, "--json", "--source", "liger")
        assert found.returncode == 0, found.stderr
        listed[kind] = [json.loads(line)["runDigest"] for line in listing.stdout.splitlines()]
    assert listed["sqlite"] == listed["postgresql"]
    assert len(listed["sqlite"]) >= 20
