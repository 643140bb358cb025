"""``benchproof replay``: exit 0 when every rebuilt projection equals the incremental one; exit 1
naming the table and its first differing row when one does not, after which the live
projections are what the log says."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from service.core.init import init_data_dir
from tests.builders import bundle, ingest_event
from tests.cli.conftest import Runner


def test_replay_names_the_first_differing_row_then_repairs(bp: Runner, tmp_path: Path) -> None:
    ledger, _ = init_data_dir(tmp_path / "d")
    with ledger:
        runs = [bundle(group=g % 2, author=g, value=100 + g) for g in range(5)]
        ledger.append([(ingest_event(parts), parts["run"].digest) for parts in runs])
        size, db = ledger.store.size, ledger.data.db
    target = runs[3]["run"].digest

    ok = bp("replay", "--data", tmp_path / "d")
    assert ok.returncode == 0, ok.stderr
    assert f"ok: {size} entries replayed" in ok.stdout

    with sqlite3.connect(db) as conn:  # a projection that no longer says what the log says
        conn.execute(
            "UPDATE p_runs SET evidence_level = 'verified' WHERE run_digest = ?", (target,)
        )
    bad = bp("replay", "--data", tmp_path / "d")
    assert bad.returncode == 1
    assert bad.stderr.count("\n") == 1
    assert "replay differs in table p_runs" in bad.stderr
    assert f'incremental=["{target}"' in bad.stderr and '"verified"' in bad.stderr
    assert f'rebuilt=["{target}"' in bad.stderr and '"reported"' in bad.stderr

    again = bp("replay", "--data", tmp_path / "d")
    assert again.returncode == 0, again.stderr
    with sqlite3.connect(db) as conn:
        level = conn.execute(
            "SELECT evidence_level FROM p_runs WHERE run_digest = ?", (target,)
        ).fetchone()
    assert level == ("reported",)
