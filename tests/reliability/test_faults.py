"""Faults of the machine under a real ``benchproof serve`` and the real CLI (issue 18, part 3):
a full disk (a small tmpfs), a read-only file system (an ext4 loop volume the kernel turns
read-only under the running server, and a tmpfs remounted read-only), missing and corrupted
key files, a truncated database and a truncated ``-wal``. Each gives one clear error
(problem+json over HTTP, one line and exit 4 or 2 on the command line), nothing half-written,
and the service works again once the fault is gone. The tests run as root (mounts)."""

from __future__ import annotations

import base64
import contextlib
import errno
import hashlib
import json
import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from events.entries import EVENT_PAYLOAD_TYPE, INTOTO_PAYLOAD_TYPE
from events.types import EVENT_ENCODER, KeyRegistered
from events.types.attestations import ATTESTATION_PREDICATE
from keys import SigningKey, encode_envelope, sign_envelope
from tests.corpora import shared_file
from tests.reliability.conftest import NO_LIMITS, Site, open_site, prepare
from tests.reliability.report import (
    FULL,
    record_attack,
    record_rounds,
    record_writes,
    scale,
)
from tests.servers import run_cli, served

PROBLEMS = "https://benchproof.dev/problems/"
SEED_RUN = "sha256:5195388fd7c6a80d3089edc96ddebce288cc1703b1bfb949d3c9ca2c2c6fd74b"

if os.geteuid() != 0:  # the mounts need root (CI runs the suite as root)
    pytest.skip("the fault tests mount file systems: they run as root", allow_module_level=True)


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A data directory prepared once (seeded, with an operator token); tests copy it."""
    data = tmp_path_factory.mktemp("template") / "data"
    token = prepare(data)
    return data, token


def copy_of(template: tuple[Path, str], dest: Path) -> Path:
    """A copy of the template's data directory at ``dest`` (which may be a mount point),
    served by ``open_site`` with the template's token."""
    source, token = template
    shutil.copytree(source, dest, dirs_exist_ok=True)
    (dest / ".reliability-token").write_text(token)
    return dest


# --- volumes -------------------------------------------------------------------------------


def _sh(*args: object) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(list(map(str, args)), capture_output=True, text=True, check=False)
    assert done.returncode == 0, f"{args}: {done.stderr}"
    return done


@contextlib.contextmanager
def tmpfs(where: Path, size: str) -> Iterator[Path]:
    """A tmpfs of ``size`` mounted at ``where`` until the block ends (unmounted in any case)."""
    where.mkdir(parents=True, exist_ok=True)
    _sh("mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", where)
    try:
        yield where
    finally:
        _unmount(where)


@contextlib.contextmanager
def ext4(image: Path, where: Path, size_mb: int = 32) -> Iterator[Path]:
    """An ext4 file system in ``image`` (a loop device), mounted at ``where`` with
    ``errors=remount-ro``: a file-system error turns it read-only under its open files."""
    if not image.exists():
        with image.open("wb") as f:
            f.truncate(size_mb << 20)
        _sh("mkfs.ext4", "-q", "-F", image)
    where.mkdir(parents=True, exist_ok=True)
    _sh("mount", "-o", "loop,errors=remount-ro", image, where)
    try:
        yield where
    finally:
        _unmount(where)


def _unmount(where: Path) -> None:
    if subprocess.run(["umount", str(where)], capture_output=True, check=False).returncode:
        subprocess.run(["umount", "-l", str(where)], capture_output=True, check=False)


def fill(folder: Path) -> Path:
    """Write a filler file in ``folder`` until its disk has no space left; return it."""
    filler = folder / "filler"
    with filler.open("wb", buffering=0) as out:
        for size in (1 << 16, 4096, 512, 1):  # to the last bytes
            try:
                while True:
                    out.write(b"\0" * size)
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
    return filler


def _free(filler: Path) -> None:
    with contextlib.suppress(OSError):  # close() may fail flushing on a full disk
        filler.unlink()


# --- writes of every kind, and finding them in the log -------------------------------------


class Writer:
    """Posts reports, attestations (by one registered key) and operator ingests to a site,
    each carrying a unique tag; keeps what was acknowledged."""

    def __init__(self, site: Site) -> None:
        self.site = site
        self.client = httpx.Client(base_url=site.url, timeout=60)
        self.key = SigningKey.generate()
        self.attempted = 0
        self.acked: list[str] = []  # tags
        self.refusals: list[httpx.Response] = []
        self.n = 0
        self._registered = False

    def close(self) -> None:
        self.client.close()

    def register(self) -> None:
        r = self.client.post("/v1/keys/challenges", json={"keyId": self.key.key_id})
        assert r.status_code == 201, r.text
        event = KeyRegistered(
            keyId=self.key.key_id,
            publicKey=base64.b64encode(self.key.public.raw).decode(),
            role="community",
            name=f"faults-{self.key.key_id[:8]}",
            challenge=r.json()["challenge"],
        )
        body = encode_envelope(
            sign_envelope(EVENT_PAYLOAD_TYPE, EVENT_ENCODER.encode(event), self.key)
        )
        r = self.client.post("/v1/keys", content=body)
        assert r.status_code == 201, r.text

    def write(self, kind: str, pad: int = 2000) -> httpx.Response:
        """One write of ``kind`` (report, attestation, ingest) tagged uniquely."""
        if kind == "attestation" and not self._registered:
            self.register()
            self._registered = True
        self.n += 1
        tag = f"fault-{os.getpid()}-{self.n}-{os.urandom(4).hex()}"
        if kind == "report":
            body = {"reason": "other", "text": tag + " " + "x" * pad}
            r = self.client.post(f"/v1/runs/{SEED_RUN}/reports", json=body)
        elif kind == "attestation":
            statement = {
                "_type": "https://in-toto.io/Statement/v1",
                "subject": [{"name": f"/runs/{SEED_RUN}", "digest": {"sha256": SEED_RUN[7:]}}],
                "predicateType": ATTESTATION_PREDICATE,
                "predicate": {"kind": "environment-note", "note": tag + " " + "y" * pad},
            }
            envelope = encode_envelope(
                sign_envelope(INTOTO_PAYLOAD_TYPE, json.dumps(statement).encode(), self.key)
            )
            r = self.client.post(f"/v1/runs/{SEED_RUN}/attestations", content=envelope)
        else:
            r = self.client.post(
                "/v1/ingest/manifest?filename=run.json",
                content=json.dumps(variant(tag)).encode(),
                headers={"Authorization": f"Bearer {self.site.token}"},
            )
        self.attempted += 1
        if 200 <= r.status_code < 300:
            self.acked.append(tag)
        else:
            self.refusals.append(r)
        return r


def variant(tag: str) -> dict[str, Any]:
    """The seed manifest as another run: its external id is ``tag``."""
    manifest: dict[str, Any] = json.loads(shared_file("seed-manifest.json").read_text())
    native = manifest["run"]["spec"]["sourceNative"]
    native["externalId"] = tag
    return manifest


def log_texts(url: str) -> list[str]:
    """Every entry of the served log, as the text of its leaf and decoded payload."""
    out: list[str] = []
    with httpx.Client(base_url=url, timeout=60) as client:
        path: str | None = "/v1/log/entries"
        while path:
            page = client.get(path).json()
            for item in page["entries"]:
                leaf = json.loads(base64.b64decode(item["leaf"]))
                envelope = leaf["envelope"]
                if isinstance(envelope, str):
                    envelope = json.loads(envelope)
                out.append(base64.b64decode(envelope["payload"]).decode("utf-8", "replace"))
            path = page.get("next")
    return out


def found_once(url: str, tags: list[str]) -> int:
    """How many of ``tags`` are in exactly one entry of the log at ``url``."""
    texts = log_texts(url)
    return sum(1 for tag in tags if sum(tag in t for t in texts) == 1)


def size_of(url: str) -> int:
    body = httpx.get(url + "/v1/log/checkpoint", timeout=30).text
    return int(body.split("\n")[1])


def cli_line(done: subprocess.CompletedProcess[str]) -> str:
    """The one line a failed command printed (asserting it is one line, no traceback)."""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "Traceback" not in done.stderr + done.stdout, done.stderr
    return lines[0]


def is_problem(r: httpx.Response, status: int, kind: str) -> bool:
    if r.status_code != status or r.headers.get("content-type") != "application/problem+json":
        return False
    body = r.json()
    return bool(body.get("type") == PROBLEMS + kind and body.get("detail"))


def verify_ok(data: Path) -> None:
    done = run_cli("verify", "--data", data)
    assert done.returncode == 0, done.stderr


# --- a full disk ---------------------------------------------------------------------------


def test_a_full_disk_refuses_writes_clearly_and_recovers_without_restart(
    tmp_path: Path, template: tuple[Path, str]
) -> None:
    cycles = scale(1, 4)
    per_phase = scale(6, 20)
    kinds = ("report", "attestation", "ingest")
    rounds = survived = 0
    volume = scale("8m", "32m")  # room for every round's writes once the filler is gone
    with tmpfs(tmp_path / "data", volume) as data, open_site(copy_of(template, data)) as site:
        writer = Writer(site)
        try:
            for cycle in range(cycles):
                rounds += 1
                for i in range(per_phase):  # a healthy disk: every write taken
                    r = writer.write(kinds[i % 3], pad=200)
                    assert r.status_code in (200, 201), r.text
                before = size_of(site.url)
                filler = fill(data)
                try:
                    # Room may be left inside the database and its WAL (earlier rounds grew
                    # them): write until the disk refuses a few, or 400 writes.
                    answers: list[httpx.Response] = []
                    while len(answers) < 400:
                        answers.append(writer.write(kinds[len(answers) % 3], pad=3500))
                        if sum(r.status_code >= 300 for r in answers) >= 3:
                            break
                    refused = [r for r in answers if r.status_code >= 300]
                    # Some room may be left inside the database and its WAL: a write that fits
                    # is taken (and must be in the log); the rest get the disk-full problem.
                    assert refused, "the full disk refused nothing"
                    for r in refused:
                        assert is_problem(r, 507, "storage-full"), (r.status_code, r.text)
                        assert "full" in r.json()["detail"]
                    # Reads go on.
                    assert httpx.get(site.url + "/v1/runs", timeout=30).status_code == 200
                    assert httpx.get(f"{site.url}/runs/{SEED_RUN}", timeout=30).status_code == 200
                    taken = sum(r.status_code < 300 for r in answers)
                    assert size_of(site.url) == before + taken  # nothing half-written
                    # The command line on the full disk: one line, exit 4, nothing written.
                    manifest = tmp_path / f"run-{cycle}.json"
                    manifest.write_text(json.dumps(variant(f"cli-full-{cycle}")))
                    done = run_cli("ingest", "manifest", manifest, "--data", data)
                    line = cli_line(done)
                    assert done.returncode == 4 and "full" in line, done.stderr
                    assert size_of(site.url) == before + taken
                finally:
                    _free(filler)
                for i in range(per_phase):  # the filler gone: writes taken, no restart
                    r = writer.write(kinds[i % 3], pad=200)
                    assert r.status_code in (200, 201), r.text
                verify_ok(data)
                survived += 1
            found = found_once(site.url, writer.acked)
            record_writes(
                "faults: full disk", attempted=writer.attempted, acknowledged=len(writer.acked),
                found=found,
            )  # fmt: skip
            assert found == len(writer.acked)
            sample = writer.refusals[0]
            record_attack(
                "full disk: POST report/attestation/ingest",
                f"{sample.status_code} {sample.json()['type'].removeprefix(PROBLEMS)}",
                ok=all(is_problem(r, 507, "storage-full") for r in writer.refusals),
            )
            record_attack("full disk: benchproof ingest", f"exit 4: {line[:70]}…", ok=True)
        finally:
            writer.close()
    record_rounds(
        "faults: full disk (fill, refuse, free, resume)", rounds=rounds, survived=survived
    )
    assert survived == rounds


# --- a read-only file system ---------------------------------------------------------------


def _trigger_ext4_error(where: Path) -> None:
    """Make the kernel turn the ext4 volume at ``where`` read-only (errors=remount-ro), as it
    does on a disk error: the running server keeps its files open, and every write fails."""
    source = _sh("findmnt", "-n", "-o", "SOURCE", where).stdout.strip()
    trigger = Path("/sys/fs/ext4") / Path(source).name / "trigger_fs_error"
    trigger.write_text("benchproof reliability test\n")
    options = _sh("findmnt", "-n", "-o", "OPTIONS", where).stdout
    assert "ro" in options.split(",") or "emergency_ro" in options, options


def test_a_read_only_disk_under_a_running_server(
    tmp_path: Path, template: tuple[Path, str]
) -> None:
    image, mount = tmp_path / "volume.img", tmp_path / "volume"
    data = mount / "data"
    writer: Writer | None = None
    per_phase = scale(4, 12)
    acked_before: list[str] = []
    with ext4(image, mount):
        copy_of(template, data)
        os.sync()  # the volume holds the data directory durably, as a deployment's disk would
        # The operator makes a token on the running system, a moment before the disk fails.
        made = run_cli("token", "create", "operator-on-ext4", "--data", data)
        assert made.returncode == 0, made.stderr
        (data / ".reliability-token").write_text(made.stdout.strip())
        with open_site(data) as site:
            writer = Writer(site)
            for i in range(per_phase):
                assert writer.write(("report", "attestation", "ingest")[i % 3]).status_code < 300
            before = size_of(site.url)
            _trigger_ext4_error(mount)
            # Reads keep working; every write gets the read-only problem; the server lives.
            for path in ("/v1/runs", f"/v1/runs/{SEED_RUN}", "/v1/log/checkpoint", "/"):
                assert httpx.get(site.url + path, timeout=30).status_code == 200, path
            refused = [writer.write(("report", "attestation", "ingest")[i % 3]) for i in range(6)]
            for r in refused:
                assert is_problem(r, 503, "storage-read-only"), (r.status_code, r.text)
                assert "read-only" in r.json()["detail"]
            assert httpx.get(site.url + "/healthz", timeout=30).status_code == 200
            assert size_of(site.url) == before
            manifest = tmp_path / "run.json"
            manifest.write_text(json.dumps(variant("read-only-cli")))
            done = run_cli("ingest", "manifest", manifest, "--data", data)
            line = cli_line(done)
            assert done.returncode == 4 and "read-only" in line, done.stderr
            acked_before = list(writer.acked)
            attempted = writer.attempted
            token = site.token
            writer.close()
        record_attack(
            "read-only disk under a running server: POST",
            "503 storage-read-only (reads 200)",
            ok=True,
        )
        record_attack("read-only disk: benchproof ingest", f"exit 4: {line[:70]}…", ok=True)
    # An ext4 volume the kernel made read-only takes writes again after fsck and a mount.
    fsck = subprocess.run(["e2fsck", "-fy", str(image)], capture_output=True, check=False)
    assert fsck.returncode in (0, 1, 2), fsck.stdout + fsck.stderr
    with ext4(image, mount), served(data, *NO_LIMITS) as url:
        # The operator's tokens file was made just before the disk failed: it must have been
        # written durably (fsync before rename), or the operator is locked out afterwards.
        tokens = (data / "tokens.json").read_bytes()
        assert tokens.strip().startswith(b"{"), f"tokens.json lost its content: {tokens[:40]!r}"
        writer = Writer(Site(url, data, token))
        try:
            for i in range(per_phase):
                assert writer.write(("report", "attestation", "ingest")[i % 3]).status_code < 300
            found = found_once(url, acked_before + writer.acked)
            verify_ok(data)
        finally:
            writer.close()
    acked = len(acked_before) + len(writer.acked)
    record_writes(
        "faults: read-only disk", attempted=attempted + writer.attempted, acknowledged=acked,
        found=found,
    )  # fmt: skip
    assert found == acked
    record_rounds("faults: read-only disk under a running server", rounds=1, survived=1)


def test_a_read_only_mount_for_the_command_line(tmp_path: Path, template: tuple[Path, str]) -> None:
    rounds = scale(1, 3)
    survived = 0
    with tmpfs(tmp_path / "data", "16m") as data:
        copy_of(template, data)
        manifest = tmp_path / "run.json"
        for cycle in range(rounds):
            db = (data / "benchproof.db").read_bytes()
            _sh("mount", "-o", "remount,ro", data)
            try:
                manifest.write_text(json.dumps(variant(f"ro-{cycle}")))
                done = run_cli("ingest", "manifest", manifest, "--data", data)
                line = cli_line(done)
                assert done.returncode == 4 and "read-only" in line, done.stderr
                made = run_cli("token", "create", "x", "--data", data)
                assert made.returncode == 4 and "read-only" in cli_line(made), made.stderr
            finally:
                _sh("mount", "-o", "remount,rw", data)
            assert (data / "benchproof.db").read_bytes() == db  # nothing changed
            done = run_cli("ingest", "manifest", manifest, "--data", data)
            assert done.returncode == 0, done.stderr
            verify_ok(data)
            survived += 1
    record_attack("read-only mount: benchproof ingest", f"exit 4: {line[:70]}…", ok=True)
    record_rounds("faults: read-only mount (command line)", rounds=rounds, survived=survived)


# --- key files -----------------------------------------------------------------------------


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize(
    "fault", scale(["corrupted"], ["missing", "corrupted", "another key", "mode 0644"])
)
def test_a_bad_key_file_stops_serve_and_writes_with_one_line(
    tmp_path: Path, template: tuple[Path, str], fault: str
) -> None:
    data = copy_of(template, tmp_path / "data")
    manifest = tmp_path / "run.json"
    manifest.write_text(json.dumps(variant(f"key-{fault}")))
    rounds = survived = 0
    for name in scale(("log.key",), ("log.key", "index.key")):
        rounds += 1
        path = data / "keys" / name
        original = path.read_bytes()
        db = _digest(data / "benchproof.db")
        if fault == "missing":
            path.unlink()
        elif fault == "corrupted":
            path.write_bytes(original[:40] + b"\x00garbage\n" + original[60:])
        elif fault == "another key":
            path.unlink()
            subprocess.run([sys.executable, "-c", _KEYGEN, str(path)], check=True)
        else:
            path.chmod(0o644)
        for args in (
            ("serve", "--data", data, "--port", 0),
            ("ingest", "manifest", manifest, "--data", data),
        ):
            done = run_cli(*args, timeout=60)
            line = cli_line(done)
            assert done.returncode == 2, done.stderr
            assert str(path) in line, line
        assert _digest(data / "benchproof.db") == db  # nothing changed
        path.unlink(missing_ok=True)
        path.write_bytes(original)
        path.chmod(0o600)
        done = run_cli("ingest", "manifest", manifest, "--data", data)
        assert done.returncode == 0, done.stderr
        if FULL:
            verify_ok(data)
        survived += 1
    record_attack(f"key file {fault}: serve, ingest", f"exit 2: {line[:70]}…", ok=True)
    record_rounds(f"faults: key file {fault}", rounds=rounds, survived=survived)


_KEYGEN = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from keys import generate_key_file
    generate_key_file(Path(sys.argv[1]))
    """
)


# --- a truncated database ------------------------------------------------------------------

# Appends reports through the ledger, then stops dead (no close: the WAL keeps what the last
# commits wrote), with the WAL's checkpointer slowed so that those commits are in the WAL only.
_APPEND_AND_DIE = textwrap.dedent(
    """
    import os, sys
    from pathlib import Path
    from events.stores.sqlite_schema import Checkpointer
    Checkpointer.INTERVAL = 3600.0
    from service.app.report import file_report
    from service.core.ledger import Ledger
    ledger = Ledger.open(Path(sys.argv[1]))
    for i in range(int(sys.argv[2])):
        body = ('{"reason": "other", "text": "%d-%d %s"}' % (os.getpid(), i, "z" * 3000)).encode()
        file_report(ledger, sys.argv[3], body)
    os._exit(0)
    """
)


def _entries(data: Path, count: int, *, die: bool = False) -> None:
    if die:
        script = _APPEND_AND_DIE
    else:
        script = _APPEND_AND_DIE.replace("os._exit(0)", "ledger.close()")
    done = subprocess.run(
        [sys.executable, "-c", script, str(data), str(count), SEED_RUN],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr


def _restore(backup: Path, data: Path) -> None:
    for name in ("benchproof.db", "benchproof.db-wal", "benchproof.db-shm"):
        (data / name).unlink(missing_ok=True)
    shutil.copy2(backup / "benchproof.db", data / "benchproof.db")
    shutil.copy2(backup / "benchproof.db-committed", data / "benchproof.db-committed")


def _refused_everywhere(data: Path) -> list[str]:
    """``verify`` (exit 1), a read, a write and ``serve`` (exit 4) each refuse ``data`` with
    one line; return the lines."""
    lines = []
    done = run_cli("verify", "--data", data)
    assert done.returncode == 1, done.stdout + done.stderr
    lines.append(cli_line(done))
    for args in (
        ("runs", "list", "--data", data),
        ("ingest", "manifest", shared_file("seed-manifest.json"), "--data", data),
        ("serve", "--data", data, "--port", 0),
    ):
        done = run_cli(*args, timeout=60)
        assert done.returncode == 4, (args, done.stdout, done.stderr)
        lines.append(cli_line(done))
    return lines


@pytest.mark.parametrize(
    "cut", scale(["the -wal to half"], ["half", "half plus 100 bytes", "the -wal to half"])
)
def test_a_truncated_database_is_named_and_a_backup_restores_it(
    tmp_path: Path, template: tuple[Path, str], cut: str
) -> None:
    data = copy_of(template, tmp_path / "data")
    _entries(data, scale(30, 120))
    backup = tmp_path / "backup"
    done = run_cli("backup", backup, "--data", data, "--json")
    assert done.returncode == 0, done.stderr
    size = json.loads(done.stdout)["size"]
    db = data / "benchproof.db"
    if cut == "the -wal to half":
        _entries(data, scale(10, 40), die=True)
        wal = data / "benchproof.db-wal"
        assert wal.stat().st_size > 0
        os.truncate(wal, wal.stat().st_size // 2)
    else:
        length = db.stat().st_size // 2 + (100 if "100" in cut else 0)
        os.truncate(db, length)
    lines = _refused_everywhere(data)
    assert "cannot be read" in lines[0] or "restore" in lines[0], lines[0]  # verify, exit 1
    assert all("restore" in line.lower() for line in lines[1:]), lines
    _restore(backup, data)
    verify_ok(data)
    with served(data) as url:
        assert size_of(url) == size
        assert httpx.get(f"{url}/v1/runs/{SEED_RUN}", timeout=30).status_code == 200
    record_attack(f"truncated database ({cut}): verify, runs list, serve", lines[-1][:90], ok=True)
    record_rounds(f"faults: truncated database ({cut}), restored", rounds=1, survived=1)
