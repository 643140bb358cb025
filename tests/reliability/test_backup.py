"""``benchproof backup`` while a real server takes attestations and reports (issue 18, part 6):
the copy is consistent (it verifies, replays, its checkpoint covers it, its root is the
origin's root at its size, and its views are the origin's as of that size) even when the
server's commits land between the steps of the copy; it is written atomically, private, never
over an existing folder; and it only reads its source, so it works from a read-only mount and
from a full disk. The mounts need root, as the fault tests."""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
import stat
import threading
import time
from pathlib import Path

import httpx

from events.merkle import verify_consistency
from events.stores.sqlite import SqliteLog
from service.app.backup import backup
from tests.reliability.conftest import open_site, prepare
from tests.reliability.report import record_attack, record_note, record_rounds, record_writes, scale
from tests.reliability.test_faults import (
    SEED_RUN,
    Writer,
    _entries,
    _free,
    _sh,
    fill,
    found_once,
    size_of,
    tmpfs,
)
from tests.servers import run_cli, served

PUBLIC = "http://benchproof.test"


def _views(url: str, size: int) -> dict[str, bytes]:
    """The JSON views a restore must answer alike, as of ``size``."""
    paths = (
        f"/v1/runs?asOf={size}",
        f"/v1/runs/{SEED_RUN}?asOf={size}",
        f"/v1/attestations?subject={SEED_RUN}&asOf={size}",
        f"/v1/log/checkpoint?asOf={size}",
        f"/v1/runs/{SEED_RUN}/history?asOf={size}",
    )
    with httpx.Client(base_url=url, timeout=60) as client:
        out = {}
        for path in paths:
            r = client.get(path)
            assert r.status_code == 200, (path, r.text)
            out[path] = r.content
        return out


def _first_difference(a: bytes, b: bytes) -> str:
    at = next(
        (i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b))
    )
    return f"at byte {at}: {a[max(0, at - 150) : at + 80]!r} != {b[max(0, at - 150) : at + 80]!r}"


def _checkpoint(url: str, as_of: int | None = None) -> tuple[int, bytes]:
    """The size and root of the origin's checkpoint note (the latest, or the one at ``as_of``)."""
    query = "" if as_of is None else f"?asOf={as_of}"
    r = httpx.get(f"{url}/v1/log/checkpoint{query}", timeout=30)
    assert r.status_code == 200, r.text
    lines = r.text.split("\n")
    return int(lines[1]), base64.b64decode(lines[2])


def _is_the_origins_tree(url: str, size: int, root_hex: str) -> None:
    """The copy's root is the origin's at the copy's size: its checkpoint signed at that size
    says so, and a consistency proof from the copy's root to the origin's latest holds."""
    signed_size, signed_root = _checkpoint(url, size)
    assert signed_size == size, f"the origin signed no checkpoint at {size} (next: {signed_size})"
    assert signed_root.hex() == root_hex, (signed_root.hex(), root_hex)
    latest, latest_root = _checkpoint(url)
    if latest > size:
        r = httpx.get(
            f"{url}/v1/log/proof/consistency?old={size}&new={latest}", timeout=30
        )  # fmt: skip
        assert r.status_code == 200, r.text
        hashes = [base64.b64decode(h) for h in r.json()["hashes"]]
        verify_consistency(size, latest, bytes.fromhex(root_hex), latest_root, hashes)


STEP = 8  # pages per step of a slowed copy


class _Pace:
    """Heard by a copy: its page count (``expect``), and each step (the call): pauses, and
    reads the origin's size at the first step and then every tenth (``sizes``). More steps
    than the pages make is a copy that restarted (a commit entered its snapshot): refused at
    once, or a copy that restarts at every commit would never end."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.steps = 0
        self.pages = 0
        self.sizes: list[int] = []

    def expect(self, pages: int) -> None:
        self.pages = pages

    def __call__(self) -> None:
        self.steps += 1
        if self.steps > -(-self.pages // STEP):
            raise AssertionError(f"step {self.steps} of a {self.pages}-page copy: it restarted")
        if self.steps % 10 == 1:
            self.sizes.append(size_of(self.url))
        else:
            time.sleep(0.003)


def _verifies_and_replays(copy: Path, size: int, root_hex: str) -> None:
    verified = run_cli("verify", "--data", copy)
    assert verified.returncode == 0, verified.stderr
    assert f"root {root_hex}" in verified.stdout and f"{size} entries" in verified.stdout
    replayed = run_cli("replay", "--data", copy)
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr


def test_a_backup_taken_during_writes_verifies_replays_and_answers_alike(tmp_path: Path) -> None:
    # The command line's copy (full size only), and copies slowed step by step in-process.
    ways = scale(["slowed"], ["command line", "slowed", "slowed"])
    rounds = survived = 0
    data = tmp_path / "data"
    token = prepare(data)
    (data / ".reliability-token").write_text(token)
    # A database of some MiB before the server starts, so that a copy takes many steps.
    _entries(data, scale(300, 1000))
    steps_seen: list[int] = []
    grew: list[int] = []
    with open_site(data, "--public-url", PUBLIC) as site:
        writers = [Writer(site) for _ in range(scale(2, 3))]
        stop = threading.Event()
        errors: list[str] = []

        def keep_writing(writer: Writer) -> None:
            kinds = ("attestation", "report", "attestation", "ingest")
            i = 0
            while not stop.is_set():
                r = writer.write(kinds[i % len(kinds)], pad=200)
                if r.status_code >= 300:
                    errors.append(f"{r.status_code} {r.text[:200]}")
                i += 1

        threads = [threading.Thread(target=keep_writing, args=(w,)) for w in writers]
        for t in threads:
            t.start()
        try:
            for n, way in enumerate(ways):
                rounds += 1
                time.sleep(scale(0.5, 1.0))  # writes under way
                dest = tmp_path / f"backup-{n}"
                if way == "command line":
                    done = run_cli("backup", dest, "--data", site.data, "--json")
                    assert done.returncode == 0, done.stderr
                    result = json.loads(done.stdout)
                    assert result["path"] == str(dest) and result["keys"] is True
                    size, root = result["size"], result["root"]
                else:
                    # A few pages per step, a pause between steps, and a look at the origin's
                    # size now and then: the server's commits land between the steps, and the
                    # copy must see none of them.
                    pace = _Pace(site.url)
                    copied = backup(site.data, dest, step=STEP, between=pace, expect=pace.expect)
                    size, root = copied.size, copied.root
                    steps_seen.append(pace.steps + 1)  # the last step calls no one
                    assert pace.steps >= 50, f"only {pace.steps + 1} steps: the database is small"
                    assert size <= pace.sizes[0], (size, pace.sizes)
                    assert pace.sizes[-1] > pace.sizes[0], "no commit landed during the copy"
                    grew.append(pace.sizes[-1] - size)
                # Private: the folder 0700, its secrets 0600.
                assert stat.S_IMODE(dest.stat().st_mode) == 0o700
                for secret in (dest / "keys" / "index.key", dest / "keys" / "log.key"):
                    assert stat.S_IMODE(secret.stat().st_mode) == 0o600
                assert not list(tmp_path.glob(f".backup-{n}.backup-*"))  # no temporary left
                _is_the_origins_tree(site.url, size, root)
                _verifies_and_replays(dest, size, root)
                origin_views = _views(site.url, size)
                with served(dest, "--public-url", PUBLIC) as url:
                    copy_views = _views(url, size)
                for path, body in origin_views.items():
                    assert copy_views[path] == body, (
                        path,
                        _first_difference(body, copy_views[path]),
                    )
                survived += 1
        finally:
            stop.set()
            for t in threads:
                t.join()
        assert not errors, errors[:3]
        acked = [tag for w in writers for tag in w.acked]
        attempted = sum(w.attempted for w in writers)
        found = found_once(site.url, acked)
        for w in writers:
            w.close()
        # A DEST that exists is refused in one line, and left as it was.
        taken = tmp_path / "backup-0"
        before = sorted(p.name for p in taken.iterdir())
        again = run_cli("backup", taken, "--data", site.data)
        lines = again.stderr.strip().splitlines()
        refused = again.returncode == 2 and len(lines) == 1 and "exists" in lines[0]
        assert refused, again.stderr
        assert sorted(p.name for p in taken.iterdir()) == before
    record_writes(
        "backup: writes during the copies", attempted=attempted, acknowledged=len(acked),
        found=found,
    )  # fmt: skip
    assert found == len(acked)
    record_rounds("backup: online copies verified, replayed, root and views the origin's",
                  rounds=rounds, survived=survived)  # fmt: skip
    record_note(
        "backup",
        f"slowed copies: {', '.join(map(str, steps_seen))} steps of {STEP} pages; the origin grew by "
        f"{', '.join(map(str, grew))} entries while they were taken",
    )
    line = lines[0].removeprefix("benchproof: ").replace(str(taken), "DEST")
    record_attack("backup over an existing DEST", f"exit 2: {line[:70]}", ok=refused)


def _digests(data: Path) -> dict[str, str]:
    """What the files of ``data`` hold: not the -shm (a reader's marks) nor an empty file (a
    reader that found no -wal may leave an empty one: SQLite's, not the log)."""
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(data.iterdir())
        if p.is_file() and not p.name.endswith("-shm") and p.stat().st_size
    }


def _size(data: Path, probe: Path) -> int:
    """The size of the log in ``data``, read from a copy of its database and WAL in the new
    folder ``probe`` (a handle on ``data`` itself would leave its -shm behind)."""
    probe.mkdir()
    for name in ("benchproof.db", "benchproof.db-wal"):
        if (data / name).exists():
            shutil.copy2(data / name, probe / name)
    log = SqliteLog.open_readonly(probe / "benchproof.db")
    try:
        return log.refresh()
    finally:
        log.close()


def _copied(data: Path, dest: Path) -> tuple[int, str]:
    """``benchproof backup DEST --json`` of ``data``: the copy's size and root."""
    done = run_cli("backup", dest, "--data", data, "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    return int(result["size"]), str(result["root"])


def test_a_backup_only_reads_its_source_read_only_mount_and_full_disk(tmp_path: Path) -> None:
    """One tmpfs, four sources a writer's handle could not open, each copy verified and
    replayed and the source left as it was: remounted read-only after a clean close (no WAL,
    no -shm: the file as it stands) and after a writer died with its last commits in the WAL
    (read through it); then full, under a running server, and once the server has stopped
    (no -shm, and none can be made)."""
    rounds: dict[str, bool] = {}
    with tmpfs(tmp_path / "volume", "24m") as volume:
        data = volume / "data"
        (data / ".reliability-token").parent.mkdir()
        (data / ".reliability-token").write_text(prepare(data))
        wal, shm = data / "benchproof.db-wal", data / "benchproof.db-shm"
        for n, (count, died) in enumerate(((scale(20, 60), False), (scale(10, 40), True))):
            what = "read-only mount, " + ("WAL frames left" if died else "closed cleanly")
            rounds[what] = False
            _entries(data, count, die=died)
            if died:  # the last commits in the WAL, its -shm left behind
                assert wal.stat().st_size > 0 and shm.exists()
            else:  # closed cleanly: no -wal, no -shm, and none can be made on the mount
                assert not wal.exists() and not shm.exists()
            size = _size(data, tmp_path / f"probe-{n}")
            before = _digests(data)
            _sh("mount", "-o", "remount,ro", volume)
            try:
                copied = _copied(data, tmp_path / f"copy-ro-{n}")
            finally:
                _sh("mount", "-o", "remount,rw", volume)
            assert copied[0] == size, (copied, size)
            assert _digests(data) == before  # the source untouched
            _verifies_and_replays(tmp_path / f"copy-ro-{n}", *copied)
            rounds[what] = True
        with open_site(data) as site:
            writer = Writer(site)
            try:
                for i in range(scale(6, 30)):
                    r = writer.write(("report", "attestation", "ingest")[i % 3], pad=500)
                    assert r.status_code in (200, 201), r.text
                rounds["full disk, server running"] = False
                filler = fill(volume)
                try:
                    size, root = _copied(data, tmp_path / "copy-full-running")
                    assert size == size_of(site.url)  # every acknowledged write is in the copy
                    _is_the_origins_tree(site.url, size, root)
                finally:
                    _free(filler)
                _verifies_and_replays(tmp_path / "copy-full-running", size, root)
                rounds["full disk, server running"] = True
                found = found_once(site.url, writer.acked)
            finally:
                writer.close()
        # The server closed every handle when it stopped (its readers' too), the last of them
        # removing the WAL and its -shm as SQLite does on a clean close: none is there, and on
        # the full disk none can be made.
        assert not wal.exists() and not shm.exists()
        rounds["full disk, server stopped"] = False
        filler = fill(volume)
        try:
            before = _digests(data)
            stopped = _copied(data, tmp_path / "copy-full-stopped")
            assert _digests(data) == before  # the source untouched
        finally:
            _free(filler)
        assert stopped == (size, root), (stopped, size, root)
        _verifies_and_replays(tmp_path / "copy-full-stopped", size, root)
        rounds["full disk, server stopped"] = True
    record_writes(
        "backup: writes before the disk filled", attempted=writer.attempted,
        acknowledged=len(writer.acked), found=found,
    )  # fmt: skip
    assert found == len(writer.acked)
    record_rounds(
        f"backup: from a read-only mount and a full disk ({'; '.join(rounds)})",
        rounds=len(rounds), survived=sum(rounds.values()),
    )  # fmt: skip
    assert all(rounds.values()), rounds
