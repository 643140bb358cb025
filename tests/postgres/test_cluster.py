"""The throwaway cluster of ``make test-postgres`` (``tests/pgcluster.py``) and the store
helpers the suites use on it (``tests/stores.py``): the server answers, listens on 127.0.0.1
alone, keeps writes durable, gives each test a schema of its own, and is gone afterwards."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import tempfile
from pathlib import Path
from urllib.parse import urlsplit

import psycopg
import pytest

from tests.pgcluster import cluster
from tests.stores import (
    ENV_STORE,
    ENV_URL,
    default_store_kind,
    drop_pg_schema,
    fresh_pg_url,
    make_store_url,
    pg_schema,
    store_urls,
)

ROOT = Path(__file__).resolve().parents[2]


def _show(url: str, setting: str) -> str:
    with psycopg.connect(url) as conn:
        row = conn.execute(f"SHOW {setting}").fetchone()
    assert row is not None
    return str(row[0])


def _refuses(host: str, port: int) -> bool:
    """Whether a TCP connection to host:port is refused (nothing listens there)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family) as s:
        try:
            s.connect((host, port))
        except ConnectionRefusedError:
            return True
        except OSError:
            # No such address on this machine (no IPv6, say): nothing can listen there either.
            return True
    return False


def _port(url: str) -> int:
    port = urlsplit(url).port
    assert port is not None
    return port


def _pg_folders() -> set[Path]:
    return set(Path(tempfile.gettempdir()).glob("benchproof-pg-*"))


def test_server_answers(pg_base_url: str) -> None:
    with psycopg.connect(pg_base_url) as conn:
        row = conn.execute("SELECT current_database(), current_user, 6 * 7").fetchone()
    assert row == ("benchproof", "postgres", 42)


def test_listens_on_loopback_only(pg_base_url: str) -> None:
    port = _port(pg_base_url)
    assert urlsplit(pg_base_url).hostname == "127.0.0.1"
    assert _show(pg_base_url, "listen_addresses") == "127.0.0.1"
    # Linux answers for all of 127/8 on the loopback device: a server bound to every address
    # would take 127.0.0.2 too; one bound to 127.0.0.1 alone refuses it, and IPv6 loopback.
    assert _refuses("127.0.0.2", port)
    assert _refuses("::1", port)


def test_writes_are_durable(pg_base_url: str) -> None:
    assert _show(pg_base_url, "fsync") == "on"
    assert _show(pg_base_url, "synchronous_commit") == "on"


def test_fresh_schemas_keep_tests_apart(pg_base_url: str) -> None:
    first, second = fresh_pg_url(pg_base_url), fresh_pg_url(pg_base_url)
    try:
        assert pg_schema(first) != pg_schema(second)
        with psycopg.connect(first) as conn:
            conn.execute("CREATE TABLE entries (n integer)")
            conn.execute("INSERT INTO entries VALUES (1), (2)")
        with psycopg.connect(second) as conn:
            assert conn.execute("SELECT to_regclass('entries')").fetchone() == (None,)
            conn.execute("CREATE TABLE entries (n integer)")
            conn.execute("INSERT INTO entries VALUES (3)")
            assert conn.execute("SELECT array_agg(n) FROM entries").fetchone() == ([3],)
        with psycopg.connect(first) as conn:
            assert conn.execute("SELECT array_agg(n ORDER BY n) FROM entries").fetchone() == (
                [1, 2],
            )
            assert conn.execute("SELECT current_schema()").fetchone() == (pg_schema(first),)
    finally:
        drop_pg_schema(first)
        drop_pg_schema(second)
    with psycopg.connect(pg_base_url) as conn:
        gone = conn.execute(
            "SELECT count(*) FROM pg_namespace WHERE nspname = ANY(%s)",
            [[pg_schema(first), pg_schema(second)]],
        ).fetchone()
    assert gone == (0,)


def test_fresh_url_keeps_the_query_it_had(pg_base_url: str) -> None:
    url = fresh_pg_url(pg_base_url + "?application_name=bp-test&options=-cstatement_timeout%3D0")
    try:
        assert _show(url, "application_name") == "bp-test"
        assert _show(url, "search_path") == pg_schema(url)
        assert _show(url, "statement_timeout") == "0"
    finally:
        drop_pg_schema(url)


def test_store_kinds_include_postgresql(pg_url: str, tmp_path: Path) -> None:
    assert store_urls() == ["sqlite", "postgresql"]
    assert make_store_url("sqlite", tmp_path) == ""
    url = make_store_url("postgresql", tmp_path)
    try:
        assert _show(url, "search_path") == pg_schema(url) != pg_schema(pg_url)
    finally:
        drop_pg_schema(url)
    with pytest.raises(ValueError, match="unknown store kind"):
        make_store_url("mysql", tmp_path)


def test_postgresql_store_is_refused_without_a_server(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_STORE, "postgresql")
    assert default_store_kind() == "postgresql"
    monkeypatch.delenv(ENV_URL)
    with pytest.raises(RuntimeError, match=f"{ENV_STORE}=postgresql, but {ENV_URL} is not set"):
        default_store_kind()
    assert store_urls() == ["sqlite"]
    monkeypatch.delenv(ENV_STORE)
    assert default_store_kind() == "sqlite"
    monkeypatch.setenv(ENV_STORE, "postgres")
    with pytest.raises(RuntimeError, match="expected one of sqlite, postgresql"):
        default_store_kind()


def test_cluster_from_python_is_gone_afterwards() -> None:
    before = _pg_folders()
    with cluster() as url:
        assert _show(url, "listen_addresses") == "127.0.0.1"
        assert len(_pg_folders() - before) == 1
    assert _refuses("127.0.0.1", _port(url))
    assert _pg_folders() == before


def _pgcluster(*command: str, **options: object) -> subprocess.Popen[str]:
    return subprocess.Popen(  # type: ignore[call-overload, no-any-return]
        [sys.executable, "-m", "tests.pgcluster", *command],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **options,
    )


def test_command_exit_code_passes_through_and_its_last_line_ends_the_run() -> None:
    before = _pg_folders()
    script = f'echo "${ENV_URL}"; echo verdict; echo >&2 noise; exit 7'
    proc = _pgcluster("sh", "-c", script)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 7, err
    url, verdict, repeated = out.splitlines()
    assert (verdict, repeated) == ("verdict", "verdict")
    assert url.startswith("postgresql://postgres@127.0.0.1:")
    assert "noise" in err
    assert "stopping the cluster" in err
    assert _refuses("127.0.0.1", _port(url))
    assert _pg_folders() == before


def test_sigterm_stops_the_command_and_the_cluster() -> None:
    before = _pg_folders()
    proc = _pgcluster("sleep", "600")
    assert proc.stderr is not None
    seen = []
    for line in proc.stderr:
        seen.append(line)
        if "running sleep 600" in line:
            break
    url = seen[-1].split(f"{ENV_URL}=")[-1].strip()
    assert _show(url, "fsync") == "on"
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 128 + signal.SIGTERM, "".join(seen) + err
    assert "stopping the cluster" in err
    assert _refuses("127.0.0.1", _port(url))
    assert _pg_folders() == before
