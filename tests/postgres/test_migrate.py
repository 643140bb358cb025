"""``benchproof migrate-store`` to PostgreSQL and back: one log, three stores (its SQLite file,
a PostgreSQL schema, a new SQLite file), the same leaves, root, checkpoints and projection
digests in each; an interrupted copy into PostgreSQL goes on; a schema that holds another log is
refused and left as it was; a password in a URL is never shown."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

import pytest

from events.stores import open_reader, open_store
from tests.cli.test_migrate_store import build_log, contents, migrate, state
from tests.servers import run_cli


@pytest.fixture(autouse=True)
def _no_store_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each command names its stores: a caller's ``$BENCHPROOF_STORE`` would override them."""
    monkeypatch.delenv("BENCHPROOF_STORE", raising=False)


def test_a_log_goes_to_postgresql_and_back_unchanged(pg_url: str, tmp_path: Path) -> None:
    data = tmp_path / "data"
    src = build_log(data)
    leaves, checkpoints, root = contents(src)

    there = migrate(run_cli, src, pg_url)
    assert (there["dst"], there["size"], there["root"]) == (pg_url, len(leaves), root.hex())
    assert there["checkpoints"] == len(checkpoints)
    assert contents(pg_url) == (leaves, checkpoints, root)
    back = f"sqlite://{tmp_path}/back.db"
    assert migrate(run_cli, pg_url, back)["root"] == root.hex()
    assert contents(back) == (leaves, checkpoints, root)

    # The same keys (the data directory's) serve each copy: the same verify and replay.
    on_sqlite = state(run_cli, data, src)
    assert on_sqlite[0]["entries"] == len(leaves) and on_sqlite[1]["digests"]
    assert state(run_cli, data, pg_url) == on_sqlite
    assert state(run_cli, data, back) == on_sqlite


def test_an_interrupted_copy_into_postgresql_goes_on(pg_url: str, tmp_path: Path) -> None:
    data = tmp_path / "data"
    src = build_log(data)
    leaves, checkpoints, root = contents(src)
    reader = open_reader(src)
    store = open_store(pg_url, origin=reader.origin, create=True)
    try:
        for checkpoint in checkpoints[:2]:
            start = store.size
            taken = [leaf for _, leaf in reader.leaves(start, checkpoint.size)]
            store.append_leaves(start, taken, checkpoint)
    finally:
        reader.close()
        store.close()

    answer = migrate(run_cli, src, pg_url)
    assert (answer["previousSize"], answer["appended"]) == (
        checkpoints[1].size,
        len(leaves) - checkpoints[1].size,
    )
    assert contents(pg_url) == (leaves, checkpoints, root)
    assert state(run_cli, data, pg_url) == state(run_cli, data, src)


def test_a_schema_holding_another_log_is_refused_and_left_as_it_was(
    pg_url: str, tmp_path: Path
) -> None:
    src = build_log(tmp_path / "data")
    other = build_log(tmp_path / "other", seed=100)
    migrate(run_cli, other, pg_url)
    before = contents(pg_url)
    refused = run_cli("migrate-store", src, pg_url, "--json")
    assert refused.returncode == 2, refused.stderr
    assert refused.stdout == "" and refused.stderr.count("\n") == 1
    assert "entry 0 differs" in refused.stderr
    assert contents(pg_url) == before


def test_a_password_in_a_url_is_never_shown(pg_url: str, tmp_path: Path) -> None:
    """The test server trusts loopback, so any password connects; none may be printed."""
    parts = urlsplit(pg_url)
    assert parts.username and parts.password is None, pg_url
    netloc = parts.netloc.replace(f"{parts.username}@", f"{parts.username}:hunter2secret@", 1)
    with_password = parts._replace(netloc=netloc).geturl()
    src = build_log(tmp_path / "data", runs=2)

    done = run_cli("migrate-store", src, with_password, "--json")
    assert done.returncode == 0, done.stderr
    assert "hunter2secret" not in done.stdout + done.stderr
    assert ":***@" in done.stdout
    refused = run_cli("migrate-store", build_log(tmp_path / "other", seed=9), with_password)
    assert refused.returncode == 2
    assert "hunter2secret" not in refused.stdout + refused.stderr
