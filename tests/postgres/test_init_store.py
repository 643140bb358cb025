"""Which store a data directory keeps its log in: ``init --store`` records it, so does ``init``
under ``$BENCHPROOF_STORE``; a directory is pointed at another store only when its log is there
(copied by ``migrate-store``), never at an empty one, which would start a second history signed
by the same keys."""

from __future__ import annotations

from pathlib import Path

from events.stores import log_exists
from tests.corpora import shared_file
from tests.servers import run_cli


def _cli(*args: object, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    done = run_cli(*args, env=env)
    return done.returncode, done.stdout, done.stderr


def test_a_directory_with_a_log_is_never_pointed_at_an_empty_store(
    tmp_path: Path, pg_url: str
) -> None:
    data = tmp_path / "data"
    assert _cli("init", "--data", data)[0] == 0
    assert _cli("ingest", "manifest", shared_file("seed-manifest.json"), "--data", data)[0] == 0
    code, _, err = _cli("init", "--data", data, "--store", pg_url)
    assert code == 2, err
    assert "holds no log" in err and "migrate-store" in err
    assert not (data / "store").exists()
    assert not log_exists(pg_url)
    # Copied there, the log may be served from there: init points the directory at it.
    source = f"sqlite://{(data / 'benchproof.db').resolve()}"
    assert run_cli("migrate-store", source, pg_url).returncode == 0
    code, out, err = _cli("init", "--data", data, "--store", pg_url)
    assert code == 0, err
    assert "already initialised" in out
    assert (data / "store").read_text().strip() == pg_url
    code, out, err = _cli("verify", "--data", data, "--json")
    assert code == 0, err
    assert '"entries":4' in out.replace(" ", "")


def test_init_under_the_environment_records_the_store(tmp_path: Path, pg_url: str) -> None:
    data = tmp_path / "data"
    code, _, err = _cli("init", "--data", data, env={"BENCHPROOF_STORE": pg_url})
    assert code == 0, err
    assert (data / "store").read_text().strip() == pg_url
    assert (data / "store").stat().st_mode & 0o777 == 0o600
    assert not (data / "benchproof.db").exists()
    code, _, err = _cli("verify", "--data", data)  # no variable: the recorded store
    assert code == 0, err


def test_a_password_is_never_shown(tmp_path: Path, pg_url: str) -> None:
    wrong = pg_url.replace("postgresql://postgres@", "postgresql://nobody:s3cr3t@", 1)
    wrong += "&password=0th3r"
    code, _, err = _cli("init", "--data", tmp_path / "data", "--store", wrong)
    assert code == 4, err
    assert len(err.strip().splitlines()) == 1, err
    assert "s3cr3t" not in err and "0th3r" not in err
    assert "***" in err


def test_reads_do_not_wait_behind_a_long_write(tmp_path: Path, pg_url: str) -> None:
    """While a writer holds the log (a long ingest, a migration), commands that only read open
    the data directory and answer: opening it takes the writers' lock only to make tables."""
    import psycopg

    from events.stores.pg_schema import writer_key
    from tests.stores import pg_schema

    data = tmp_path / "data"
    assert _cli("init", "--data", data, "--store", pg_url)[0] == 0
    with psycopg.connect(pg_url, autocommit=True) as writer:
        writer.execute("BEGIN")
        writer.execute("SELECT pg_advisory_xact_lock(%s)", (writer_key(pg_schema(pg_url)),))
        code, out, err = _cli("log", "checkpoint", "--data", data)
        writer.execute("ROLLBACK")
    assert code == 0, err
    assert out.splitlines()[1] == "3"


def test_a_directory_is_never_pointed_at_an_older_copy_of_its_log(
    tmp_path: Path, pg_url: str
) -> None:
    from tests.corpora import corpus

    data = tmp_path / "data"
    assert _cli("init", "--data", data)[0] == 0
    assert _cli("ingest", "manifest", shared_file("seed-manifest.json"), "--data", data)[0] == 0
    source = f"sqlite://{(data / 'benchproof.db').resolve()}"
    assert run_cli("migrate-store", source, pg_url).returncode == 0
    lines = corpus("liger-kernel-bench", "all_benchmark_data.csv").read_text().splitlines(True)
    csv = tmp_path / "liger" / "all_benchmark_data.csv"
    csv.parent.mkdir()
    csv.write_text("".join(lines[:11]))
    assert _cli("ingest", "liger", csv, "--data", data)[0] == 0  # the SQLite log grew since
    code, _, err = _cli("init", "--data", data, "--store", pg_url)
    assert code == 2, err
    assert "does not hold the whole log" in err
    assert not (data / "store").exists()
    assert run_cli("migrate-store", source, pg_url).returncode == 0  # goes on from where it was
    assert _cli("init", "--data", data, "--store", pg_url)[0] == 0
    assert (data / "store").read_text().strip() == pg_url


def test_an_unreadable_record_of_the_store_is_refused(tmp_path: Path, pg_url: str) -> None:
    """Taking the default store instead would start a second log under the same keys."""
    data = tmp_path / "data"
    assert _cli("init", "--data", data, "--store", pg_url)[0] == 0
    (data / "store").write_bytes(b"\xff\xfe")
    for command in (("init",), ("verify",), ("log", "checkpoint")):
        code, _, err = _cli(*command, "--data", data)
        assert code == 2, (command, err)
        assert "cannot be read" in err
    assert not (data / "benchproof.db").exists()
