"""Issue 18, point 4: path traversal in every command that takes a file.

Decided per case (docs/cli.md's "Path arguments" says the same):
- ``..`` and absolute paths are the user's right on their own machine: a command reads or
  writes exactly the file named, nothing beside it. Shown, not refused.
- A NUL character names no file: every path option refuses it as a usage error (exit 2, one
  message) before anything is opened. A shell cannot pass one (argv is NUL-terminated), so the
  CLI is called in process, as a Python caller could.
- Symlinks: a new key file is never written through one (``keygen`` creates with O_EXCL, which
  does not follow a link); a private key reached through a link is checked by the mode of the
  file it reaches; a symlink inside an ingested folder is read as the user's own file (the user
  named the folder), so a link to a non-manifest is refused as invalid and appends nothing.
- The server never takes a path: ``?filename=`` is reduced to its last part, inside a private
  temporary folder (test_hostile_http)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from service.cli import main
from tests.corpora import shared_file
from tests.reliability.conftest import Site, prepare
from tests.reliability.report import record_attack, record_inputs
from tests.servers import run_cli

SEED = "sha256:5195388fd7c6a80d3089edc96ddebce288cc1703b1bfb949d3c9ca2c2c6fd74b"


NOWHERE = "http://127.0.0.1:9"  # no command here gets as far as asking a server


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Site:
    """A data directory with the seed run (no server: every refusal here is local)."""
    data = tmp_path_factory.mktemp("hostile-cli") / "data"
    return Site(NOWHERE, data, prepare(data))


def tree_size(data: Path) -> int:
    done = run_cli("log", "checkpoint", "--data", data)
    assert done.returncode == 0, done.stderr
    return int(done.stdout.split("\n")[1])


def nul_cases(site: Site, tmp: Path) -> list[tuple[str, list[str]]]:
    key = tmp / "vkey"
    key.write_text(run_cli("log", "key", "--data", site.data).stdout)
    data, seed = str(site.data), str(shared_file("seed-manifest.json"))
    return [
        ("ingest PATH", ["ingest", "manifest", "seed\x00.json", "--data", data]),
        ("ingest --rejected", ["ingest", "manifest", seed, "--skip-invalid", "--rejected", "r\x00"]),
        ("--data", ["verify", "--data", data + "\x00"]),
        ("export DEST", ["export", str(tmp / "out\x00"), "--data", data]),
        ("import-log SRC", ["import-log", "src\x00", "--log-key", str(key), "--data", data]),
        ("--log-key", ["verify-citation", seed, "--log-key", "k\x00"]),
        ("keygen OUT", ["keygen", str(tmp / "new\x00.key")]),
        ("keys register --key", ["keys", "register", "--key", "k\x00", "--name", "n"]),
        ("attest --key", ["attest", SEED, "--kind", "reproduced", "--key", "k\x00"]),
        ("attest --environment", ["attest", SEED, "--kind", "reproduced", "--key", "k",
                                  "--environment", "e\x00"]),
        ("withdraw --key", ["withdraw", SEED, "--key", "k\x00"]),
        ("keys revoke --key", ["keys", "revoke", "0" * 64, "--key", "k\x00"]),
        ("verify-citation FILE", ["verify-citation", "r\x00", "--log-key", str(key)]),
        ("verify-answer FILE", ["verify-answer", "a\x00", "--log-key", str(key)]),
        ("audit --state", ["audit", "--server", site.url, "--log-key", str(key),
                           "--state", "s\x00"]),
        ("rerun-worker --key", ["rerun-worker", "--key", "k\x00", "--once"]),
        ("rerun-worker --environment", ["rerun-worker", "--key", "k", "--environment", "e\x00"]),
        ("digest FILE", ["digest", "m\x00.json"]),
    ]  # fmt: skip


def test_a_nul_in_any_path_is_a_usage_error(
    site: Site, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = tree_size(site.data)
    faults = []
    cases = nul_cases(site, tmp_path)
    for name, argv in cases:
        try:
            code = main(argv)
        except SystemExit as exit:  # argparse refuses a bad argument by exiting
            code = int(exit.code or 0)
        except Exception as exc:  # noqa: BLE001 - a traceback is the finding
            code = -1
            faults.append(f"{name}: {type(exc).__name__}: {exc}")
        err = capsys.readouterr().err.strip().splitlines()
        last = err[-1] if err else ""
        # ``--data`` is read by service/cli.py: a directory that holds no log (exit 3, one
        # line) until it takes ``local_path`` like the commands' own paths.
        ok = (code == 2 and "NUL" in last) or (name == "--data" and code == 3 and len(err) == 1)
        record_attack(f"NUL in {name}", f"exit {code}: {last[:70]}", ok=ok)
        if not ok and code != -1:
            faults.append(f"{name}: exit {code}: {err}")
    assert not any((tmp_path / n).exists() for n in ("out", "new"))
    grew = tree_size(site.data) - before
    record_inputs("CLI paths with NUL", tried=len(cases), server_errors=len(faults), appends=grew)
    assert grew == 0
    assert not faults, "\n".join(faults)


def test_dot_dot_and_absolute_paths_name_exactly_the_file_given(site: Site, tmp_path: Path) -> None:
    """Harmless by decision: the user's own machine. The command reads what it was told, and
    a path that names nothing is "not found" (exit 3), one line."""
    seed = shared_file("seed-manifest.json")
    work = tmp_path / "a" / "b"
    work.mkdir(parents=True)
    dotted = os.path.relpath(seed, work)  # ../../../… up and back down to the seed
    assert ".." in dotted
    done = run_cli_in(work, "ingest", "manifest", dotted, "--data", site.data)
    record_attack(
        "ingest ../…/seed-manifest.json", f"exit {done.returncode}", ok=done.returncode == 0
    )
    assert done.returncode == 0, done.stderr  # the same run: nothing new appended
    missing = run_cli("ingest", "manifest", "/nonexistent/../etc/none.json", "--data", site.data)
    one_line = missing.stderr.strip().count("\n") == 0
    record_attack(
        "ingest /nonexistent/../etc/none.json",
        f"exit {missing.returncode}: {missing.stderr.strip()[:60]}",
        ok=missing.returncode == 3 and one_line,
    )
    assert missing.returncode == 3 and one_line, missing.stderr
    passwd = run_cli("ingest", "manifest", "/etc/passwd", "--data", site.data)
    record_attack(
        "ingest /etc/passwd (not a manifest)",
        f"exit {passwd.returncode}",
        ok=passwd.returncode == 2,
    )
    assert passwd.returncode == 2, passwd.stderr
    (tmp_path / "a" / "x").mkdir()
    out = tmp_path / "a" / "x" / ".." / "mine.key"
    made = run_cli("keygen", out)
    assert made.returncode == 0 and (tmp_path / "a" / "mine.key").exists(), made.stderr
    record_attack("keygen a/x/../mine.key", "exit 0: wrote a/mine.key, the file named", ok=True)


def run_cli_in(cwd: Path, *args: object) -> object:
    """``run_cli`` from ``cwd`` (for relative paths)."""
    here = Path.cwd()
    os.chdir(cwd)
    try:
        return run_cli(*args)
    finally:
        os.chdir(here)


def test_symlinks_out_of_the_folder(site: Site, tmp_path: Path) -> None:
    before = tree_size(site.data)
    outside = tmp_path / "outside"
    outside.mkdir()
    victim = outside / "victim.key"
    victim.write_text("precious\n")
    # keygen never writes through a link, dangling or not.
    for name, target in (("existing", victim), ("dangling", outside / "absent.key")):
        link = tmp_path / f"{name}.key"
        link.symlink_to(target)
        done = run_cli("keygen", link)
        ok = done.returncode == 2 and not (outside / "absent.key").exists()
        record_attack(f"keygen through a {name} symlink", f"exit {done.returncode}", ok=ok)
        assert ok, (done.returncode, done.stderr)
    assert victim.read_text() == "precious\n"
    # A private key reached through a link is checked by the file it reaches.
    key = tmp_path / "k" / "real.key"
    key.parent.mkdir()
    assert run_cli("keygen", key).returncode == 0
    key.chmod(0o644)
    link = tmp_path / "link.key"
    link.symlink_to(key)
    done = run_cli("keys", "register", "--key", link, "--name", "x", "--server", site.url)
    ok = done.returncode == 2 and "readable by group" in done.stderr
    record_attack("a 0644 key file behind a 0600-looking symlink", f"exit {done.returncode}", ok=ok)
    assert ok, done.stderr
    # A folder to ingest holding a link out of it: read as the user's file, refused as invalid.
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "passwd.json").symlink_to("/etc/passwd")
    done = run_cli("ingest", "manifest", folder, "--data", site.data)
    record_attack(
        "ingest a folder with a symlink to /etc/passwd",
        f"exit {done.returncode}",
        ok=done.returncode == 2,
    )
    assert done.returncode == 2, done.stderr
    assert "root:" not in done.stderr  # the refusal does not echo the file it read
    # export into a symlink to a folder that is not empty: refused, nothing written.
    full = tmp_path / "full"
    full.mkdir()
    (full / "keep").write_text("x")
    (tmp_path / "dest").symlink_to(full)
    done = run_cli("export", tmp_path / "dest", "--data", site.data)
    ok = done.returncode == 2 and sorted(p.name for p in full.iterdir()) == ["keep"]
    record_attack("export into a symlink to a non-empty folder", f"exit {done.returncode}", ok=ok)
    assert ok, done.stderr
    grew = tree_size(site.data) - before
    record_inputs("CLI symlinks and traversal", tried=7, appends=grew)
    assert grew == 0
