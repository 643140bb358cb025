"""Tampering with a real database file: ``benchproof verify`` exits 1 and names the position;
an untouched log verifies."""

from __future__ import annotations

import random
import re
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.cli.conftest import Runner
from tests.corpora import corpus, shared_file

Tamper = Callable[[sqlite3.Connection, int], int]


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory, bp: Runner) -> Path:
    data = tmp_path_factory.mktemp("tamper") / "data"
    assert bp("init", "--data", data).returncode == 0
    assert (
        bp("ingest", "manifest", shared_file("seed-manifest.json"), "--data", data).returncode == 0
    )
    examples = sorted(corpus("kernelindex-manifests", "examples").glob("*.yaml"))
    out = bp("ingest", "manifest", *examples, "--data", data)
    assert out.returncode == 0, out.stderr
    return data


def _copy(pristine: Path, tmp_path: Path) -> tuple[Path, sqlite3.Connection]:
    data = tmp_path / "copy"
    shutil.copytree(pristine, data)
    conn = sqlite3.connect(data / "benchproof.db", isolation_level=None)
    for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'").fetchall():
        conn.execute(f'DROP TRIGGER "{name}"')
    return data, conn


def _size(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT count(*) FROM entries").fetchone()[0])


def flip_a_byte(conn: sqlite3.Connection, k: int) -> int:
    leaf = bytearray(conn.execute("SELECT leaf FROM entries WHERE seq = ?", (k,)).fetchone()[0])
    at = random.Random(k).randrange(len(leaf))
    leaf[at] ^= 0x01
    conn.execute("UPDATE entries SET leaf = ? WHERE seq = ?", (bytes(leaf), k))
    return k


def delete_a_row(conn: sqlite3.Connection, k: int) -> int:
    conn.execute("DELETE FROM entries WHERE seq = ?", (k,))
    return k


def reorder_two_rows(conn: sqlite3.Connection, k: int) -> int:
    j = k + 1
    a = conn.execute(
        "SELECT recorded_at, type, subject, payload_digest, leaf_hash, leaf FROM entries WHERE seq = ?",
        (k,),
    ).fetchone()
    b = conn.execute(
        "SELECT recorded_at, type, subject, payload_digest, leaf_hash, leaf FROM entries WHERE seq = ?",
        (j,),
    ).fetchone()
    conn.execute("DELETE FROM entries WHERE seq IN (?, ?)", (k, j))
    conn.execute(
        "INSERT INTO entries (seq, recorded_at, type, subject, payload_digest, leaf_hash, leaf) VALUES (?,?,?,?,?,?,?)",
        (k, *b),
    )
    conn.execute(
        "INSERT INTO entries (seq, recorded_at, type, subject, payload_digest, leaf_hash, leaf) VALUES (?,?,?,?,?,?,?)",
        (j, *a),
    )
    return k


def truncate_the_tail(conn: sqlite3.Connection, k: int) -> int:
    size = _size(conn)
    cut = max(size - 2, 1)
    conn.execute("DELETE FROM entries WHERE seq >= ?", (cut,))
    return cut


def swap_a_checkpoint_signature(conn: sqlite3.Connection, k: int) -> int:
    rows = conn.execute("SELECT size, note FROM checkpoints ORDER BY size").fetchall()
    (_size_a, note_a), (size_b, note_b) = rows[-2], rows[-1]
    sig_a = bytes(note_a).split(b"\n\n", 1)[1]
    body_b = bytes(note_b).split(b"\n\n", 1)[0]
    conn.execute(
        "UPDATE checkpoints SET note = ? WHERE size = ?", (body_b + b"\n\n" + sig_a, size_b)
    )
    return int(size_b) - 1


@pytest.mark.parametrize(
    "tamper",
    [flip_a_byte, delete_a_row, reorder_two_rows, truncate_the_tail, swap_a_checkpoint_signature],
)
@pytest.mark.parametrize("where", [0, 2, "last"])
def test_tampering_is_caught_and_located(
    bp: Runner, pristine: Path, tmp_path: Path, tamper: Tamper, where: int | str
) -> None:
    data, conn = _copy(pristine, tmp_path)
    size = _size(conn)
    k = size - 2 if where == "last" else int(where)
    position = tamper(conn, k)
    conn.close()
    out = bp("verify", "--data", data)
    assert out.returncode == 1, out.stdout + out.stderr
    found = re.search(r"position (\d+)", out.stderr)
    assert found is not None, out.stderr
    if tamper is swap_a_checkpoint_signature:
        assert "checkpoint" in out.stderr
    else:
        assert int(found.group(1)) == position, out.stderr


def test_an_untouched_log_verifies(bp: Runner, pristine: Path) -> None:
    out = bp("verify", "--data", pristine)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("ok: ")


def test_tampering_a_stored_tree_node_is_caught(bp: Runner, pristine: Path, tmp_path: Path) -> None:
    data, conn = _copy(pristine, tmp_path)
    conn.execute("UPDATE tree_nodes SET hash = zeroblob(32) WHERE id = ?", (1 << 40,))
    conn.close()
    out = bp("verify", "--data", data)
    assert out.returncode == 1
    assert "tree node (1, 0)" in out.stderr


def test_a_deleted_tree_node_is_named_at_the_entry_that_completes_it(
    bp: Runner, pristine: Path, tmp_path: Path
) -> None:
    data, conn = _copy(pristine, tmp_path)
    conn.execute("DELETE FROM tree_nodes WHERE id = ?", (1 << 40,))
    conn.close()
    out = bp("verify", "--data", data)
    assert out.returncode == 1
    assert "entry 1: stored tree node (1, 0) is wrong or missing" in out.stderr


def test_a_changed_leaf_is_named_for_itself(bp: Runner, pristine: Path, tmp_path: Path) -> None:
    data, conn = _copy(pristine, tmp_path)
    flip_a_byte(conn, 3)
    conn.close()
    out = bp("verify", "--data", data)
    assert out.returncode == 1
    first = out.stderr.splitlines()[0]
    assert "position 3" in first and "tree node" not in first, first


def test_a_stored_checkpoint_root_must_be_the_signed_one(
    bp: Runner, pristine: Path, tmp_path: Path
) -> None:
    data, conn = _copy(pristine, tmp_path)
    conn.execute(
        "UPDATE checkpoints SET root = zeroblob(32) WHERE size = (SELECT max(size) FROM checkpoints)"
    )
    conn.close()
    out = bp("verify", "--data", data)
    assert out.returncode == 1
    assert "stored root is not the signed one" in out.stderr


def test_an_emptied_payload_digest_is_caught(bp: Runner, pristine: Path, tmp_path: Path) -> None:
    """A stored digest column blanked out is a mismatch, not a column with nothing to compare
    (only a log read through its tiles has no stored columns)."""
    data, conn = _copy(pristine, tmp_path)
    conn.execute("UPDATE entries SET payload_digest = '' WHERE seq = 3")
    conn.close()
    out = bp("verify", "--data", data)
    assert out.returncode == 1, out.stdout + out.stderr
    assert "entry 3: the stored payload digest does not match the payload" in out.stderr


@pytest.mark.parametrize("tamper", [flip_a_byte, delete_a_row, reorder_two_rows])
def test_checks_in_processes_find_what_checks_on_threads_find(
    pristine: Path, tmp_path: Path, tamper: Tamper, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A large log's stateless checks run in a process per core (``PROCESSES_FROM``): here
    forced on a small one, the findings are the threads' own, finding for finding."""
    from verifier import log as verifier_log

    data, conn = _copy(pristine, tmp_path)
    tamper(conn, 2)
    conn.close()
    on_threads = verifier_log.verify_log(data / "benchproof.db")
    monkeypatch.setattr(verifier_log, "PROCESSES_FROM", 0)
    monkeypatch.setattr(verifier_log, "cores", lambda: 2)
    in_processes = verifier_log.verify_log(data / "benchproof.db")
    assert on_threads.findings and in_processes.findings == on_threads.findings
    assert (in_processes.entries, in_processes.root) == (on_threads.entries, on_threads.root)
    assert verifier_log.verify_log(pristine / "benchproof.db").ok
