"""The rooms (docs/rooms.md) are enforced, and the enforcement bites: SQL on the log tables only
in the store adapters, SQL on p_* only in projections/, and import contracts under which keys
and events import nothing of ours (``make lint`` runs both)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from tests.contract import sqlrooms

ROOT = Path(__file__).resolve().parents[2]


def test_sql_is_in_its_rooms() -> None:
    assert list(sqlrooms.violations(ROOT)) == []


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


def test_a_query_outside_its_room_is_named(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "events/stores/sqlite.py": 'Q = "SELECT leaf FROM entries WHERE seq = ?"\n',
            "projections/queries.py": 'Q = "SELECT view FROM p_runs"\nL = "SELECT leaf FROM entries"\n',
            "service/web/api.py": (
                'A = "SELECT note FROM checkpoints"\n'
                'B = "INSERT INTO p_keys VALUES (?)"\n'
                'C = (\n    "select seq, leaf from"\n    " entries where seq = ?"\n)\n'
                'D = db["tree_nodes"]\n'
                'E = conn.execute("PRAGMA table_info(p_runs)")\n'
                'F = db.table("p_state")\n'
            ),
            "service/replay.py": 'C = f"SELECT * FROM {table}"\n',
            "keys/files.py": (
                '"""Keys are read from entries of a file: prose names no statement."""\n'
                'ENTRIES = {"entries": 1, "p_runs": 2}\n'
            ),
        },
    )
    found = list(sqlrooms.violations(root))
    assert len(found) == 8, found
    assert found[0].startswith("projections/queries.py:2: SQL on the log table entries")
    expected = [
        "service/web/api.py:1: SQL on the log table checkpoints",
        "service/web/api.py:2: SQL on the projection table p_keys",
        "service/web/api.py:4: SQL on the log table entries",  # lower case, split over lines
        "service/web/api.py:7: SQL on the log table tree_nodes",  # a sqlite-utils handle
        "service/web/api.py:8: SQL on the projection table p_runs",
        "service/web/api.py:9: SQL on the projection table p_state",
        "service/replay.py:1: SQL on an interpolated table",
    ]
    for start in expected:
        assert any(f.startswith(start) for f in found), (start, found)
    run = subprocess.run(
        [sys.executable, "-m", "tests.contract.sqlrooms", str(root)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 1
    assert "8 SQL statement(s) outside their rooms" in run.stderr


def _lint_imports(tmp_path: Path, probes: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """import-linter on a copy of the packages with ``probes`` added (the checkout is left
    alone)."""
    for package in sqlrooms.PACKAGES:
        shutil.copytree(
            ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    _tree(tmp_path, probes)
    return subprocess.run(
        [str(Path(sys.executable).parent / "lint-imports")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )


def test_the_import_contracts_hold_and_refuse_a_wrong_import(tmp_path: Path) -> None:
    clean = _lint_imports(tmp_path / "clean", {})
    assert clean.returncode == 0, clean.stdout
    wrong = _lint_imports(
        tmp_path / "wrong",
        {"keys/_probe.py": "import events  # noqa\n", "events/_probe.py": "import keys  # noqa\n"},
    )
    assert wrong.returncode == 1
    assert "keys is not allowed to import events" in wrong.stdout
    assert "events is not allowed to import keys" in wrong.stdout
